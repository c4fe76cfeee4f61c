// Reading node documents on worker threads as they arrive.
#include "fanout/early_reader.h"

#include <algorithm>

namespace hangscan {

EarlyReader::EarlyReader(ReadLimits limits, unsigned threads,
                         std::function<void(const EarlyNote&)> note)
    : limits_(limits), note_(std::move(note)) {
  unsigned n = threads ? threads : std::max(1u, std::thread::hardware_concurrency());
  workers_.reserve(n);
  for (unsigned i = 0; i < n; ++i) workers_.emplace_back([this] { work(); });
}

EarlyReader::~EarlyReader() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  wake_.notify_all();
  for (std::thread& t : workers_) t.join();
}

void EarlyReader::submit(std::string_view document) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto [it, fresh] = slots_.try_emplace(std::string(document));
    if (!fresh) return;  // the same text reads the same
    queue_.push_back(&it->first);
  }
  wake_.notify_one();
}

void EarlyReader::work() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    wake_.wait(lock, [this] { return stop_ || !queue_.empty(); });
    if (stop_) return;
    const std::string* text = queue_.front();
    queue_.pop_front();
    lock.unlock();
    // The slot is not erased before it is done, so its key stays valid while unlocked.
    Result<JobSnapshot> r = read_job_json(*text, limits_, &stacks_);  // never throws
    lock.lock();
    if (note_ && r.ok()) {
      std::vector<EarlyNote> notes = suspects_.add(*r);
      if (!notes.empty()) {
        lock.unlock();
        for (const EarlyNote& n : notes) note_(n);
        lock.lock();
      }
    }
    auto it = slots_.find(*text);
    if (it != slots_.end()) {
      it->second.result = std::move(r);
      it->second.done = true;
    }
    read_.notify_all();
  }
}

std::optional<Result<JobSnapshot>> EarlyReader::take(std::string_view document) {
  std::unique_lock<std::mutex> lock(mu_);
  auto it = slots_.find(std::string(document));
  if (it == slots_.end()) return std::nullopt;
  read_.wait(lock, [&] { return it->second.done || stop_; });
  if (!it->second.done) return std::nullopt;
  std::optional<Result<JobSnapshot>> out = std::move(it->second.result);
  slots_.erase(it);
  return out;
}

}  // namespace hangscan
