#include "watch/watch_writers.h"

#include "watch/watch_format.h"

namespace hangscan {

std::vector<WatchWriter> watch_writers() {
  return {
      {"text", "txt", [](const WatchDocument& d) { return d.text; }},
      {"json", "json",
       [](const WatchDocument& d) {
         return d.json.dump(2, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
       }},
      {"html", "html", [](const WatchDocument& d) { return watch_html(d.json); }},
  };
}

std::vector<std::string> watch_format_names() {
  std::vector<std::string> names;
  for (const auto& w : watch_writers()) names.push_back(w.name);
  return names;
}

std::optional<WatchWriter> find_watch_writer(const std::string& name) {
  for (auto& w : watch_writers()) {
    if (w.name == name) return w;
  }
  return std::nullopt;
}

}  // namespace hangscan
