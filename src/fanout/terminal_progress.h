// TerminalProgress: what the front end shows on a terminal while nodes answer.
//
// Why: the progress line ("7,912/10,000 nodes answered, 3 unreachable") is rewritten in place,
// and early notes (EarlySuspects) come from reader threads at any moment: one object orders
// both, so a note never lands in the middle of the line and the line comes back after it.
// Off a terminal it writes nothing (logs and pipes get the report only). The library does not
// print: the CLI gives the writer.
#pragma once

#include <functional>
#include <mutex>
#include <string>
#include <string_view>

#include "fanout/collector.h"
#include "fanout/early_suspects.h"

namespace hangscan {

// "early: rank 17 (node n4) differs: in recv (/t/x.py:88); 79 of 80 ranks read so far are in
// all_reduce (/t/c10d.py:1541)": an early note in words, for the line note() shows.
std::string early_note_words(const EarlyNote& n);

class TerminalProgress {
 public:
  TerminalProgress(bool tty, std::function<void(std::string_view)> write)
      : tty_(tty), write_(std::move(write)) {}

  bool on_terminal() const { return tty_; }
  // Rewrites the progress line (a newline once every node is settled).
  void progress(const NodeProgress& p);
  // A line of its own above the progress line, which is then shown again.
  void note(const std::string& line);

 private:
  bool tty_;
  std::function<void(std::string_view)> write_;
  std::mutex mu_;
  std::string line_;  // the progress line on screen ("" none, or already ended)
};

}  // namespace hangscan
