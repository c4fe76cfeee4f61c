#include "python/source_lines.h"

#include <fmt/format.h>

#include <fstream>
#include <sstream>

namespace hangscan::python {

const std::vector<std::string>* SourceLines::load(const std::string& file) {
  if (auto it = files_.find(file); it != files_.end()) return it->second ? &*it->second : nullptr;
  std::optional<std::vector<std::string>>& slot = files_[file];
  std::string path;
  if (!file.empty() && file[0] == '/') {
    Mapping m;
    m.path = file;
    path = source_.local_path(m).value_or(file);
  } else if (source_.is_live() && !file.empty() && file[0] != '<') {
    path = fmt::format("/proc/{}/cwd/{}", source_.pid(), file);
  } else {
    return nullptr;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return nullptr;
  in.seekg(0, std::ios::end);
  auto size = static_cast<std::size_t>(std::max<std::streamoff>(in.tellg(), 0));
  if (size > kMaxSourceFile || total_ + size > kMaxSourceTotal) return nullptr;
  in.seekg(0);
  std::vector<std::string> lines;
  std::string l;
  while (std::getline(in, l)) {
    if (!l.empty() && l.back() == '\r') l.pop_back();
    lines.push_back(std::move(l));
  }
  total_ += size;
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

}  // namespace hangscan::python
