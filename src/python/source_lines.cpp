#include "python/source_lines.h"

#include <algorithm>
#include <string_view>
#include <utility>

namespace hangscan::python {

const std::vector<std::string>* SourceLines::load(const std::string& file) {
  if (auto it = files_.find(file); it != files_.end()) return it->second ? &*it->second : nullptr;
  std::optional<std::vector<std::string>>& slot = files_[file];
  if (file.empty() || file[0] == '<') return nullptr;  // "<string>", "<frozen ...>": no file
  if (file[0] != '/' && !source_.is_live()) return nullptr;
  if (total_ >= kMaxSourceTotal) return nullptr;
  if (stuck_) {
    withheld_.push_back({file, "not read: an earlier source file took too long to read",
                         WithheldSource::Why::slow});
    return nullptr;
  }
  auto read = source_.read_target_file(file, std::min(kMaxSourceFile, kMaxSourceTotal - total_));
  if (!read) {
    // A missing file or a target without files is ordinary; a refusal is worth saying.
    Errc code = read.error().code;
    stuck_ = code == Errc::timeout;
    if (code != Errc::not_found && code != Errc::unsupported && code != Errc::no_such_process)
      withheld_.push_back({file, read.error().what(),
                           stuck_ ? WithheldSource::Why::slow : WithheldSource::Why::refused});
    return nullptr;
  }
  auto started = source_.started_unix_ns();
  if (started && read->changed_ns > *started + kSourceChangeSlackNs) {
    withheld_.push_back(
        {file, "it changed after the process started", WithheldSource::Why::changed});
    return nullptr;
  }
  std::vector<std::string> lines;
  std::string_view text = read->text;
  while (!text.empty()) {
    auto nl = text.find('\n');
    std::string_view l = text.substr(0, nl);
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    lines.emplace_back(l);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
  total_ += read->text.size();
  slot = std::move(lines);
  return &*slot;
}

std::optional<std::string> SourceLines::line(const std::string& file, int line) {
  const auto* lines = load(file);
  if (lines == nullptr || line < 1 || static_cast<std::size_t>(line) > lines->size())
    return std::nullopt;
  std::string s = (*lines)[static_cast<std::size_t>(line - 1)];
  if (s.size() > kMaxSourceLine) return std::nullopt;  // minified or generated: not shown
  return s;
}

std::vector<WithheldSource> SourceLines::take_withheld() { return std::exchange(withheld_, {}); }

}  // namespace hangscan::python
