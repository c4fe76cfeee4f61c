#include "watch/records.h"

#include <string.h>

#include <cstring>

#include <fmt/format.h>

#include "capture/bpf_python.h"
#include "capture/bpf_snapshot.h"
#include "watch_events.h"

namespace hangscan {

namespace {

std::string comm_of(const char (&c)[HS_COMM_LEN]) {
  return std::string(c, strnlen(c, HS_COMM_LEN));
}

void header_into(const hs_header& h, int& pid, int& tid, std::int64_t& ts, std::string& comm) {
  pid = static_cast<int>(h.pid);
  tid = static_cast<int>(h.tid);
  ts = static_cast<std::int64_t>(h.ts_ns);
  comm = comm_of(h.comm);
}

// struct pt_regs (the kernel's order) to user_regs_struct (ptrace's).
Registers registers_of(const hs_user_stack& u) { return registers_of_pt_regs(u.regs, u.fs_base); }

SampledStack copy_of(const hs_user_stack& u, bool with_stack) {
  SampledStack c;
  c.regs = registers_of(u);
  c.stack.sealed = true;  // the thread ran on after the kernel copied its stack
  if (with_stack) {
    std::size_t n = std::min<std::size_t>(u.stack_len, sizeof(u.stack));
    c.stack.start = u.regs.sp;
    c.stack.bytes.assign(u.stack, u.stack + n);
  }
  std::size_t k = std::min<std::size_t>(u.kstack_len / sizeof(std::uint64_t), HS_KSTACK_DEPTH);
  c.kernel.assign(u.kstack, u.kstack + k);
  return c;
}

// Everything of a wait but its user stack.
void wait_into(const hs_wait& e, WaitRecord& w) {
  header_into(e.h, w.pid, w.tid, w.end_ns, w.comm);
  w.syscall_nr = static_cast<long>(e.syscall_nr);
  w.arg0 = e.arg0;
  w.seq = e.seq;
  w.duration_ns = e.duration_ns;
  w.waker_pid = static_cast<int>(e.waker_pid);
  w.waker_tid = static_cast<int>(e.waker_tid);
  w.waker_comm = comm_of(e.waker_comm);
  w.copy_follows = e.copy_follows != 0;
  std::size_t k = std::min<std::size_t>(e.kstack_len / sizeof(std::uint64_t), HS_KSTACK_DEPTH);
  w.copy.kernel.assign(e.kstack, e.kstack + k);
}

template <typename T>
bool view(std::span<const std::uint8_t> data, T& out) {
  if (data.size() < sizeof(T)) return false;
  std::memcpy(&out, data.data(), sizeof(T));
  return true;
}

}  // namespace

SampledStack sampled_stack_of(const hs_user_stack& u) { return copy_of(u, true); }

bool decode_record(std::span<const std::uint8_t> data, Recording& out) {
  hs_header h{};
  if (!view(data, h)) return false;
  switch (h.kind) {
    case HS_EV_SAMPLE:
    case HS_EV_SAMPLE_PY: {
      bool py = h.kind == HS_EV_SAMPLE_PY;
      if (data.size() < (py ? sizeof(hs_sample_py) : sizeof(hs_sample))) return false;
      const auto* e = reinterpret_cast<const hs_sample*>(data.data());
      SampleRecord& s = out.samples.emplace_back();
      header_into(e->h, s.pid, s.tid, s.ts_ns, s.comm);
      s.in_kernel = e->in_kernel != 0;
      s.syscall_nr = e->syscall_nr;
      s.copy = copy_of(e->u, true);
      if (py) s.copy.python = python_of(reinterpret_cast<const hs_sample_py*>(data.data())->py);
      return true;
    }
    case HS_EV_WAIT: {
      hs_wait e{};
      if (!view(data, e)) return false;
      wait_into(e, out.waits.emplace_back());
      return true;
    }
    case HS_EV_WAIT_STACK: {
      if (data.size() < sizeof(hs_wait_stack)) return false;
      const auto* e = reinterpret_cast<const hs_wait_stack*>(data.data());
      WaitRecord& w = out.waits.emplace_back();
      w.copy = copy_of(e->u, true);
      w.has_user_stack = true;
      wait_into(e->w, w);  // the kernel stack: the wait's, where it slept
      return true;
    }
    case HS_EV_WAIT_COPY:
    case HS_EV_WAIT_COPY_PY: {
      bool py = h.kind == HS_EV_WAIT_COPY_PY;
      if (data.size() < (py ? sizeof(hs_wait_copy_py) : sizeof(hs_wait_copy))) return false;
      const auto* e = reinterpret_cast<const hs_wait_copy*>(data.data());
      WaitCopyRecord& c = out.wait_copies.emplace_back();
      c.pid = static_cast<int>(e->h.pid);
      c.tid = static_cast<int>(e->h.tid);
      c.first_seq = e->first_seq;
      c.last_seq = e->last_seq;
      c.stale = e->stale != 0;
      if (c.stale) return true;
      c.copy = copy_of(e->u, true);
      if (py) c.copy.python = python_of(reinterpret_cast<const hs_wait_copy_py*>(data.data())->py);
      return true;
    }
    case HS_EV_EXIT: {
      hs_exit e{};
      if (!view(data, e)) return false;
      EventRecord& r = out.events.emplace_back();
      r.kind = EventRecord::Kind::exit;
      header_into(e.h, r.pid, r.tid, r.ts_ns, r.comm);
      r.exit_code = static_cast<int>(e.exit_code);
      return true;
    }
    case HS_EV_SIGNAL: {
      hs_signal e{};
      if (!view(data, e)) return false;
      EventRecord& r = out.events.emplace_back();
      r.kind = EventRecord::Kind::signal;
      header_into(e.h, r.sender_pid, r.sender_tid, r.ts_ns, r.sender_comm);
      r.pid = static_cast<int>(e.target_pid);
      r.tid = static_cast<int>(e.target_tid);
      r.comm = comm_of(e.target_comm);
      r.signal = e.sig;
      r.si_code = e.code;
      r.result = e.result;
      return true;
    }
    case HS_EV_EXEC: {
      if (data.size() < sizeof(hs_exec)) return false;
      const auto* e = reinterpret_cast<const hs_exec*>(data.data());
      EventRecord& r = out.events.emplace_back();
      r.kind = EventRecord::Kind::exec;
      header_into(e->h, r.pid, r.tid, r.ts_ns, r.comm);
      r.path = std::string(e->filename, strnlen(e->filename, HS_PATH_LEN));
      return true;
    }
    case HS_EV_OOM: {
      hs_oom e{};
      if (!view(data, e)) return false;
      EventRecord& r = out.events.emplace_back();
      r.kind = EventRecord::Kind::oom;
      header_into(e.h, r.pid, r.tid, r.ts_ns, r.comm);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace hangscan
