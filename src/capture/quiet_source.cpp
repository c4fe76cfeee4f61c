#include "capture/quiet_source.h"

#include <array>

#include "capture/bpf_snapshot.h"

namespace hangscan {

std::span<const QuietSourceEntry> quiet_sources() {
  // One line per source.
  static constexpr std::array kSources = {
      QuietSourceEntry{"bpf", &open_bpf_snapshot},
  };
  return kSources;
}

Result<std::unique_ptr<QuietSource>> open_quiet_source(int pid) {
  std::string why;
  for (const QuietSourceEntry& e : quiet_sources()) {
    auto s = e.open(pid);
    if (s) return s;
    if (!why.empty()) why += "; ";
    why += s.error().what();
  }
  return Error(Errc::unsupported, why.empty() ? "no quiet capture source is built in" : why);
}

}  // namespace hangscan
