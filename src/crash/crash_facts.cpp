#include "crash/crash_facts.h"

#include <cxxabi.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "target/symbol_lookup.h"

namespace hangscan {
namespace {

// libstdc++'s x86-64 exception layout (unwind-cxx.h): the __cxa_exception header is 80
// bytes of bookkeeping followed by the 32-byte _Unwind_Exception; the thrown object follows.
constexpr std::uint64_t kUnwindHeaderAt = 80;
constexpr std::uint64_t kHeaderSize = 112;
constexpr std::uint64_t kPrimaryClass = 0x474e5543432b2b00ULL;    // "GNUCC++\0", G first
constexpr std::uint64_t kDependentClass = 0x474e5543432b2b01ULL;  // "GNUCC++\x01"
constexpr std::uint64_t kStackScanBytes = 64 * 1024;
constexpr std::size_t kMaxWhat = 1024;

// Standard exceptions that keep their message as the first member after the vptr
// (a COW string: one pointer to the characters).
constexpr const char* kMessageTypes[] = {
    "St13runtime_error",    "St11logic_error",     "St12out_of_range",
    "St16invalid_argument", "St12length_error",    "St11range_error",
    "St14overflow_error",   "St15underflow_error", "St12domain_error",
};

bool is_mangled_name(const std::string& s) {
  return !s.empty() && s.size() < 512 && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

bool printable(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 0x20 && c < 0x7f) || c == '\n' || c == '\t' || (c & 0x80);
  });
}

