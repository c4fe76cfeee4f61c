#include "watch/kernel_btf.h"

#ifdef HANGSCAN_HAVE_BPF

#include <bpf/btf.h>

#include <cstring>

namespace hangscan {

namespace {

const btf_type* resolved(const btf* b, std::uint32_t id) {
  int r = btf__resolve_type(b, id);  // through typedefs and modifiers
  return r < 0 ? nullptr : btf__type_by_id(b, static_cast<std::uint32_t>(r));
}

// The byte offset of member `name` in struct or union `t`, looking into its anonymous struct
// and union members too (pcpu_hot keeps preempt_count in an anonymous struct inside an
// anonymous union); -1: not there.
long member_offset(const btf* b, const btf_type* t, const char* name, int depth = 0) {
  if (t == nullptr || !(btf_is_struct(t) || btf_is_union(t)) || depth > 8) return -1;
  const btf_member* m = btf_members(t);
  for (int j = 0; j < btf_vlen(t); ++j, ++m) {
    const char* n = btf__name_by_offset(b, m->name_off);
    long here = static_cast<long>(btf_member_bit_offset(t, static_cast<std::uint32_t>(j)) / 8);
    if (n != nullptr && std::strcmp(n, name) == 0) return here;
    if (n == nullptr || *n == '\0') {
      long inner = member_offset(b, resolved(b, m->type), name, depth + 1);
      if (inner >= 0) return here + inner;
    }
  }
  return -1;
}

// The offset of a per-CPU variable in the kernel's per-CPU area (the `.data..percpu` section
// of its BTF), plus that of `member` inside it when given; -1: not there.
long percpu_offset(const btf* b, const char* var, const char* member = nullptr) {
  int sec = btf__find_by_name_kind(b, ".data..percpu", BTF_KIND_DATASEC);
  int id = btf__find_by_name_kind(b, var, BTF_KIND_VAR);
  if (sec <= 0 || id <= 0) return -1;
  const btf_type* ds = btf__type_by_id(b, static_cast<std::uint32_t>(sec));
  const btf_var_secinfo* vs = btf_var_secinfos(ds);
  for (int i = 0; i < btf_vlen(ds); ++i, ++vs) {
    if (static_cast<int>(vs->type) != id) continue;
    if (member == nullptr) return static_cast<long>(vs->offset);
    const btf_type* t = resolved(b, btf__type_by_id(b, static_cast<std::uint32_t>(id))->type);
    long in = member_offset(b, t, member);
    return in < 0 ? -1 : static_cast<long>(vs->offset) + in;
  }
  return -1;
}

}  // namespace

KernelBtf KernelBtf::running_kernel() { return KernelBtf(btf__load_vmlinux_btf()); }

KernelBtf::~KernelBtf() { btf__free(btf_); }

std::int64_t KernelBtf::preempt_count_from_rq() const {
  if (btf_ == nullptr) return 0;
  int se = btf__find_by_name_kind(btf_, "sched_entity", BTF_KIND_STRUCT);
  bool via_cfs_rq =
      se > 0 &&
      member_offset(btf_, btf__type_by_id(btf_, static_cast<std::uint32_t>(se)), "cfs_rq") >= 0;
  long rq = via_cfs_rq ? percpu_offset(btf_, "runqueues") : -1;
  long pc = percpu_offset(btf_, "__preempt_count");
  if (pc < 0) pc = percpu_offset(btf_, "pcpu_hot", "preempt_count");
  return rq < 0 || pc < 0 ? 0 : static_cast<std::int64_t>(pc) - rq;
}

bool KernelBtf::mark_victim_takes_task() const {
  if (btf_ == nullptr) return false;
  // typedef btf_trace_mark_victim: a pointer to a function of (void *ctx, <the arguments>).
  int id = btf__find_by_name_kind(btf_, "btf_trace_mark_victim", BTF_KIND_TYPEDEF);
  if (id <= 0) return false;
  const btf_type* t = btf__type_by_id(btf_, static_cast<std::uint32_t>(id));
  t = btf__type_by_id(btf_, t->type);
  if (t != nullptr && btf_is_ptr(t)) t = btf__type_by_id(btf_, t->type);
  if (t == nullptr || !btf_is_func_proto(t) || btf_vlen(t) < 2) return false;
  const btf_type* arg = btf__type_by_id(btf_, (btf_params(t) + 1)->type);
  return arg != nullptr && btf_is_ptr(arg);
}

bool KernelBtf::socket_tracepoints() const {
  return btf_ != nullptr &&
         btf__find_by_name_kind(btf_, "btf_trace_sock_send_length", BTF_KIND_TYPEDEF) > 0 &&
         btf__find_by_name_kind(btf_, "btf_trace_sock_recv_length", BTF_KIND_TYPEDEF) > 0;
}

bool KernelBtf::bpf_task_work() const {
  return btf_ != nullptr &&
         btf__find_by_name_kind(btf_, "bpf_task_work_schedule_resume_impl", BTF_KIND_FUNC) > 0;
}

}  // namespace hangscan

#else  // !HANGSCAN_HAVE_BPF: no libbpf, no recorder to configure

namespace hangscan {

KernelBtf KernelBtf::running_kernel() { return KernelBtf(nullptr); }
KernelBtf::~KernelBtf() = default;
std::int64_t KernelBtf::preempt_count_from_rq() const { return 0; }
bool KernelBtf::mark_victim_takes_task() const { return false; }
bool KernelBtf::socket_tracepoints() const { return false; }
bool KernelBtf::bpf_task_work() const { return false; }

}  // namespace hangscan

#endif
