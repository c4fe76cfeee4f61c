#include "corewrite/core_plan.h"

#include <algorithm>

#include <fmt/format.h>

namespace hangscan {
namespace {

// coredump_filter bits (Documentation/filesystems/proc.rst).
constexpr std::uint32_t kAnonPrivate = 1u << 0;
constexpr std::uint32_t kAnonShared = 1u << 1;
constexpr std::uint32_t kFilePrivate = 1u << 2;
constexpr std::uint32_t kFileShared = 1u << 3;
constexpr std::uint32_t kElfHeaders = 1u << 4;
constexpr std::uint32_t kHugePrivate = 1u << 5;
constexpr std::uint32_t kHugeShared = 1u << 6;

// The x86-64 ABI lets a leaf function use 128 bytes below the stack pointer.
constexpr std::uint64_t kRedZone = 128;
// Anonymous mappings up to this size that hold something a reader needs are kept whole;
// larger ones (the kernel merges adjacent mmaps: an arena next to a huge array) keep only the
// blocks around what was read.
constexpr std::uint64_t kSplitAbove = 4ull << 20;
constexpr std::uint64_t kKeepBlock = 1ull << 20;

std::uint64_t floor_to(std::uint64_t v, std::uint64_t a) { return v - v % a; }
std::uint64_t ceil_to(std::uint64_t v, std::uint64_t a) {
  std::uint64_t r = v % a;
  return r == 0 ? v : v + (a - r);
}

bool is_device(const Mapping& m) {
  return m.path.starts_with("/dev/") && !m.path.starts_with("/dev/zero") &&
         !m.path.starts_with("/dev/shm/");
}

// Merged, sorted ranges clipped to [lo, hi) and widened to `block` alignment.
std::vector<std::pair<std::uint64_t, std::uint64_t>> blocks_in(
    const std::vector<std::pair<std::uint64_t, std::uint64_t>>& ranges, std::uint64_t lo,
    std::uint64_t hi, std::uint64_t block) {
  std::vector<std::pair<std::uint64_t, std::uint64_t>> out;
  for (const auto& [a, b] : ranges) {
    if (b <= lo || a >= hi) continue;
    std::uint64_t s = std::max(lo, floor_to(std::max(a, lo), block));
    std::uint64_t e = std::min(hi, ceil_to(std::min(b, hi), block));
    out.emplace_back(s, e);
  }
  std::sort(out.begin(), out.end());
  std::vector<std::pair<std::uint64_t, std::uint64_t>> merged;
  for (const auto& r : out) {
    if (!merged.empty() && r.first <= merged.back().second) {
      merged.back().second = std::max(merged.back().second, r.second);
    } else {
      merged.push_back(r);
    }
  }
  return merged;
}

class Planner {
 public:
  explicit Planner(const PlanInput& in) : in_(in) {}

  CorePlan run() {
    for (std::size_t i = 0; i < in_.mappings.size(); ++i) plan_mapping(i);
    apply_budget();
    for (const auto& p : plan_.pieces) {
      plan_.dump_bytes += p.dump;
      if (p.must) plan_.must_bytes += p.dump;
    }
    return std::move(plan_);
  }

 private:
  MappingFacts facts(std::size_t i) const {
    return i < in_.facts.size() ? in_.facts[i] : MappingFacts{};
  }
  bool allowed(std::uint32_t bit) const { return (in_.coredump_filter & bit) != 0; }

  void add(const Mapping& m, std::uint64_t s, std::uint64_t e, std::uint64_t dump, KeepReason k,
           bool must, std::string omitted = {}) {
    if (e <= s) return;
    plan_.pieces.push_back(CorePiece{s, e, dump, m.perms, k, must, std::move(omitted)});
  }
  void add_whole(const Mapping& m, KeepReason k, bool must) {
    add(m, m.start, m.end, m.end - m.start, k, must);
  }
  void add_left_out(const Mapping& m, std::string why) {
    add(m, m.start, m.end, 0, KeepReason::none, false, std::move(why));
  }

