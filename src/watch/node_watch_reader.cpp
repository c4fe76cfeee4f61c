#include "watch/node_watch_reader.h"

#include <fmt/format.h>

#include <limits>

#include "report/agent_format.h"
#include "report/bounded_json.h"
#include "util/version.h"
#include "watch/process_facts.h"

namespace hangscan {

namespace {

using json = nlohmann::json;

constexpr double kMaxSeconds = 1e12;  // beyond any wall-clock time or window
constexpr int kMaxPid = 1 << 22;      // the kernel's pid_max limit
constexpr int kMaxSignal = 64;        // SIGRTMAX

// Checks what the merge and the text read of a node document; each check throws BadDocument
// naming the path. A null where the readers take a value with a default (names, flags, ids) is
// dropped, so they get the default instead of a type error; other nulls stay (the schema's).
class NodeWatchChecker {
 public:
  explicit NodeWatchChecker(const ReadLimits& limits)
      : limits_(limits), f_(limits.max_string, limits.max_list) {}

  // Every string and every array within the limits, whatever field it is.
  void sizes(const json& v, const JsonPath& path) const {
    if (v.is_string()) {
      f_.string_value(v, path);
    } else if (v.is_array()) {
      f_.check_array(v, path, limits_.max_table);
      for (std::size_t i = 0; i < v.size(); ++i) sizes(v[i], at(path, i));
    } else if (v.is_object()) {
      for (const auto& [key, value] : v.items()) {
        if (key.size() > limits_.max_string) fail(path, "a member name over the string limit");
        sizes(value, at(path, key.c_str()));
      }
    }
  }

  static json& drop_null(json& obj, const char* key) {
    auto it = obj.find(key);
    if (it != obj.end() && it->is_null()) obj.erase(it);
    return obj;
  }

  void text(const json& obj, const char* key, const JsonPath& path) const {
    f_.opt_str(obj, key, path);
  }

  void name(json& obj, const char* key, const JsonPath& path) const {
    f_.opt_str(drop_null(obj, key), key, path);
  }

  void number(const json& obj, const char* key, const JsonPath& path, double lo = 0,
              double hi = kMaxSeconds) const {
    f_.opt_number(obj, key, path, lo, hi);
  }

  void flag(json& obj, const char* key, const JsonPath& path) const {
    f_.opt_bool(drop_null(obj, key), key, path);
  }

  void id(json& obj, const char* key, const JsonPath& path) const {
    f_.opt_int(drop_null(obj, key), key, path, 0, kMaxPid);
  }

  // Checks the array `key` (at most `max` entries) and calls `check` on each entry.
  template <class Check>
  void each(json& obj, const char* key, const JsonPath& path, std::size_t max, bool required,
            Check check) const {
    f_.array(obj, key, path, max, required);
    auto it = obj.find(key);
    if (it == obj.end() || it->is_null()) return;
    const JsonPath list = at(path, key);
    for (std::size_t i = 0; i < it->size(); ++i) {
      const JsonPath ip = at(list, i);
      f_.object((*it)[i], ip);
      check((*it)[i], ip);
    }
  }

  void frames(json& obj, const char* key, const JsonPath& path) const {
    each(obj, key, path, limits_.max_frames, false,
         [&](json& f, const JsonPath& fp) { name(f, "function", fp); });
  }

  void process(json& p, const JsonPath& path) const {
    f_.req_int(p, "pid", path, 0, kMaxPid);
    f_.opt_int(p, "rank", path, 0, std::numeric_limits<int>::max());
    for (const char* k : {"role", "comm"}) name(p, k, path);
    text(p, "exit", path);
    if (const json* e = BoundedFields::member(drop_null(p, "exit_data"), "exit_data")) {
      if (!p.contains("exit") || !p["exit"].is_string())
        fail(at(path, "exit_data"), "an exit's data without its exit");
      exit_data(*e, at(path, "exit_data"));
    }
    each(p, "note_data", path, limits_.max_list, false,
         [&](json& n, const JsonPath& np) { note_data(n, np); });
    f_.opt_int64(drop_null(p, "samples"), "samples", path, 0,
                 std::numeric_limits<std::int64_t>::max());
    number(p, "cpu_share", path, 0, 1);
    each(p, "top_stacks", path, limits_.max_list, false, [&](json& s, const JsonPath& sp) {
      number(s, "share", sp, 0, 1);
      frames(s, "frames", sp);
    });
    each(p, "waits", path, limits_.max_list, false, [&](json& w, const JsonPath& wp) {
      id(w, "tid", wp);
      text(w, "syscall", wp);
      number(w, "duration_s", wp);
      flag(w, "ongoing", wp);
      frames(w, "frames", wp);
    });
    if (BoundedFields::member(p, "behaviour") != nullptr) {
      const JsonPath bp = at(path, "behaviour");
      json& b = p["behaviour"];
      f_.object(b, bp);
      name(b, "what", bp);
      f_.strings(b, "key", bp);
      if (const json* e = BoundedFields::member(drop_null(b, "exit_data"), "exit_data"))
        exit_data(*e, at(bp, "exit_data"));
    }
  }

