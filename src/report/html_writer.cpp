#include "report/html_writer.h"

#include <iterator>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "report/html_assets.h"
#include "report/html_verdict.h"
#include "report/json_writer.h"
#include "util/hash_mix.h"
#include "util/stack_table.h"

namespace hangscan {

using nlohmann::json;

namespace {

// Frames and stacks of the page, each once: a stack is a list of frame indexes, and every
// thread and group names its stacks by index. Ranks share the stack objects themselves
// (FrameStack), so a stack seen before is found by its address without hashing its frames.
class PageStacks : public StackInterner {
 public:
  std::size_t intern(const std::vector<Frame>& stack) override {
    auto seen = by_address_.find(&stack);
    if (seen != by_address_.end()) return seen->second;
    std::vector<std::size_t> ids;
    ids.reserve(stack.size());
    for (const Frame& f : stack) {
      auto [it, inserted] = frame_ids_.try_emplace(f, frames_.size());
      if (inserted) frames_.push_back(without_nulls(frame_to_json(f)));
      ids.push_back(it->second);
    }
    auto [it, inserted] = stack_ids_.try_emplace(ids, stacks_.size());
    if (inserted) stacks_.push_back(ids);
    by_address_.emplace(&stack, it->second);
    return it->second;
  }

  json take_frames() { return std::move(frames_); }
  json take_stacks() { return std::move(stacks_); }

  // `obj` without null members (the page reads a missing member as null).
  static json without_nulls(json obj) {
    for (auto it = obj.begin(); it != obj.end();)
      it = it->is_null() ? obj.erase(it) : std::next(it);
    return obj;
  }

 private:
  struct FrameHasher {
    std::size_t operator()(const Frame& f) const { return frame_content_hash(f); }
  };
  struct IdsHasher {
    std::size_t operator()(const std::vector<std::size_t>& ids) const {
      std::size_t h = ids.size();
      for (std::size_t id : ids) hash_mix(h, id);
      return h;
    }
  };
  std::unordered_map<const void*, std::size_t> by_address_;
  std::unordered_map<Frame, std::size_t, FrameHasher> frame_ids_;
  std::unordered_map<std::vector<std::size_t>, std::size_t, IdsHasher> stack_ids_;
  json frames_ = json::array();
  json stacks_ = json::array();
};

// Objects that ranks have in common ("shapes": a thread's name, state, call and stacks; a
// process's command line, executable, role), each stored once and named by index.
class Shapes {
 public:
  // Keyed by the shape's CBOR: its bytes as they are (a command line that is no UTF-8 is a
  // key like any other, where dump() would throw and two such lines could look alike).
  std::size_t intern(json shape) {
    std::string key;
    json::to_cbor(shape, key);
    auto [it, inserted] = ids_.try_emplace(std::move(key), table_.size());
    if (inserted) table_.push_back(std::move(shape));
    return it->second;
  }
  json take() { return std::move(table_); }

