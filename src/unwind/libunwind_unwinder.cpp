// The second unwinder: libunwind's DWARF unwinder over the copied registers and stack.
//
// Why a second backend: an independent opinion when a stack looks wrong, and a fallback
// where libdw fails. It is fed through the same ModuleSource as libdw: unwind tables are
// located from each module's PT_GNU_EH_FRAME segment and read through the source's memory (which
// for cores falls back to the files on disk), so it works for live processes and cores alike.
#include <gelf.h>
#include <libunwind.h>

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <map>

#include <fmt/format.h>

#include "proc/target_file.h"
#include "unwind/unwinder.h"
#include "unwind/unwinders.h"

// libunwind's own name for it (not in its headers).
// NOLINTNEXTLINE(bugprone-reserved-identifier,readability-identifier-naming)
extern "C" int _Ux86_64_dwarf_search_unwind_table(unw_addr_space_t as, unw_word_t ip,
                                                  unw_dyn_info_t* di, unw_proc_info_t* pi,
                                                  int need_unwind_info, void* arg);

namespace hangscan {

namespace {

// Where a module's .eh_frame_hdr lies in the target, and the text range it covers.
struct EhFrameHdr {
  bool valid = false;
  std::uint64_t hdr_addr = 0;
  std::uint64_t low = 0;
  std::uint64_t high = 0;
};

class LibunwindUnwinder : public Unwinder {
 public:
  explicit LibunwindUnwinder(ModuleSource& source) : source_(source) {
    unw_accessors_t acc{};
    acc.find_proc_info = &LibunwindUnwinder::find_proc_info;
    acc.put_unwind_info = &LibunwindUnwinder::put_unwind_info;
    acc.get_dyn_info_list_addr = &LibunwindUnwinder::get_dyn_info_list_addr;
    acc.access_mem = &LibunwindUnwinder::access_mem;
    acc.access_reg = &LibunwindUnwinder::access_reg;
    acc.access_fpreg = &LibunwindUnwinder::access_fpreg;
    acc.resume = &LibunwindUnwinder::resume;
    acc.get_proc_name = &LibunwindUnwinder::get_proc_name;
    as_ = unw_create_addr_space(&acc, 0);
    if (as_ != nullptr) unw_set_caching_policy(as_, UNW_CACHE_GLOBAL);
  }
  ~LibunwindUnwinder() override {
    if (as_ != nullptr) unw_destroy_addr_space(as_);
  }
  LibunwindUnwinder(const LibunwindUnwinder&) = delete;
  LibunwindUnwinder& operator=(const LibunwindUnwinder&) = delete;

  Result<UnwindResult> unwind(const Registers& regs, const StackCopy& stack, int /*tid*/) override {
    if (as_ == nullptr) return Error(Errc::internal, "libunwind: cannot create address space");
    regs_ = &regs;
    stack_ = &stack;
    unw_cursor_t cursor;
    int rc = unw_init_remote(&cursor, as_, this);
    if (rc < 0) return Error(Errc::bad_data, fmt::format("libunwind: init failed ({})", rc));
    UnwindResult out;
    for (;;) {
      unw_word_t ip = 0;
      if (unw_get_reg(&cursor, UNW_REG_IP, &ip) < 0 || ip == 0) break;
      bool exact = out.frames.empty() || unw_is_signal_frame(&cursor) > 0;
      unw_word_t sp = 0;
      if (unw_get_reg(&cursor, UNW_REG_SP, &sp) < 0) sp = 0;
      out.frames.push_back(RawFrame{ip, exact, sp});
      if (out.frames.size() >= kMaxUnwindFrames) {
        out.stop_reason = fmt::format("stopped after {} frames", kMaxUnwindFrames);
        break;
      }
      int step = unw_step(&cursor);
      if (step == 0) break;
      if (step < 0) {
        out.stop_reason = fmt::format("libunwind: step failed ({})", step);
        break;
      }
    }
    if (out.frames.empty()) return Error(Errc::bad_data, "libunwind: no frame");
    return out;
  }

