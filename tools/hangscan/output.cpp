#include "output.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include <fmt/core.h>
#include <nlohmann/json.hpp>

namespace hangscan::cli {

bool output_wants_color() {
  const char* no = std::getenv("NO_COLOR");
  if (no != nullptr && no[0] != '\0') return false;
  return isatty(STDOUT_FILENO) == 1;
}

namespace {

nlohmann::json frame_json(const Frame& f) {
  nlohmann::json j;
  j["kind"] = frame_kind_name(f.kind);
  j["function"] = f.function;
  j["file"] = f.file ? nlohmann::json(*f.file) : nlohmann::json(nullptr);
  j["line"] = f.line ? nlohmann::json(*f.line) : nlohmann::json(nullptr);
  j["module"] = f.module;
  bool native = f.kind == FrameKind::native || f.kind == FrameKind::inline_frame;
  j["pc"] = native ? nlohmann::json(fmt::format("{:#x}", f.pc)) : nlohmann::json(nullptr);
  j["offset"] = native ? nlohmann::json(fmt::format("{:#x}", f.offset)) : nlohmann::json(nullptr);
  j["build_id"] = f.build_id.empty() ? nlohmann::json(nullptr) : nlohmann::json(f.build_id);
  j["locals"] = nlohmann::json::array();
  for (const auto& l : f.locals) j["locals"].push_back({{"name", l.name}, {"value", l.value}});
  return j;
}

std::string frame_text(const Frame& f) {
  std::string s = f.function;
  if (f.file && f.line) s += fmt::format(" ({}:{})", *f.file, *f.line);
  else if (f.kind != FrameKind::python && f.kind != FrameKind::kernel)
    s += fmt::format(" +{:#x} [{}]", f.offset, f.module);
  if (f.kind == FrameKind::inline_frame) s += " [inline]";
  return s;
}

}  // namespace

void write_output(const JobSnapshot& job, const OutputOptions& options) {
  if (options.json) {
    nlohmann::json doc;
    doc["schema"] = "hangscan/1";
    doc["processes"] = nlohmann::json::array();
    for (const auto& p : job.processes) {
      nlohmann::json pj;
      pj["host"] = p.host;
      pj["pid"] = p.pid;
      pj["pause_us"] = p.pause_us;
      pj["threads"] = nlohmann::json::array();
      for (const auto& t : p.threads) {
        nlohmann::json tj;
        tj["tid"] = t.tid;
        tj["name"] = t.name;
        tj["state"] = std::string(1, t.state);
        tj["wchan"] = t.wchan ? nlohmann::json(*t.wchan) : nlohmann::json(nullptr);
        tj["syscall"] = t.syscall ? nlohmann::json(*t.syscall) : nlohmann::json(nullptr);
        tj["is_main"] = t.is_main;
        tj["gil"] = t.gil ? nlohmann::json(*t.gil) : nlohmann::json(nullptr);
        tj["frames"] = nlohmann::json::array();
        for (const auto& f : t.frames) tj["frames"].push_back(frame_json(f));
        tj["native_frames"] = nlohmann::json::array();
        for (const auto& f : t.native_frames) tj["native_frames"].push_back(frame_json(f));
        tj["kernel_frames"] = nlohmann::json::array();
        for (const auto& f : t.kernel_frames) tj["kernel_frames"].push_back(frame_json(f));
        tj["notes"] = t.notes;
        pj["threads"].push_back(tj);
      }
      if (p.python) pj["python"] = {{"version", p.python->version}, {"nonblocking", p.python->nonblocking}};
      else pj["python"] = nullptr;
      doc["processes"].push_back(pj);
    }
    doc["diagnostics"] = nlohmann::json::array();
    for (const auto& d : job.diagnostics) doc["diagnostics"].push_back({{"severity", severity_name(d.severity)}, {"message", d.message}, {"hint", d.hint}});
    fmt::print("{}\n", doc.dump(2));
    return;
  }
  for (const auto& p : job.processes) {
    fmt::print("Process {} ({}) pause {} us\n", p.pid, p.cmdline.empty() ? p.exe : p.cmdline[0], p.pause_us);
    for (const auto& t : p.threads) {
      fmt::print("\nThread {} \"{}\" state {} syscall {} wchan {}\n", t.tid, t.name, t.state,
                 t.syscall.value_or("-"), t.wchan.value_or("-"));
      for (const auto& f : t.frames) fmt::print("    {}\n", frame_text(f));
      for (const auto& n : t.notes) fmt::print("    note: {}\n", n);
    }
  }
}

}  // namespace hangscan::cli
