// KernelBtf: what a kernel's BTF says about the layouts and tracepoints the recorder relies on.
//
// Why its own piece: these answers decide which recorder programs are loaded and what they may
// read (where the CPU's preempt count lies, whether the OOM tracepoint passes a task, whether
// the socket tracepoints exist). They are plain functions of the BTF, so the unit tests build
// BTF with the layouts of kernels this machine does not run (x86-64's `pcpu_hot` of Linux
// 6.2-6.14) and check them there. Built with libbpf only (HANGSCAN_HAVE_BPF).
#pragma once

#include <cstdint>

struct btf;  // libbpf's

namespace hangscan {

class KernelBtf {
 public:
  // The running kernel's BTF (/sys/kernel/btf/vmlinux); without it, every answer is "no".
  static KernelBtf running_kernel();
  // Takes `b` (libbpf's btf, may be null): it is freed with this object.
  explicit KernelBtf(btf* b) : btf_(b) {}
  KernelBtf(KernelBtf&& o) noexcept : btf_(o.btf_) { o.btf_ = nullptr; }
  KernelBtf& operator=(KernelBtf&&) = delete;
  KernelBtf(const KernelBtf&) = delete;
  ~KernelBtf();

  bool present() const { return btf_ != nullptr; }
  // How far the CPU's preempt count lies from its runqueue, in bytes (both per-CPU variables:
  // the same distance on every CPU). The count is `__preempt_count`, or the `preempt_count`
  // of x86-64's `pcpu_hot` (6.2-6.14, inside an anonymous union); the recorder reaches the
  // runqueue through a task's `se.cfs_rq` (group scheduling), so without that field, or
  // either variable, 0: not known (the recorder then keeps no wakers).
  std::int64_t preempt_count_from_rq() const;
  // oom:mark_victim passes the task since Linux 6.2 (an int pid before).
  bool mark_victim_takes_task() const;
  // The socket layer's sock_send_length and sock_recv_length tracepoints (Linux 6.3+).
  bool socket_tracepoints() const;
  // BPF programs can ask a task to run a callback on its way back to user space
  // (bpf_task_work_schedule_resume_impl, Linux 6.18): a thread copies its own stack there.
  bool bpf_task_work() const;

 private:
  btf* btf_ = nullptr;
};

}  // namespace hangscan