std::string demangle_type(const std::string& mangled) {
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(
      abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : mangled;
}

std::optional<std::string> type_name(MemoryReader& mem, std::uint64_t type_info) {
  auto name_ptr = mem.read_u64(type_info + 8);
  if (!name_ptr) return std::nullopt;
  auto name = mem.read_cstring(*name_ptr, 512);
  if (!name) return std::nullopt;
  if (!name->empty() && (*name)[0] == '*') name->erase(0, 1);  // local-linkage marker
  if (!is_mangled_name(*name)) return std::nullopt;
  return name;
}

// Whether the type or one of its single-inheritance bases keeps a message after the vptr.
bool has_message_member(MemoryReader& mem, std::uint64_t type_info) {
  for (int depth = 0; depth < 8 && type_info != 0; ++depth) {
    auto name = type_name(mem, type_info);
    if (!name) return false;
    for (const char* t : kMessageTypes) {
      if (*name == t) return true;
    }
    auto base = mem.read_u64(type_info + 16);  // __si_class_type_info::__base_type
    if (!base) return false;
    type_info = *base;
  }
  return false;
}

std::optional<std::uint64_t> eh_globals_address(Target& target, std::uint64_t fs_base) {
  auto sym = find_symbol(target, "__cxa_get_globals");
  if (!sym) return std::nullopt;
  std::uint8_t code[64];
  MemoryReader& mem = target.memory();
  if (!mem.read_exact(sym->address, code, sizeof(code))) return std::nullopt;
  auto rel32 = [&](std::size_t at) {
    std::int32_t v;
    std::memcpy(&v, code + at, 4);
    return v;
  };
  for (std::size_t i = 0; i + 7 <= sizeof(code); ++i) {
    // General dynamic: lea tls_index(%rip),%rdi; call __tls_get_addr; add $imm,%rax.
    if (code[i] == 0x48 && code[i + 1] == 0x8d && code[i + 2] == 0x3d) {
      std::uint64_t tls_index = sym->address + i + 7 + static_cast<std::int64_t>(rel32(i + 3));
      std::int64_t extra = 0;
      for (std::size_t j = i + 7; j + 6 <= sizeof(code); ++j) {
        if (code[j] == 0x48 && code[j + 1] == 0x05) {
          extra = rel32(j + 2);
          break;
        }
      }
      auto modid = mem.read_u64(tls_index);
      auto offset = mem.read_u64(tls_index + 8);
      auto dtv = mem.read_u64(fs_base + 8);  // tcbhead_t::dtv
      if (!modid || !offset || !dtv || *modid == 0 || *modid > 65536) return std::nullopt;
      auto block = mem.read_u64(*dtv + 16 * *modid);
      if (!block || *block == 0 || *block == ~std::uint64_t{0}) return std::nullopt;
      return *block + *offset + static_cast<std::uint64_t>(extra);
    }
    // Initial exec: mov tpoff(%rip),%rax; add %fs:0,%rax.
    if (code[i] == 0x48 && code[i + 1] == 0x8b && code[i + 2] == 0x05) {
      std::uint64_t got = sym->address + i + 7 + static_cast<std::int64_t>(rel32(i + 3));
      auto tpoff = mem.read_u64(got);
      if (!tpoff) return std::nullopt;
      return fs_base + *tpoff;
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<CxxException> decode_cxa_exception(MemoryReader& mem, std::uint64_t header) {
  auto cls = mem.read_u64(header + kUnwindHeaderAt);
  if (!cls || (*cls != kPrimaryClass && *cls != kDependentClass)) return std::nullopt;
  std::uint64_t object = header + kHeaderSize;
  if (*cls == kDependentClass) {
    // A rethrown exception_ptr: the first field points to the primary exception's object.
    auto primary = mem.read_u64(header);
    if (!primary || *primary < kHeaderSize) return std::nullopt;
    object = *primary;
    header = object - kHeaderSize;
  }
  auto type_info = mem.read_u64(header);
  if (!type_info) return std::nullopt;
  auto name = type_name(mem, *type_info);
  if (!name) return std::nullopt;
  CxxException ex;
  ex.type = demangle_type(*name);
  if (has_message_member(mem, *type_info)) {
    if (auto msg_ptr = mem.read_u64(object + 8)) {
      auto msg = mem.read_cstring(*msg_ptr, kMaxWhat);
      if (msg && printable(*msg)) ex.what = std::move(*msg);
    }
  }
  return ex;
}

std::optional<CxxException> current_cxx_exception(Target& target, std::uint64_t fs_base,
                                                  std::optional<std::uint64_t> sp,
                                                  std::optional<std::uint64_t> stack_end) {
  MemoryReader& mem = target.memory();
  if (fs_base != 0) {
    if (auto globals = eh_globals_address(target, fs_base)) {
      // __cxa_eh_globals::caughtExceptions: std::terminate's handler has "caught" it.
      if (auto caught = mem.read_u64(*globals); caught && *caught != 0) {
        if (auto ex = decode_cxa_exception(mem, *caught)) return ex;
      }
    }
  }
  if (!sp) return std::nullopt;
  // Fallback: a pointer to the unwind header left on the stack by the throw machinery.
  std::uint64_t end = std::min(*sp + kStackScanBytes, stack_end.value_or(*sp + kStackScanBytes));
  if (end <= *sp) return std::nullopt;
  std::vector<std::uint64_t> words((end - *sp) / 8);
  std::size_t got = mem.read(*sp, words.data(), words.size() * 8) / 8;
  for (std::size_t i = 0; i < got; ++i) {
    std::uint64_t w = words[i];
    if (w < kUnwindHeaderAt || (w & 7) != 0) continue;
    auto cls = mem.read_u64(w);
    if (cls && (*cls == kPrimaryClass || *cls == kDependentClass)) {
      if (auto ex = decode_cxa_exception(mem, w - kUnwindHeaderAt)) return ex;
    }
  }
  return std::nullopt;
}

CrashFacts gather_crash_facts(Target& target, const ProcessSnapshot& snap) {
  CrashFacts facts;
  if (!snap.core || !snap.core->crashed_tid) return facts;
  auto freeze = target.freeze(Deadline::after(std::chrono::milliseconds(1000)));
  if (!freeze) return facts;
  std::optional<Registers> regs;
  for (const auto& t : (*freeze)->threads()) {
    if (t.tid == *snap.core->crashed_tid) regs = t.regs;
  }
  (*freeze)->release();
  MemoryReader& mem = target.memory();
  if (auto sym = find_symbol(target, "__abort_msg", "libc.so")) {
    // struct abort_msg_s { unsigned int size; char msg[]; } *__abort_msg;
    if (auto p = mem.read_u64(sym->address); p && *p != 0) {
      auto msg = mem.read_cstring(*p + 4, 4096);
      if (msg && !msg->empty() && printable(*msg)) {
        while (!msg->empty() && msg->back() == '\n') msg->pop_back();
        facts.abort_message = std::move(*msg);
      }
    }
  }
  if (!regs) return facts;
  facts.sp = regs->sp();
  for (const auto& m : target.mappings()) {
    if (m.contains(regs->sp())) facts.stack = m;
  }
  facts.exception = current_cxx_exception(
      target, regs->fs_base(), facts.sp,
      facts.stack ? std::optional<std::uint64_t>(facts.stack->end) : std::nullopt);
  return facts;
}

}  // namespace hangscan
