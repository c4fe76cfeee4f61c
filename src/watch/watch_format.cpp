#include "watch/watch_format.h"

#include <cstring>

#include <fmt/format.h>

#include "group/roles.h"
#include "python/merge.h"
#include "report/html_writer.h"
#include "report/json_writer.h"
#include "report/text_writer.h"
#include "util/escape.h"
#include "watch/watch_groups.h"
#include "watch/watch_words.h"

namespace hangscan {

namespace {

constexpr std::size_t kFramesShown = 12;
constexpr std::size_t kKernelShown = 4;

std::string who(const ProcessWatch& p) {
  std::string s =
      p.rank ? fmt::format("rank {} (pid {}", *p.rank, p.pid) : fmt::format("pid {} (", p.pid);
  if (p.rank) s += ", ";
  s += escape_for_text(p.comm.empty() ? p.role : p.comm);  // names are escaped (util/escape.h)
  if (!p.comm.empty() && is_pool_role(p.role)) s += ", " + p.role;  // owner, worker, idle
  return s + ")";
}

// One line per run of hidden native frames (`... 3 native frames`).
void elided_text(std::string& out, const char* indent, std::size_t count, const char* what) {
  if (count > 0)
    out += fmt::format("{}... {} {}frame{}\n", indent, count, what, count == 1 ? "" : "s");
}

// The innermost kFramesShown frames; then, of the frames past them, the Python frames (up to
// kFramesShown more) and a cut stack's gap frame, each run of native frames between them in one
// line. Why: a sample deep in a native library (torch, BLAS) has its 12 innermost frames in
// that library; where in the script it was called from is further out, and is what a reader
// needs first.
void frames_text(std::string& out, const std::vector<Frame>& frames, bool incomplete,
                 const char* indent) {
  std::size_t i = 0;
  for (; i < frames.size() && i < kFramesShown; ++i)
    out += fmt::format("{}{}\n", indent, escape_for_text(frame_line(frames[i])));
  std::size_t native_run = 0;
  for (std::size_t python_shown = 0; i < frames.size() && python_shown < kFramesShown; ++i) {
    const Frame& f = frames[i];
    bool gap = f.function == python::kNativeGap;
    if (f.kind != FrameKind::python && !gap) {
      ++native_run;
      continue;
    }
    elided_text(out, indent, native_run, "native ");
    native_run = 0;
    out += fmt::format("{}{}\n", indent, escape_for_text(frame_line(f)));
    if (!gap) ++python_shown;
  }
  elided_text(out, indent, native_run + (frames.size() - i),
              i < frames.size() ? "more " : "native ");
  if (incomplete && !frames.empty() && frames.back().kind != FrameKind::python)
    out += fmt::format("{}... (stack incomplete: the unwinding stopped here)\n", indent);
}

std::string wait_line(const WaitView& w) {
  std::string what = !w.syscall.empty() ? w.syscall + "()" : "off CPU outside a system call";
  if (w.fd) what += fmt::format(" on fd {}", *w.fd);
  std::string waker = !w.waker_known || w.ongoing ? ""
                      : w.waker_pid == 0 ? ", not woken by another task (a timeout or an interrupt)"
                                         : fmt::format(", woken by pid {} tid {} ({})", w.waker_pid,
                                                       w.waker_tid, w.waker_comm);
  return fmt::format("{:.3f} s in {} (thread {}, {:.3f} s off CPU{}{})", w.duration_s, what, w.tid,
                     w.offcpu_s,
                     w.before_window ? ", since before the window, still waiting at the end"
                     : w.ongoing     ? ", still waiting at the end"
                                     : fmt::format(", ran again at +{:.2f} s", w.end_s),
                     waker);
}

}  // namespace

std::string timeline_sentence(const TimelineEntry& t) {
  const EventRecord& e = t.event;
  std::string who =
      t.rank ? fmt::format("rank {} (pid {})", *t.rank, e.pid) : fmt::format("pid {}", e.pid);
  switch (e.kind) {
    case EventRecord::Kind::exit:
      return fmt::format("{} {}", who, exit_words(process_exit_of(e.exit_code)));
    case EventRecord::Kind::signal: {
      const char* name = sigabbrev_np(e.signal);
      std::string sig = name ? fmt::format("SIG{}", name) : fmt::format("signal {}", e.signal);
      if (e.sender_pid == 0)
        return fmt::format(
            "{} was sent {} from an interrupt (a timer or a device: no task sent it)", who, sig);
      return fmt::format("{} was sent {} by pid {} ({}){}", who, sig, e.sender_pid, e.sender_comm,
                         e.si_code == 0x80 ? ", from the kernel" : "");
    }
    case EventRecord::Kind::oom:
      return fmt::format("{} was chosen by the OOM killer", who);
    case EventRecord::Kind::exec:
      return fmt::format("{} replaced its program: exec {}", who, e.path);
  }
  return who;
}

std::string watch_text(const WatchReport& r) {
  std::string out = fmt::format(
      "watched {} process{} for {:.1f} s ({} recorder, {} Hz samples, waits >= {} ms)\n",
      r.processes.size(), r.processes.size() == 1 ? "" : "es", r.window_s, r.recorder, r.sample_hz,
      r.wait_threshold_ns / 1'000'000);
  out += verdict_text(r.verdict);
  for (const auto& p : r.processes) {
    out += fmt::format("\n{}: on CPU {:.0f}% ({} samples){}\n", who(p), p.cpu_share * 100,
                       p.samples, p.exit ? ", " + escape_for_text(exit_words(*p.exit)) : "");
    if (!p.top.empty()) out += "  top on-CPU stacks:\n";
    for (const auto& s : p.top) {
      out += fmt::format("  {:.0f}% ({} samples)\n", s.share * 100, s.samples);
      frames_text(out, s.frames, s.incomplete, "      ");
    }
    if (!p.waits.empty())
      out += fmt::format("  longest waits ({} completed in the window):\n", p.wait_count);
    for (const auto& w : p.waits) {
      out += fmt::format("    {}\n", escape_for_text(wait_line(w)));
      for (std::size_t i = 0; i < w.kernel.size() && i < kKernelShown; ++i)
        out += fmt::format("        [kernel] {}\n", escape_for_text(w.kernel[i]));
      frames_text(out, w.frames, w.incomplete, "        ");
    }
    for (const auto& n : p.notes)
      out += fmt::format("  note: {}\n", escape_for_text(note_words(n)));
  }
  if (!r.timeline.empty()) out += "\ntimeline:\n";
  for (const auto& t : r.timeline)
    out += fmt::format("  +{:.3f} s  {}\n", t.t_s, escape_for_text(timeline_sentence(t)));
  out += fmt::format("\nrecorder: {} events, {} lost{}", r.counters.events, r.counters.lost,
                     r.counters.lost ? " (the ring buffer was full: lower --rate)" : "");
  if (r.recorder == "ptrace")
    out += fmt::format("; the processes were held stopped {:.1f} ms in all (ptrace samples)",
                       static_cast<double>(r.counters.stopped_ns) / 1e6);
  out += "\n";
  return out;
}

nlohmann::json watch_json(const WatchReport& r) {
  nlohmann::json j;
  j["recorder"] = r.recorder;
  j["window_s"] = r.window_s;
  j["sample_hz"] = r.sample_hz;
  j["cpu_bucket_s"] = r.cpu_bucket_s;
  j["wait_threshold_ms"] = static_cast<double>(r.wait_threshold_ns) / 1e6;
  j["events"] = r.counters.events;
  j["lost"] = r.counters.lost;
  j["stopped_s"] = static_cast<double>(r.counters.stopped_ns) / 1e9;
  j["wakers_known"] = r.wakers_known;
  j["wait_copies"] = r.wait_copies;
  j["processes"] = nlohmann::json::array();
  for (const auto& p : r.processes) {
    nlohmann::json pj{
        {"pid", p.pid},         {"role", p.role},           {"comm", p.comm},
        {"samples", p.samples}, {"cpu_share", p.cpu_share}, {"wait_count", p.wait_count}};
    pj["rank"] = p.rank ? nlohmann::json(*p.rank) : nlohmann::json(nullptr);
    pj["exit"] = p.exit ? nlohmann::json(exit_words(*p.exit)) : nlohmann::json(nullptr);
    if (p.exit) pj["exit_data"] = exit_to_json(*p.exit);
    pj["cpu_over_time"] = p.cpu_over_time;
    pj["top_stacks"] = nlohmann::json::array();
    for (const auto& s : p.top) {
      pj["top_stacks"].push_back({{"samples", s.samples},
                                  {"share", s.share},
                                  {"frames", frames_to_json(s.frames)},
                                  {"incomplete", s.incomplete}});
    }
    pj["waits"] = nlohmann::json::array();
    for (const auto& w : p.waits) {
      nlohmann::json wj{
          {"tid", w.tid},
          {"syscall", !w.syscall.empty() ? nlohmann::json(w.syscall) : nlohmann::json(nullptr)},
          {"duration_s", w.duration_s},
          {"offcpu_s", w.offcpu_s},
          {"ongoing", w.ongoing},
          {"end_s", w.end_s},
          {"before_window", w.before_window},
          {"kernel", w.kernel},
          {"frames", frames_to_json(w.frames)},
          {"incomplete", w.incomplete}};
      wj["fd"] = w.fd ? nlohmann::json(*w.fd) : nlohmann::json(nullptr);
      wj["waker"] =
          w.waker_pid == 0
              ? nlohmann::json(nullptr)
              : nlohmann::json{{"pid", w.waker_pid}, {"tid", w.waker_tid}, {"comm", w.waker_comm}};
      pj["waits"].push_back(std::move(wj));
    }
    pj["notes"] = nlohmann::json::array();
    pj["note_data"] = nlohmann::json::array();
    for (const auto& n : p.notes) {
      pj["notes"].push_back(note_words(n));
      pj["note_data"].push_back(note_to_json(n));
    }
    pj["behaviour"] = behaviour_to_json(p.behaviour);
    pj["behaviour"]["what"] = behaviour_words(p.behaviour);
    j["processes"].push_back(std::move(pj));
  }
  j["timeline"] = nlohmann::json::array();
  for (const auto& t : r.timeline) {
    const EventRecord& e = t.event;
    nlohmann::json tj{{"t_s", t.t_s}, {"pid", e.pid}, {"text", timeline_sentence(t)}};
    tj["rank"] = t.rank ? nlohmann::json(*t.rank) : nlohmann::json(nullptr);
    switch (e.kind) {
      case EventRecord::Kind::exit:
        tj["kind"] = "exit";
        tj["exit_code"] = e.exit_code < 0 ? nlohmann::json(nullptr) : nlohmann::json(e.exit_code);
        if (e.exit_code < 0) break;  // the ptrace fallback saw it vanish, not its status
        if ((e.exit_code & 0x7f) == 0) tj["status"] = (e.exit_code >> 8) & 0xff;
        else tj["signal"] = e.exit_code & 0x7f;
        break;
      case EventRecord::Kind::signal:
        tj["kind"] = "signal";
        tj["signal"] = e.signal;
        tj["tid"] = e.tid;
        tj["sender"] = e.sender_pid == 0 ? nlohmann::json(nullptr)
                                         : nlohmann::json{{"pid", e.sender_pid},
                                                          {"tid", e.sender_tid},
                                                          {"comm", e.sender_comm}};
        tj["si_code"] = e.si_code;
        break;
      case EventRecord::Kind::oom:
        tj["kind"] = "oom_victim";
        break;
      case EventRecord::Kind::exec:
        tj["kind"] = "exec";
        tj["path"] = e.path;
        tj["comm"] = e.comm;
        break;
    }
    j["timeline"].push_back(std::move(tj));
  }
  verdict_into_json(r.verdict, j);
  j["diagnostics"] = nlohmann::json::array();
  for (const auto& d : r.diagnostics) j["diagnostics"].push_back(diagnostic_to_json(d));
  return j;
}

std::string watch_html(const WatchReport& r) { return watch_html(watch_json(r)); }

std::string watch_html(const nlohmann::json& doc) {
  std::string data = doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return html_page(json_for_script(data), HtmlView::watch);
}

}  // namespace hangscan
