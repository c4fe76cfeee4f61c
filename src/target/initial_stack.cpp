#include "target/initial_stack.h"

#include <algorithm>
#include <cstring>

namespace hangscan {
namespace {

// The strings and arrays at exec are bounded by a quarter of the stack rlimit; 64 MiB covers
// any sane environment without reading gigabytes of a huge stack.
constexpr std::uint64_t kMaxScan = 64ULL << 20;
constexpr std::size_t kMaxArgs = 1 << 17;
constexpr std::size_t kMaxString = 128 * 1024;  // MAX_ARG_STRLEN

std::optional<std::vector<std::string>> read_strings(MemoryReader& mem,
                                                     const std::vector<std::uint64_t>& ptrs) {
  std::vector<std::string> out;
  out.reserve(ptrs.size());
  for (std::uint64_t p : ptrs) {
    auto s = mem.read_cstring(p, kMaxString);
    if (!s) return std::nullopt;
    out.push_back(std::move(*s));
  }
  return out;
}

}  // namespace

std::optional<InitialStack> read_initial_stack(
    MemoryReader& mem, std::uint64_t lo, std::uint64_t hi,
    const std::vector<std::pair<std::uint64_t, std::uint64_t>>& auxv) {
  if (auxv.empty() || hi <= lo) return std::nullopt;
  hi &= ~(kPageSize - 1);
  std::uint64_t span = std::min(hi - lo, kMaxScan) & ~(kPageSize - 1);
  if (span == 0) return std::nullopt;
  std::vector<std::uint8_t> buf(span);
  // Read page by page from the top down: the top is what matters, and a hole lower down
  // must not hide it.
  std::uint64_t base = hi;
  while (base > hi - span) {
    std::uint64_t page = base - kPageSize;
    if (!mem.read_exact(page, buf.data() + (page - (hi - span)), kPageSize)) break;
    base = page;
  }
  if (base == hi) return std::nullopt;
  const std::uint8_t* data = buf.data() + (base - (hi - span));
  const std::size_t size = hi - base;

  std::vector<std::uint64_t> needle;
  for (const auto& [t, v] : auxv) {
    needle.push_back(t);
    needle.push_back(v);
  }
  needle.push_back(0);  // AT_NULL
  needle.push_back(0);
  const std::size_t nbytes = needle.size() * 8;
  if (nbytes > size) return std::nullopt;

  auto word = [&](std::uint64_t addr) -> std::optional<std::uint64_t> {
    if (addr < base || addr + 8 > hi) return std::nullopt;
    std::uint64_t w;
    std::memcpy(&w, data + (addr - base), 8);
    return w;
  };

  for (std::size_t off = (size - nbytes) & ~std::size_t{7};; off -= 8) {
    if (std::memcmp(data + off, needle.data(), nbytes) == 0) {
      std::uint64_t auxv_addr = base + off;
      // Below the vector: envp[] ending in NULL, argv[] ending in NULL, argc.
      auto term = word(auxv_addr - 8);
      if (term && *term == 0) {
        std::vector<std::uint64_t> env;
        std::uint64_t a = auxv_addr - 16;
        std::optional<std::uint64_t> w;
        while ((w = word(a)) && *w != 0 && env.size() < kMaxArgs) {
          env.push_back(*w);
          a -= 8;
        }
        std::vector<std::uint64_t> args;
        if (w && *w == 0) {
          a -= 8;
          while ((w = word(a)) && *w != args.size() && args.size() < kMaxArgs) {
            args.push_back(*w);
            a -= 8;
          }
          if (w && *w == args.size()) {
            std::reverse(env.begin(), env.end());
            std::reverse(args.begin(), args.end());
            auto envs = read_strings(mem, env);
            auto argvs = read_strings(mem, args);
            if (envs && argvs) {
              return InitialStack{std::move(*argvs), std::move(*envs), auxv_addr};
            }
          }
        }
      }
    }
    if (off < 8) break;
  }
  return std::nullopt;
}

}  // namespace hangscan
