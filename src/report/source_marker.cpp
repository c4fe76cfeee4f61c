#include "report/source_marker.h"

#include "util/escape.h"

namespace hangscan {
namespace {

// Characters (UTF-8 code points) in the first `bytes` bytes of `s`.
std::size_t chars_in(const std::string& s, std::size_t bytes) {
  std::size_t n = 0;
  for (std::size_t i = 0; i < bytes && i < s.size(); ++i) {
    if ((static_cast<unsigned char>(s[i]) & 0xc0) != 0x80) ++n;
  }
  return n;
}

// Columns of src[from, to) as the text report shows it (escaped: util/escape.h).
std::size_t shown_columns(const std::string& src, std::size_t from, std::size_t to) {
  std::string shown = escape_for_text(std::string_view(src).substr(from, to - from));
  return chars_in(shown, shown.size());
}

}  // namespace

std::vector<std::string> source_marker(const Frame& f) {
  if (!f.source || !f.column) return {};
  const std::string& src = *f.source;
  std::size_t begin = src.find_first_not_of(" \t");
  if (begin == std::string::npos) return {};
  std::size_t end = src.find_last_not_of(" \t") + 1;
  std::string text = escape_for_text(std::string_view(src).substr(begin, end - begin));
  auto col = static_cast<std::size_t>(*f.column);
  // On a later end line, or without an end column, the mark runs to the end of this line.
  std::size_t stop = end;
  if (f.end_column && f.end_line && f.line && *f.end_line == *f.line)
    stop = static_cast<std::size_t>(*f.end_column);
  if (col < begin || stop > end || col >= stop) return {text};
  if (col == begin && stop == end) return {text};  // the whole line: nothing to point at
  std::size_t lead = shown_columns(src, begin, col);
  std::size_t width = shown_columns(src, col, stop);
  return {text, std::string(lead, ' ') + std::string(width, '^')};
}

}  // namespace hangscan