 private:
  static LibunwindUnwinder* self(void* arg) { return static_cast<LibunwindUnwinder*>(arg); }

  const EhFrameHdr& eh_frame_hdr_for(std::uint64_t ip) {
    static const EhFrameHdr kNone{};
    const Mapping* text = nullptr;
    for (const auto& m : source_.mappings()) {
      if (m.contains(ip)) {
        text = &m;
        break;
      }
    }
    if (text == nullptr || !text->is_file()) return kNone;
    auto it = hdrs_.find(text->path);
    if (it != hdrs_.end()) return it->second;
    EhFrameHdr hdr = locate_hdr(*text);
    return hdrs_.emplace(text->path, hdr).first->second;
  }

  // Reads the module's program headers from its file to find PT_GNU_EH_FRAME; the load bias
  // comes from the mapping of file offset 0.
  EhFrameHdr locate_hdr(const Mapping& text) {
    EhFrameHdr out;
    const Mapping* first = nullptr;
    std::uint64_t high = 0;
    for (const auto& m : source_.mappings()) {
      if (m.path != text.path) continue;
      if (m.offset == 0 && (first == nullptr || m.start < first->start)) first = &m;
      high = std::max(high, m.end);
    }
    if (first == nullptr) return out;
    auto local = source_.local_path(*first);
    if (!local) return out;
    int fd = open_regular_file(*local);
    if (fd < 0) return out;
    elf_version(EV_CURRENT);
    Elf* elf = elf_begin(fd, ELF_C_READ_MMAP, nullptr);
    if (elf != nullptr) {
      GElf_Ehdr ehdr;
      std::size_t phnum = 0;
      if (gelf_getehdr(elf, &ehdr) != nullptr && elf_getphdrnum(elf, &phnum) == 0) {
        std::uint64_t first_vaddr = UINT64_MAX;
        std::uint64_t eh_vaddr = 0;
        bool have_eh = false;
        for (std::size_t i = 0; i < phnum; ++i) {
          GElf_Phdr ph;
          if (gelf_getphdr(elf, static_cast<int>(i), &ph) == nullptr) continue;
          if (ph.p_type == PT_LOAD && first_vaddr == UINT64_MAX) {
            first_vaddr = ph.p_vaddr & ~(ph.p_align > 0 ? ph.p_align - 1 : 0);
          }
          if (ph.p_type == PT_GNU_EH_FRAME) {
            eh_vaddr = ph.p_vaddr;
            have_eh = true;
          }
        }
        if (have_eh && first_vaddr != UINT64_MAX) {
          std::uint64_t bias = ehdr.e_type == ET_EXEC ? 0 : first->start - first_vaddr;
          out.valid = true;
          out.hdr_addr = eh_vaddr + bias;
          out.low = first->start;
          out.high = high;
        }
      }
      elf_end(elf);
    }
    ::close(fd);
    return out;
  }

  static int find_proc_info(unw_addr_space_t as, unw_word_t ip, unw_proc_info_t* pi,
                            int need_unwind_info, void* arg) {
    auto* me = self(arg);
    const EhFrameHdr& hdr = me->eh_frame_hdr_for(ip);
    if (!hdr.valid) return -UNW_ENOINFO;
    // .eh_frame_hdr: version, eh_frame_ptr_enc, fde_count_enc, table_enc, then the values.
    std::uint8_t head[4];
    if (!me->source_.memory().read_exact(hdr.hdr_addr, head, sizeof(head))) return -UNW_ENOINFO;
    // The common encodings: eh_frame_ptr pcrel|sdata4, fde_count udata4, table datarel|sdata4.
    if (head[0] != 1 || head[2] != 0x03 || head[3] != 0x3b) return -UNW_ENOINFO;
    std::uint32_t fde_count = 0;
    if (!me->source_.memory().read_obj(hdr.hdr_addr + 8, fde_count)) return -UNW_ENOINFO;
    unw_dyn_info_t di{};
    di.format = UNW_INFO_FORMAT_REMOTE_TABLE;
    di.start_ip = hdr.low;
    di.end_ip = hdr.high;
    di.u.rti.segbase = hdr.hdr_addr;
    di.u.rti.table_data = hdr.hdr_addr + 12;
    di.u.rti.table_len = (fde_count * 8) / sizeof(unw_word_t);
    return _Ux86_64_dwarf_search_unwind_table(as, ip, &di, pi, need_unwind_info, arg);
  }