 private:
  std::unordered_map<std::string, std::size_t> ids_;
  json table_ = json::array();
};

// `obj` without members that say nothing: null, false, empty arrays and objects.
json pruned(json obj) {
  for (auto it = obj.begin(); it != obj.end();) {
    const json& v = *it;
    bool empty = v.is_null() || (v.is_boolean() && !v.get<bool>()) ||
                 ((v.is_array() || v.is_object()) && v.empty());
    it = empty ? obj.erase(it) : std::next(it);
  }
  return obj;
}

// A thread as [tid, shape, blocked_s, cpu_ticks]: no CPU ticks (0) and then no blocked time
// (null) are left out at the end.
json thread_record(json thread, Shapes& shapes) {
  json record = json::array({thread["tid"], nullptr, thread["blocked_s"], thread["cpu_ticks"]});
  for (const char* k : {"tid", "blocked_s", "cpu_ticks"}) thread.erase(k);
  record[1] = shapes.intern(pruned(std::move(thread)));
  if (record[3].is_null() || record[3] == 0) record.erase(3);
  if (record.size() == 3 && record[2].is_null()) record.erase(2);
  return record;
}

// What differs from rank to rank stays in the process's row, one value per column in this
// order (null: none; trailing nulls left out); the rest is its shape. Rows instead of objects:
// 10,000 ranks would repeat every member's name 10,000 times.
constexpr const char* kProcessColumns[] = {
    "shape",    "threads",     "host",       "pid",         "rank",
    "ppid",     "start_ticks", "local_rank", "cpu_percent", "progress",
    "pause_us", "captured_at", "memory",     "death",       "tcp_connections",
    "core",     "signal",      "crashed_tid"};

json process_row(json process, Shapes& process_shapes, Shapes& thread_shapes) {
  json row = json::array({nullptr, json::array()});
  for (json& t : process["threads"]) row[1].push_back(thread_record(std::move(t), thread_shapes));
  process.erase("threads");
  for (const char* k : std::span(kProcessColumns).subspan(2)) {
    auto it = process.find(k);
    json value = nullptr;
    if (it != process.end()) {
      value = it->is_object() ? pruned(std::move(*it)) : std::move(*it);  // memory, death, signal
      process.erase(it);
    }
    bool empty = value.is_null() || ((value.is_array() || value.is_object()) && value.empty());
    row.push_back(empty ? json(nullptr) : std::move(value));
  }
  row[0] = process_shapes.intern(pruned(std::move(process)));
  while (row.back().is_null()) row.erase(row.size() - 1);
  return row;
}

}  // namespace

std::string json_for_script(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 64);
  for (char c : text) {
    if (c == '<') {
      out += "\\u003c";
    } else {
      out += c;
    }
  }
  return out;
}

std::string html_page_data(const JobSnapshot& job, const Analysis& analysis) {
  PageStacks stacks;
  json doc = job_to_json(job, &analysis, &stacks);
  Shapes process_shapes, thread_shapes;
  json processes = json::array();
  for (json& p : doc["processes"]) {
    processes.push_back(process_row(std::move(p), process_shapes, thread_shapes));
  }
  doc["schema"] = kHtmlDataSchema;
  doc["process_columns"] =
      std::vector<std::string>(std::begin(kProcessColumns), std::end(kProcessColumns));
  doc["processes"] = std::move(processes);
  doc["process_shapes"] = process_shapes.take();
  doc["thread_shapes"] = thread_shapes.take();
  doc["frames"] = stacks.take_frames();
  doc["stacks"] = stacks.take_stacks();
  if (doc["findings"].is_array()) add_page_findings(doc["findings"], job, analysis);
  for (std::size_t g = 0; g < analysis.groups.size() && g < doc["groups"].size(); ++g)
    doc["groups"][g]["members"] = analysis.groups[g].members;
  // The verdict's lines hold the sentences (once): SUSPECT, note, timing, waits, deadlock.
  doc["verdict"] = verdict_lines(job, analysis);
  for (const char* k : {"suspect_reasons", "notes", "wait_chains", "deadlocks"}) doc.erase(k);
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string html_page(std::string_view data, HtmlView view) {
  std::string_view page = html_assets::page;
  std::string js(html_assets::common_js);
  js += view == HtmlView::watch ? html_assets::watch_js : html_assets::js;
  std::string out;
  out.reserve(page.size() + html_assets::css.size() + js.size() + data.size());
  // Each placeholder stands once in the page, in this order.
  std::size_t at = 0;
  for (auto [mark, text] :
       {std::pair<std::string_view, std::string_view>{"@CSS@", html_assets::css},
        {"@DATA@", data},
        {"@JS@", js}}) {
    std::size_t hit = page.find(mark, at);
    out.append(page.substr(at, hit - at));
    out.append(text);
    at = hit + mark.size();
  }
  out.append(page.substr(at));
  return out;
}

std::string render_html(const JobSnapshot& job, const Analysis& analysis) {
  return html_page(json_for_script(html_page_data(job, analysis)), HtmlView::report);
}

}  // namespace hangscan
