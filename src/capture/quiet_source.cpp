#include "capture/quiet_source.h"

#include <fmt/format.h>

#include <array>

#include "capture/bpf_snapshot.h"

namespace hangscan {

std::span<const QuietSourceEntry> quiet_sources() {
  // One line per source.
  static constexpr std::array kSources = {
      QuietSourceEntry{"bpf", &load_bpf_snapshot},
  };
  return kSources;
}

Result<std::shared_ptr<QuietLoader>> load_quiet_source() {
  std::string why;
  for (const QuietSourceEntry& e : quiet_sources()) {
    auto s = e.load();
    if (s) return s;
    if (!why.empty()) why += "; ";
    why += s.error().what();
  }
  return Error(Errc::unsupported, why.empty() ? "no quiet capture source is built in" : why);
}

Result<std::unique_ptr<QuietSource>> open_quiet_source(int pid) {
  auto loader = load_quiet_source();
  if (!loader) return std::move(loader).error();
  return (*loader)->open(pid);
}

std::shared_ptr<QuietSession> QuietSession::start() {
  std::shared_ptr<QuietSession> s(new QuietSession());
  s->started_ = std::chrono::steady_clock::now();
  s->loading_ = std::async(std::launch::async, load_quiet_source);
  return s;
}

Result<std::unique_ptr<QuietSource>> QuietSession::open(int pid, std::vector<std::string>* log) {
  std::shared_ptr<QuietLoader> loader;
  {
    std::lock_guard lock(mu_);
    if (!loaded_) {
      loaded_.emplace(loading_.get());
      auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(
          std::chrono::steady_clock::now() - started_);
      if (log != nullptr && *loaded_) {
        log->push_back(fmt::format("quiet source {} loaded for this run ({} ms after the start)",
                                   (**loaded_)->name(), waited.count()));
      }
    }
    if (!*loaded_) return loaded_->error();
    loader = **loaded_;
  }
  return loader->open(pid);
}

}  // namespace hangscan
