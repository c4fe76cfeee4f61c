// The progress line and early notes on a terminal.
#include "fanout/terminal_progress.h"

#include <fmt/format.h>

#include "util/escape.h"

namespace hangscan {

void TerminalProgress::progress(const NodeProgress& p) {
  if (!tty_) return;
  std::lock_guard<std::mutex> lock(mu_);
  const bool done = p.answered + p.unreachable >= p.total;
  // \x1b[K clears what a longer earlier line left behind.
  std::string line = fmt::format("hangscan: {}", progress_line(p));
  write_(fmt::format("\r{}\x1b[K{}", line, done ? "\n" : ""));
  line_ = done ? std::string() : std::move(line);
}

void TerminalProgress::note(const std::string& text) {
  if (!tty_) return;
  std::lock_guard<std::mutex> lock(mu_);
  // A note quotes ranks' functions, files and node names: escaped (util/escape.h).
  write_(fmt::format("\rhangscan: {}\x1b[K\n{}", escape_for_text(text), line_));
}

}  // namespace hangscan
