// The defensive JSON reader: the fast agent reader first, else nlohmann's SAX events into the
// model (the reference reader, which also words every error).
#include "report/json_reader.h"

#include <optional>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "report/agent_format.h"
#include "report/agent_reader.h"
#include "report/json_writer.h"
#include "report/snapshot_fields.h"
#include "util/shared_stacks.h"

namespace hangscan {

using nlohmann::json;

namespace {

using DomBuilder = nlohmann::detail::json_sax_dom_parser<json>;

// Where a value that arrives whole goes once it is complete.
enum class Sink { none, top, process, entry_value, entry, table, bad_string };

// The SAX handler. The agent tables ("strings", "frames", "stacks") stream into flat raw
// tables with no DOM; each process is built as a small DOM, converted as soon as it closes and
// dropped; the few other top-level members are kept whole. Every check with its message is in
// SnapshotFields; what cannot be checked before the end (a sorted document writes "schema"
// and the tables after "processes") is checked by finish() in the order the format defines.
class DocumentStream : public nlohmann::json_sax<json> {
 public:
  explicit DocumentStream(const ReadLimits& limits) : lim_(limits), fields_(limits) {}

  bool null() override { return scalar(json()); }
  bool boolean(bool v) override { return scalar(json(v)); }
  bool number_integer(number_integer_t v) override { return scalar(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return scalar(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return scalar(json(v)); }
  bool binary(binary_t&) override { return scalar(json()); }  // not produced by text JSON
  bool string(string_t& v) override;
  bool key(string_t& k) override;
  bool start_object(std::size_t) override { return open(false); }
  bool start_array(std::size_t) override { return open(true); }
  bool end_object() override { return close(false); }
  bool end_array() override { return close(true); }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    malformed_ = fmt::format("malformed JSON: {}", e.what());
    return false;
  }

  // After the parse: the document, or BadDocument.
  JobSnapshot finish(SharedStacks& shared);
  bool too_deep() const { return too_deep_; }
  const std::optional<std::string>& malformed() const { return malformed_; }

 private:
  enum class Section { none, strings, frames, stacks, processes };

  bool scalar(json v);
  bool open(bool array);
  bool close(bool array);
  void begin_capture(json* dest, Sink sink, bool array);
  void end_capture();
  void begin_member(bool array);
  void begin_element(bool array, json* scalar_value);
  void convert_process();

  const ReadLimits& lim_;
  SnapshotFields fields_;
  JobSnapshot out_;
  json top_ = json::object();  // top-level members kept whole
  RawStrings strings_;
  RawEntries frames_, stacks_;
  bool processes_streamed_ = false;
  std::size_t process_count_ = 0;
  std::optional<std::string> process_error_;
  std::optional<std::string> root_error_;
  std::optional<std::string> malformed_;
  bool too_deep_ = false;

  int depth_ = 0;
  std::string key_;  // the current top-level member
  Section section_ = Section::none;
  RawEntries* table_ = nullptr;  // frames_ or stacks_ while in one
  RawEntry* entry_ = nullptr;    // the table entry (an array) being read
  int skip_from_ = 0;            // > 0: ignoring a value that opened at this depth
  // A value being built whole (a DOM of one process, or one small member).
  std::optional<DomBuilder> capture_;
  int capture_depth_ = 0;
  json* capture_dest_ = nullptr;
  Sink capture_sink_ = Sink::none;
  json scratch_;
};

bool DocumentStream::string(string_t& v) {
  if (capture_) {
    capture_->string(v);
    return true;
  }
  if (skip_from_ || root_error_) return true;
  if (depth_ == 2 && section_ == Section::strings) {
    RawTable<std::string>& t = strings_.table;
    if (t.count++ < lim_.max_table) t.items.push_back(std::move(v));
    return true;
  }
  return scalar(json(std::move(v)));
}

bool DocumentStream::key(string_t& k) {
  if (capture_) {
    capture_->key(k);
    return true;
  }
  if (depth_ == 1 && !skip_from_) key_ = std::move(k);
  return true;
}

// A scalar outside a capture: a top-level member, a table entry or a value inside one.
bool DocumentStream::scalar(json v) {
  if (capture_) {
    switch (v.type()) {
      case json::value_t::null:
        capture_->null();
        break;
      case json::value_t::boolean:
        capture_->boolean(v.get<bool>());
        break;
      case json::value_t::number_integer:
        capture_->number_integer(v.get<std::int64_t>());
        break;
      case json::value_t::number_unsigned:
        capture_->number_unsigned(v.get<std::uint64_t>());
        break;
      default:
        capture_->number_float(v.get<double>(), {});
        break;
    }
    return true;
  }
  if (skip_from_ || root_error_) return true;
  if (depth_ == 0) {
    root_error_ = fmt::format("document is {}, expected an object", v.type_name());
  } else if (depth_ == 1) {
    scratch_ = std::move(v);
    begin_member(false);
  } else if (depth_ == 2) {
    begin_element(false, &v);
  } else if (depth_ == 3 && entry_) {
    if (entry_->count++ < (table_ == &frames_ ? 13 : lim_.max_frames)) {
      table_->values.push_back(std::move(v));
      ++entry_->stored;
    }
  }
  return true;
}

bool DocumentStream::open(bool array) {
  if (++depth_ > lim_.max_depth) {
    too_deep_ = true;
    return false;
  }
  if (capture_) {
    ++capture_depth_;
    return array ? capture_->start_array(static_cast<std::size_t>(-1))
                 : capture_->start_object(static_cast<std::size_t>(-1));
  }
  if (skip_from_ || root_error_) return true;
  if (depth_ == 1) {
    if (array) root_error_ = "document is array, expected an object";
  } else if (depth_ == 2) {
    begin_member(array);
  } else if (depth_ == 3) {
    begin_element(array, nullptr);
  } else if (depth_ == 4 && entry_) {
    if (entry_->count++ < (table_ == &frames_ ? 13 : lim_.max_frames)) {
      ++entry_->stored;
      begin_capture(&table_->values.emplace_back(), Sink::entry_value, array);
    } else {
      skip_from_ = depth_;
    }
  } else {
    skip_from_ = depth_;
  }
  return true;
}

bool DocumentStream::close(bool array) {
  --depth_;
  if (capture_) {
    --capture_depth_;
    if (array) capture_->end_array();
    else capture_->end_object();
    if (capture_depth_ == 0) end_capture();
    return true;
  }
  if (skip_from_) {
    if (depth_ < skip_from_) skip_from_ = 0;
    return true;
  }
  if (depth_ == 2) entry_ = nullptr;
  if (depth_ == 1) {
    section_ = Section::none;
    table_ = nullptr;
  }
  return true;
}

void DocumentStream::begin_capture(json* dest, Sink sink, bool array) {
  *dest = json();
  capture_.emplace(*dest, true);
  capture_dest_ = dest;
  capture_sink_ = sink;
  capture_depth_ = 1;
  if (array) capture_->start_array(static_cast<std::size_t>(-1));
  else capture_->start_object(static_cast<std::size_t>(-1));
}

void DocumentStream::end_capture() {
  capture_.reset();
  switch (capture_sink_) {
    case Sink::process:
      convert_process();
      break;
    case Sink::bad_string:
      if (!strings_.first_bad)
        strings_.first_bad.emplace(strings_.table.count - 1, std::move(scratch_));
      break;
    default:
      break;
  }
  capture_sink_ = Sink::none;
}

// The value of top-level member key_ begins (a container opens, or a scalar in scratch_).
void DocumentStream::begin_member(bool array) {
  const bool container = depth_ == 2;
  auto whole = [&](json* dest) {
    if (container) begin_capture(dest, Sink::top, array);
    else *dest = std::move(scratch_);
  };
  if (key_ == "strings" || key_ == "frames" || key_ == "stacks") {
    Section s = key_ == "strings"  ? Section::strings
                : key_ == "frames" ? Section::frames
                                   : Section::stacks;
    if (s == Section::strings) strings_ = RawStrings{};
    else (s == Section::frames ? frames_ : stacks_) = RawEntries{};
    RawEntries* raw = s == Section::frames ? &frames_ : s == Section::stacks ? &stacks_ : nullptr;
    if (raw) raw->present = true;
    else strings_.table.present = true;
    if (array) {
      section_ = s;
      table_ = raw;
      return;
    }
    whole(&(raw ? raw->not_array : strings_.table.not_array).emplace());
    return;
  }
  if (key_ == "processes") {
    out_.processes.clear();
    fields_.forget_references();
    process_error_.reset();
    process_count_ = 0;
    processes_streamed_ = array;
    top_.erase("processes");
    if (array) {
      section_ = Section::processes;
      return;
    }
  }
  json& dest = top_[key_];
  whole(&dest);
  if (key_ == "schema" && dest.is_string()) {
    const auto& s = dest.get_ref<const std::string&>();
    fields_.set_mode(s == kAgentSchemaName ? SnapshotFields::Mode::agent
                     : s == kSchemaName    ? SnapshotFields::Mode::plain
                                           : SnapshotFields::Mode::unknown);
  }
}

// An element of a streamed top-level array begins (a container opens, or the scalar `v`).
void DocumentStream::begin_element(bool array, json* v) {
  switch (section_) {
    case Section::strings: {
      RawTable<std::string>& t = strings_.table;
      if (t.count++ < lim_.max_table) t.items.emplace_back();
      if (strings_.first_bad) {
        if (!v) skip_from_ = depth_;
      } else if (v) {
        strings_.first_bad.emplace(t.count - 1, std::move(*v));
      } else {
        begin_capture(&scratch_, Sink::bad_string, array);
      }
      return;
    }
    case Section::frames:
    case Section::stacks: {
      if (table_->count++ >= lim_.max_table) {
        if (!v) skip_from_ = depth_;
        return;
      }
      RawEntry& e = table_->items.emplace_back();
      e.first = table_->values.size();
      if (v) {
        e.not_array = std::move(*v);
      } else if (array) {
        entry_ = &e;
      } else {
        begin_capture(&e.not_array.emplace(), Sink::entry, false);
      }
      return;
    }
    case Section::processes: {
      if (process_count_++ >= lim_.max_processes || process_error_) {
        if (!v) skip_from_ = depth_;
        return;
      }
      if (v) {
        scratch_ = std::move(*v);
        convert_process();
      } else {
        begin_capture(&scratch_, Sink::process, array);
      }
      return;
    }
    case Section::none:
      if (!v) skip_from_ = depth_;
      return;
  }
}

void DocumentStream::convert_process() {
  try {
    out_.processes.push_back(fields_.process(scratch_, process_count_ - 1));
  } catch (const BadDocument& e) {
    process_error_ = e.message;
  }
  scratch_ = json();
}

JobSnapshot DocumentStream::finish(SharedStacks& shared) {
  const JsonPath root;
  if (root_error_) throw BadDocument{*root_error_};
  std::string schema = fields_.str(top_, "schema", root);
  bool agent = schema == kAgentSchemaName;
  if (!agent && schema != kSchemaName) {
    fail(at(root, "schema"), fmt::format("unknown schema \"{}\" (expected {} or {})",
                                         schema.substr(0, 64), kSchemaName, kAgentSchemaName));
  }
  fields_.set_mode(agent ? SnapshotFields::Mode::agent : SnapshotFields::Mode::plain);
  if (agent) fields_.check_tables(strings_, frames_, stacks_);
  fields_.top_level(top_, out_);
  if (!processes_streamed_) fields_.array(top_, "processes", root, lim_.max_processes, true);
  if (process_count_ > lim_.max_processes) {
    fail(at(root, "processes"),
         fmt::format("{} entries, more than the limit of {}", process_count_, lim_.max_processes));
  }
  if (process_error_) throw BadDocument{*process_error_};
  fields_.resolve_stacks(out_, frames_, shared);
  fields_.rest(top_, out_);
  return std::move(out_);
}

}  // namespace

Result<JobSnapshot> read_job_json(std::string_view text, const ReadLimits& limits,
                                  SharedStacks* shared) {
  if (text.size() <= limits.max_bytes) {
    SharedStacks own;
    if (auto job = read_agent_fast(text, limits, shared ? *shared : own)) return std::move(*job);
  }
  return read_job_json_reference(text, limits, shared);
}

Result<JobSnapshot> read_job_json_reference(std::string_view text, const ReadLimits& limits,
                                            SharedStacks* shared) {
  if (text.size() > limits.max_bytes) {
    return Error(Errc::bad_data,
                 fmt::format("JSON document of {} bytes is larger than the limit of {} bytes",
                             text.size(), limits.max_bytes));
  }
  try {
    DocumentStream stream(limits);
    json::sax_parse(text.begin(), text.end(), &stream, nlohmann::detail::input_format_t::json, true,
                    false);
    if (stream.too_deep()) {
      return Error(Errc::bad_data,
                   fmt::format("JSON document nests deeper than {} levels", limits.max_depth));
    }
    if (stream.malformed()) return Error(Errc::bad_data, *stream.malformed());
    SharedStacks own;
    return stream.finish(shared ? *shared : own);
  } catch (const BadDocument& e) {
    return Error(Errc::bad_data, e.message);
  } catch (const json::exception& e) {
    return Error(Errc::bad_data, fmt::format("malformed JSON: {}", e.what()));
  } catch (const std::bad_alloc&) {
    return Error(Errc::bad_data, "JSON document needs more memory than is available");
  } catch (const std::exception& e) {
    return Error(Errc::bad_data, fmt::format("unreadable JSON: {}", e.what()));
  }
}

}  // namespace hangscan