  // How a process ended (watch/process_facts.h): a known kind and its figures in range.
  void exit_data(const json& e, const JsonPath& path) const {
    f_.object(e, path);
    if (!exit_kind_of(f_.str(e, "kind", path))) fail(at(path, "kind"), "not a known exit kind");
    f_.opt_int(e, "status", path, 0, 255);
    f_.opt_int(e, "signal", path, 1, kMaxSignal);
    f_.opt_bool(e, "core_dumped", path);
    f_.opt_bool(e, "oom_victim", path);
  }

  // A capture note (watch/process_facts.h): a known kind and its figures in range.
  void note_data(json& n, const JsonPath& path) const {
    if (!note_kind_of(f_.str(n, "kind", path))) fail(at(path, "kind"), "not a known note kind");
    f_.opt_int64(n, "count", path, 0, std::numeric_limits<std::int64_t>::max());
    number(n, "t_s", path);
    id(n, "pid", path);
    text(n, "detail", path);
  }

  void event(json& t, const JsonPath& path) const {
    number(t, "t_s", path);
    text(t, "kind", path);
    name(t, "text", path);
    id(t, "pid", path);
    f_.opt_int(t, "rank", path, 0, std::numeric_limits<int>::max());
  }

  std::optional<NodeStall> stall(const json& doc) const {
    const json* st = BoundedFields::member(doc, "stall");
    if (st == nullptr) return std::nullopt;
    const JsonPath root;
    const JsonPath sp = at(root, "stall");
    f_.object(*st, sp);
    return NodeStall{f_.opt_str(*st, "reason", sp),
                     f_.opt_number(*st, "last_progress_unix_s", sp, 0, kMaxSeconds)};
  }

  NodeWatch document(json doc) const {
    const JsonPath root;
    f_.object(doc, root);
    sizes(doc, root);
    auto start = f_.opt_number(doc, "window_start_unix_s", root, 0, kMaxSeconds);
    if (!start) fail(at(root, "window_start_unix_s"), "missing");
    for (const char* k : {"clock_read_error_s", "window_s", "sample_hz", "events", "lost"})
      number(doc, k, root, 0, std::numeric_limits<double>::max());
    name(doc, "recorder", root);
    flag(doc, "wakers_known", root);
    bool ranks_ended = true;
    each(doc, "processes", root, limits_.max_processes, true, [&](json& p, const JsonPath& pp) {
      process(p, pp);
      ranks_ended &= p.contains("exit") && p["exit"].is_string();
    });
    each(doc, "timeline", root, limits_.max_table, true,
         [&](json& t, const JsonPath& tp) { event(t, tp); });
    each(doc, "diagnostics", root, limits_.max_list, false, [](json&, const JsonPath&) {});
    auto node_stall = stall(doc);
    // Built in place: a NodeWatch moved (a local returned) makes clang-tidy 14 see nlohmann's
    // json move as throwing (bugprone-exception-escape), though it is noexcept.
    return NodeWatch{std::move(doc), *start, std::move(node_stall), ranks_ended};
  }

 private:
  const ReadLimits& limits_;
  BoundedFields f_;
};

Error bad_report(const std::string& why) {
  return Error(Errc::bad_data, fmt::format("bad watch report: {}", why));
}

}  // namespace

void stamp_node_watch_version(json& doc) {
  doc["schema"] = kNodeWatchSchema;
  doc["agent_version"] = std::string(hangscan_version());
  doc["agent_commit"] = std::string(hangscan_commit());
}

Result<NodeWatch> read_node_watch(std::string_view text, const ReadLimits& limits) {
  if (text.size() > limits.max_bytes) {
    return bad_report(fmt::format("{} bytes, over the limit of {}", text.size(), limits.max_bytes));
  }
  // Another version's document may mean something else: the versions are compared first.
  const AgentVersion version = agent_document_version(text);
  if (std::string mismatch = agent_version_mismatch(version); !mismatch.empty())
    return Error(Errc::bad_data, mismatch);
  try {
    json doc = json::parse(text, [&](int depth, json::parse_event_t, json&) {
      if (depth > limits.max_depth)
        throw BadDocument{fmt::format("nested deeper than {}", limits.max_depth)};
      return true;
    });
    if (!doc.is_object() || doc.value("schema", json()) != kNodeWatchSchema)
      return bad_report(fmt::format("not a {} document", kNodeWatchSchema));
    return NodeWatchChecker(limits).document(std::move(doc));
  } catch (const BadDocument& e) {
    return bad_report(e.message);
  } catch (const json::exception& e) {
    return bad_report(fmt::format("not JSON ({})", e.what()));
  } catch (const std::bad_alloc&) {
    return bad_report("too large to read");
  }
}

}  // namespace hangscan