  void plan_mapping(std::size_t i) {
    const Mapping& m = in_.mappings[i];
    MappingFacts f = facts(i);
    // Nothing to read: guard pages, reservations, device memory (reading it can hang or
    // have effects), the kernel's own pages.
    if (!m.readable() || f.io || m.path == "[vvar]" || m.path == "[vsyscall]" ||
        (!f.known && is_device(m))) {
      add(m, m.start, m.end, 0, KeepReason::none, false);
      return;
    }
    if (m.path == "[vdso]" || m.contains(in_.vdso)) {
      add_whole(m, KeepReason::vdso, true);  // unwinders need it; the kernel always dumps it
      return;
    }
    if (f.dontdump) {
      add_left_out(m, "VM_DONTDUMP (madvise)");
      return;
    }
    if (plan_stack(m)) return;

    const bool shared = m.perms.size() > 3 && m.perms[3] == 's';
    const bool anon = !m.is_file();
    std::uint32_t bit = 0;
    if (f.hugetlb) {
      bit = shared ? kHugeShared : kHugePrivate;
    } else if (shared) {
      bit = (anon || m.deleted) ? kAnonShared : kFileShared;
    } else if (anon) {
      bit = kAnonPrivate;
    } else {
      // Like the kernel: a private file mapping with written (copied) pages counts as
      // anonymous memory; one never written is just the file.
      bit = (f.known ? f.anon_pages : m.writable()) ? kAnonPrivate : kFilePrivate;
    }
    const bool file_image = m.is_file() && !shared && bit == kFilePrivate;
    if (file_image || (bit == kFileShared && !allowed(bit))) {
      // The bytes are in the file on disk: readers take them from there. The first page of
      // an ELF image stays, for its build-id.
      if (allowed(kElfHeaders) && m.offset == 0 && f.elf_magic) {
        add(m, m.start, m.end, std::min(in_.page_size, m.end - m.start), KeepReason::elf_header,
            true);
      } else {
        add(m, m.start, m.end, 0, KeepReason::none, false);
      }
      return;
    }
    if (!allowed(bit)) {
      add_left_out(m, fmt::format("coredump_filter {:#x}", in_.coredump_filter));
      return;
    }
    if (m.is_file() && !shared) {
      add_whole(m, KeepReason::module_data, true);  // .data, .got: interpreter state
      return;
    }
    if (anon && !shared && i > 0 && m.writable() && m.path.empty()) {
      const Mapping& prev = in_.mappings[i - 1];
      if (prev.is_file() && prev.end == m.start && prev.writable()) {
        add_whole(m, KeepReason::module_data, true);  // the module's .bss
        return;
      }
    }
    plan_needed(m);
  }

  // Thread stacks: from the lowest stack pointer in the mapping (minus the red zone) up.
  bool plan_stack(const Mapping& m) {
    std::uint64_t low = UINT64_MAX;
    for (std::uint64_t sp : in_.stack_pointers) {
      if (m.contains(sp)) low = std::min(low, sp);
    }
    if (low == UINT64_MAX && m.path != "[stack]") return false;
    std::uint64_t cut = m.start;
    if (low != UINT64_MAX && low - m.start > kRedZone) {
      cut = std::max(m.start, floor_to(low - kRedZone, in_.page_size));
    }
    add(m, m.start, cut, 0, KeepReason::none, false, "stack below the stack pointer (unused)");
    add(m, cut, m.end, m.end - cut, KeepReason::stack, true);
    return true;
  }

  // Anonymous memory: what a reader needs is kept, the rest is a candidate to leave out.
  void plan_needed(const Mapping& m) {
    auto need = blocks_in(in_.keep_ranges, m.start, m.end, in_.page_size);
    if (need.empty()) {
      add_whole(m, KeepReason::other, false);
      return;
    }
    if (m.end - m.start <= kSplitAbove) {
      add_whole(m, KeepReason::python, true);
      return;
    }
    need = blocks_in(need, m.start, m.end, kKeepBlock);
    std::uint64_t at = m.start;
    for (const auto& [s, e] : need) {
      add(m, at, s, s - at, KeepReason::other, false);
      add(m, s, e, e - s, KeepReason::python, true);
      at = e;
    }
    add(m, at, m.end, m.end - at, KeepReason::other, false);
  }

  void apply_budget() {
    std::uint64_t total = 0;
    std::vector<std::size_t> candidates;
    for (std::size_t i = 0; i < plan_.pieces.size(); ++i) {
      total += plan_.pieces[i].dump;
      if (!plan_.pieces[i].must && plan_.pieces[i].dump > 0) candidates.push_back(i);
    }
    std::stable_sort(candidates.begin(), candidates.end(), [this](std::size_t a, std::size_t b) {
      return plan_.pieces[a].dump > plan_.pieces[b].dump;
    });
    for (std::size_t i : candidates) {
      if (total <= in_.max_size) break;
      CorePiece& p = plan_.pieces[i];
      total -= p.dump;
      p.dump = 0;
      p.omitted = fmt::format("over --max-size {}", human_size(in_.max_size));
    }
    if (total > in_.max_size) {
      plan_.warnings.push_back(fmt::format(
          "the core needs {} (stacks, module data, Python memory), more than --max-size {}",
          human_size(total), human_size(in_.max_size)));
    }
  }

  const PlanInput& in_;
  CorePlan plan_;
};

}  // namespace

CorePlan plan_core(const PlanInput& in) { return Planner(in).run(); }

std::string human_size(std::uint64_t bytes) {
  const char* units = "KMGTP";
  if (bytes < 1024) return fmt::format("{}", bytes);
  double v = static_cast<double>(bytes) / 1024;
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  if (v == static_cast<double>(static_cast<std::uint64_t>(v))) {
    return fmt::format("{}{}", static_cast<std::uint64_t>(v), units[u]);
  }
  return fmt::format("{:.1f}{}", v, units[u]);
}

std::string omitted_line(std::uint64_t start, std::uint64_t end, const std::string& reason) {
  return fmt::format("omitted {:x}-{:x} {} {}", start, end, end - start, reason);
}

}  // namespace hangscan
