// EarlyReader: node documents read while the other nodes are still answering.
//
// Why: at 10,000 nodes, reading every document after the last one arrived puts the whole
// reading time after the wait. The launchers hand each complete, checksummed document to an
// EarlyReader the moment its end line arrives; worker threads read it (read_job_json) while
// srun or pdsh is still running, and read_job_answers() then takes the results instead of
// reading again. A document that was never submitted is simply read then. The workers intern
// frames and stacks in one run-wide table, so every node's threads with one stack share it.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include "fanout/early_suspects.h"
#include "hangscan/model.h"
#include "hangscan/result.h"
#include "report/json_reader.h"
#include "util/shared_stacks.h"

namespace hangscan {

class EarlyReader {
 public:
  // `threads` 0: one per CPU (at least 1). `note` (may be empty) is called from a worker
  // thread with each early note on odd ranks (EarlySuspects) as documents are read.
  explicit EarlyReader(ReadLimits limits = {}, unsigned threads = 0,
                       std::function<void(const EarlyNote&)> note = {});
  ~EarlyReader();  // stops and joins the workers (documents not read yet are dropped)
  EarlyReader(const EarlyReader&) = delete;
  EarlyReader& operator=(const EarlyReader&) = delete;

  // Queues a copy of `document` for reading.
  void submit(std::string_view document);
  // The reading of `document` (waits while a worker is on it); nullopt when it was never
  // submitted, or already taken.
  std::optional<Result<JobSnapshot>> take(std::string_view document);

 private:
  struct Slot {
    bool done = false;
    std::optional<Result<JobSnapshot>> result;
  };
  void work();

  ReadLimits limits_;
  SharedStacks stacks_;  // every document's frames and stacks, once for the run
  std::function<void(const EarlyNote&)> note_;
  EarlySuspects suspects_;  // under mu_
  std::mutex mu_;
  std::condition_variable wake_;  // workers: a document was queued, or stop
  std::condition_variable read_;  // take(): a document was read
  bool stop_ = false;
  std::deque<const std::string*> queue_;         // keys of slots_ (stable: node-based map)
  std::unordered_map<std::string, Slot> slots_;  // by document text
  std::vector<std::thread> workers_;
};

}  // namespace hangscan
