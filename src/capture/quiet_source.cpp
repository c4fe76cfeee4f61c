#include "capture/quiet_source.h"

#include <fmt/format.h>

#include <algorithm>
#include <array>

#include "capture/bpf_snapshot.h"
#include "util/hints.h"

namespace hangscan {

namespace {

// A load takes 1-5 ms (tens under load): one still under way after this is not waited for
// further, and the captures stop every thread with ptrace instead (every wait has a deadline).
constexpr auto kLoadWait = std::chrono::seconds(2);

}  // namespace

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
  QuietSession* raw = s.get();  // the future is joined before the session goes
  s->loading_ = std::async(std::launch::async, [raw] {
    auto loaded = load_quiet_source();
    raw->loaded_at_ = std::chrono::steady_clock::now();  // published by the future
    return loaded;
  });
  return s;
}

Result<std::unique_ptr<QuietSource>> QuietSession::open(int pid, std::vector<std::string>* log) {
  std::shared_ptr<QuietLoader> loader;
  {
    std::lock_guard lock(mu_);
    if (!loaded_) {
      auto asked = std::chrono::steady_clock::now();
      if (loading_.wait_for(kLoadWait) != std::future_status::ready) {
        // The future is joined when the session goes; its result is never used.
        loaded_.emplace(Error(Errc::timeout, "quiet source: still loading after 2 s", 0,
                              hints::quiet_dump_off()));
        return loaded_->error();
      }
      loaded_.emplace(loading_.get());
      auto ms = [](auto d) {
        return std::chrono::duration_cast<std::chrono::microseconds>(d).count() / 1000.0;
      };
      if (log != nullptr && *loaded_) {
        log->push_back(fmt::format(
            "quiet source {} loaded for this run in {:.1f} ms; the first capture waited {:.1f} ms",
            (**loaded_)->name(), ms(loaded_at_ - started_),
            ms(std::max(loaded_at_, asked) - asked)));
      }
    }
    if (!*loaded_) return loaded_->error();
    loader = **loaded_;
  }
  return loader->open(pid);
}

}  // namespace hangscan
