// The progress line and early notes on a terminal.
#include "fanout/terminal_progress.h"

#include <fmt/format.h>

#include "util/escape.h"

namespace hangscan {

namespace {

std::string where_words(const std::optional<Frame>& f) {
  if (!f) return "no stack";
  if (f->file && f->line) return fmt::format("in {} ({}:{})", f->function, *f->file, *f->line);
  return fmt::format("in {}", f->function);
}

}  // namespace

std::string early_note_words(const EarlyNote& n) {
  std::string who = n.members == 1
                        ? fmt::format("rank {}", n.first_rank)
                        : fmt::format("{} ranks (first rank {})", n.members, n.first_rank);
  return fmt::format("early: {} (node {}) differs: {}; {} of {} ranks read so far are {}", who,
                     n.first_host.empty() ? "?" : n.first_host, where_words(n.where), n.majority,
                     n.ranks_read, where_words(n.majority_where));
}

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
