// The default unwinder: libdw's CFI unwinder driven over the copied registers and stack.
//
// Why libdw: it reads .eh_frame and .debug_frame, falls back to frame pointers on x86-64,
// and the same Dwfl serves symbolization; eu-stack shows it is fast for live and core.
#include <elfutils/libdwfl.h>

#include <cstring>
#include <optional>

#include <fmt/format.h>

#include "unwind/dwfl_session.h"
#include "unwind/unwinder.h"
#include "unwind/unwinders.h"

namespace hangscan {

namespace {

constexpr unsigned kDwarfSp = 7;  // rsp in the DWARF register numbering of x86-64

class LibdwUnwinder : public Unwinder {
 public:
  explicit LibdwUnwinder(DwflSession& session) : session_(session) {}

  Result<UnwindResult> unwind(const Registers& regs, const StackCopy& stack, int tid) override {
    if (!attached_) {
      int pid = session_.source().pid();
      if (!dwfl_attach_state(session_.dwfl(), nullptr, pid, &kCallbacks, this)) {
        return Error(Errc::internal,
                     fmt::format("libdw: cannot attach state: {}", dwfl_errmsg(-1)));
      }
      attached_ = true;
    }
    regs_ = &regs;
    stack_ = &stack;
    tid_ = tid;
    UnwindResult out;
    frames_ = &out.frames;
    unreadable_.reset();
    int rc = dwfl_getthread_frames(session_.dwfl(), tid, &LibdwUnwinder::on_frame, this);
    if (rc == 0 && unreadable_ && !out.frames.empty()) {
      // libdw ends a walk quietly when the next return address cannot be read: that is a stack
      // cut short (a copy that ends too soon, memory gone), not its outermost frame.
      out.stop_reason = fmt::format("cannot read the stack at 0x{:x}", *unreadable_);
    } else if (rc != 0 && out.frames.size() < kMaxUnwindFrames) {
      const char* msg = dwfl_errmsg(-1);
      // Reaching a frame without CFI at the very bottom of the stack is the normal end.
      if (out.frames.empty()) {
        return Error(Errc::bad_data, fmt::format("unwind failed: {}", msg ? msg : "unknown"));
      }
      out.stop_reason = msg != nullptr ? msg : "";
    } else if (out.frames.size() >= kMaxUnwindFrames) {
      out.stop_reason = fmt::format("stopped after {} frames", kMaxUnwindFrames);
    }
    frames_ = nullptr;
    return out;
  }

 private:
  static pid_t next_thread(Dwfl*, void* arg, void** thread_argp) {
    auto* self = static_cast<LibdwUnwinder*>(arg);
    if (*thread_argp != nullptr) return 0;
    *thread_argp = self;
    return self->tid_;
  }

  static bool get_thread(Dwfl*, pid_t tid, void* arg, void** thread_argp) {
    auto* self = static_cast<LibdwUnwinder*>(arg);
    if (tid != self->tid_) return false;
    *thread_argp = self;
    return true;
  }

  static bool memory_read(Dwfl*, Dwarf_Addr addr, Dwarf_Word* result, void* arg) {
    auto* self = static_cast<LibdwUnwinder*>(arg);
    const StackCopy& st = *self->stack_;
    if (st.contains(addr, sizeof(Dwarf_Word))) {
      std::memcpy(result, st.bytes.data() + (addr - st.start), sizeof(Dwarf_Word));
      self->unreadable_.reset();
      return true;
    }
    if (!st.sealed && self->session_.source().memory().read_obj(addr, *result)) {
      self->unreadable_.reset();
      return true;
    }
    self->unreadable_ = addr;  // kept only when it is the walk's last read
    return false;
  }

  static bool set_initial_registers(Dwfl_Thread* thread, void* thread_arg) {
    auto* self = static_cast<LibdwUnwinder*>(thread_arg);
    const user_regs_struct& r = self->regs_->raw;
    // DWARF register order on x86-64.
    Dwarf_Word dw[17] = {r.rax, r.rdx, r.rcx, r.rbx, r.rsi, r.rdi, r.rbp, r.rsp, r.r8,
                         r.r9,  r.r10, r.r11, r.r12, r.r13, r.r14, r.r15, r.rip};
    if (!dwfl_thread_state_registers(thread, 0, 17, dw)) return false;
    dwfl_thread_state_register_pc(thread, r.rip);
    return true;
  }

  static int on_frame(Dwfl_Frame* state, void* arg) {
    auto* self = static_cast<LibdwUnwinder*>(arg);
    Dwarf_Addr pc = 0;
    bool activation = false;
    if (!dwfl_frame_pc(state, &pc, &activation)) return DWARF_CB_ABORT;
    if (pc == 0) return DWARF_CB_ABORT;
    Dwarf_Word sp = 0;
    if (dwfl_frame_reg(state, kDwarfSp, &sp) != 0) sp = 0;
    self->frames_->push_back(RawFrame{pc, activation, sp});
    return self->frames_->size() >= kMaxUnwindFrames ? DWARF_CB_ABORT : DWARF_CB_OK;
  }

  static constexpr Dwfl_Thread_Callbacks kCallbacks = {&LibdwUnwinder::next_thread,
                                                       &LibdwUnwinder::get_thread,
                                                       &LibdwUnwinder::memory_read,
                                                       &LibdwUnwinder::set_initial_registers,
                                                       nullptr,
                                                       nullptr};

  DwflSession& session_;
  bool attached_ = false;
  const Registers* regs_ = nullptr;
  const StackCopy* stack_ = nullptr;
  int tid_ = 0;
  std::vector<RawFrame>* frames_ = nullptr;
  std::optional<Dwarf_Addr> unreadable_;  // the address of the last read, when it failed
};

}  // namespace

std::unique_ptr<Unwinder> make_libdw_unwinder(DwflSession& session) {
  return std::make_unique<LibdwUnwinder>(session);
}

Result<std::unique_ptr<Unwinder>> make_unwinder(UnwinderKind kind, ModuleSource& source,
                                                DwflSession& session) {
  if (kind == UnwinderKind::libunwind) return make_libunwind_unwinder(source);
  return make_libdw_unwinder(session);
}

}  // namespace hangscan