  static void put_unwind_info(unw_addr_space_t, unw_proc_info_t* pi, void*) {
    if (pi->unwind_info != nullptr) {
      std::free(pi->unwind_info);
      pi->unwind_info = nullptr;
    }
  }

  static int get_dyn_info_list_addr(unw_addr_space_t, unw_word_t*, void*) { return -UNW_ENOINFO; }

  static int access_mem(unw_addr_space_t, unw_word_t addr, unw_word_t* val, int write, void* arg) {
    if (write != 0) return -UNW_EINVAL;
    auto* me = self(arg);
    const StackCopy& st = *me->stack_;
    if (st.contains(addr, sizeof(unw_word_t))) {
      std::memcpy(val, st.bytes.data() + (addr - st.start), sizeof(unw_word_t));
      return 0;
    }
    return !st.sealed && me->source_.memory().read_obj(addr, *val) ? 0 : -UNW_EINVAL;
  }

  static int access_reg(unw_addr_space_t, unw_regnum_t reg, unw_word_t* val, int write, void* arg) {
    if (write != 0) return -UNW_EREADONLYREG;
    const user_regs_struct& r = self(arg)->regs_->raw;
    switch (reg) {
      case UNW_X86_64_RAX:
        *val = r.rax;
        break;
      case UNW_X86_64_RDX:
        *val = r.rdx;
        break;
      case UNW_X86_64_RCX:
        *val = r.rcx;
        break;
      case UNW_X86_64_RBX:
        *val = r.rbx;
        break;
      case UNW_X86_64_RSI:
        *val = r.rsi;
        break;
      case UNW_X86_64_RDI:
        *val = r.rdi;
        break;
      case UNW_X86_64_RBP:
        *val = r.rbp;
        break;
      case UNW_X86_64_RSP:
        *val = r.rsp;
        break;
      case UNW_X86_64_R8:
        *val = r.r8;
        break;
      case UNW_X86_64_R9:
        *val = r.r9;
        break;
      case UNW_X86_64_R10:
        *val = r.r10;
        break;
      case UNW_X86_64_R11:
        *val = r.r11;
        break;
      case UNW_X86_64_R12:
        *val = r.r12;
        break;
      case UNW_X86_64_R13:
        *val = r.r13;
        break;
      case UNW_X86_64_R14:
        *val = r.r14;
        break;
      case UNW_X86_64_R15:
        *val = r.r15;
        break;
      case UNW_X86_64_RIP:
        *val = r.rip;
        break;
      default:
        return -UNW_EBADREG;
    }
    return 0;
  }

  static int access_fpreg(unw_addr_space_t, unw_regnum_t, unw_fpreg_t*, int, void*) {
    return -UNW_EBADREG;
  }
  static int resume(unw_addr_space_t, unw_cursor_t*, void*) { return -UNW_EINVAL; }
  static int get_proc_name(unw_addr_space_t, unw_word_t, char*, size_t, unw_word_t*, void*) {
    return -UNW_ENOINFO;  // names come from the shared libdw symbolizer
  }

  ModuleSource& source_;
  unw_addr_space_t as_ = nullptr;
  const Registers* regs_ = nullptr;
  const StackCopy* stack_ = nullptr;
  std::map<std::string, EhFrameHdr> hdrs_;
};

}  // namespace

Result<std::unique_ptr<Unwinder>> make_libunwind_unwinder(ModuleSource& source) {
  return std::unique_ptr<Unwinder>(std::make_unique<LibunwindUnwinder>(source));
}

}  // namespace hangscan
