// The terminal report.
#include "report/text_writer.h"

#include <algorithm>
#include <ctime>
#include <set>

#include <fmt/format.h>

#include "group/death_findings.h"
#include "group/progress.h"
#include "group/rank_set.h"
#include "group/stack_key.h"
#include "group/wait_spread.h"
#include "report/finding_words.h"
#include "report/member_words.h"
#include "report/source_marker.h"
#include "util/escape.h"

namespace hangscan {

namespace {

constexpr const char* kRed = "\033[1;31m";
constexpr const char* kYellow = "\033[33m";
constexpr const char* kBold = "\033[1m";
constexpr const char* kReset = "\033[0m";

// Display width of UTF-8 text (code points; box-drawing characters are one column).
std::size_t columns(const std::string& s) {
  std::size_t n = 0;
  for (unsigned char c : s) n += (c & 0xC0) != 0x80;
  return n;
}

// Cuts a line to `width` columns ("..." at the end); width 0 never cuts (files, pipes). A
// "(file:line)" location is kept whole or dropped whole, never cut in the middle.
std::string cut(const std::string& s, int width) {
  if (width <= 3 || columns(s) <= static_cast<std::size_t>(width)) return s;
  std::string out;
  std::size_t n = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if ((c & 0xC0) != 0x80 && ++n > static_cast<std::size_t>(width - 3)) break;
    out += s[i];
  }
  auto open = out.rfind('(');
  if (open != std::string::npos && out.find(')', open) == std::string::npos &&
      s.find(':', open) < s.find(')', open)) {
    out.resize(open);
    while (!out.empty() && out.back() == ' ') out.pop_back();
  }
  return out + "...";
}

std::string human_bytes(std::uint64_t bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  std::size_t u = 0;
  while (v >= 1024 && u + 1 < std::size(kUnits)) {
    v /= 1024;
    ++u;
  }
  return u == 0 ? fmt::format("{} B", bytes) : fmt::format("{:.1f} {}", v, kUnits[u]);
}

// "podman:web (id 0123456789ab)", "containerd pod 1f2e...-8a9b (id 0123456789ab)": the runtime,
// its name for the container, the Kubernetes pod and the short id, whichever are known.
std::string container_words(const ContainerInfo& c) {
  std::string s = c.runtime;
  if (!c.name.empty()) s += (s.empty() ? "" : ":") + c.name;
  if (!c.pod_uid.empty()) s += (s.empty() ? "pod " : " pod ") + c.pod_uid;
  if (!c.id.empty()) s += fmt::format("{}(id {})", s.empty() ? "" : " ", c.id.substr(0, 12));
  return s;
}

// "rss 61.2 GiB of 64.0 GiB (cgroup)", "rss 1.2 GiB (peak 2.0 GiB)"; empty when unknown.
std::string memory_words(const Boxed<MemoryUsage>& m) {
  if (!m || !m->rss_bytes) return {};
  std::string s = "rss " + human_bytes(*m->rss_bytes);
  std::string gpu = m->gpu_bytes ? ", gpu " + human_bytes(*m->gpu_bytes) : std::string();
  if (m->cgroup_limit_bytes)
    return s + " of " + human_bytes(*m->cgroup_limit_bytes) + " (cgroup)" + gpu;
  if (m->peak_rss_bytes && *m->peak_rss_bytes > *m->rss_bytes)
    s += " (peak " + human_bytes(*m->peak_rss_bytes) + ")";
  return s + gpu;
}

class TextWriter {
 public:
  TextWriter(const JobSnapshot& job, const Analysis* a, const TextOptions& o)
      : job_(job), a_(a), o_(o), words_(a ? verdict_words(job, *a) : VerdictWords{}) {}

  std::string run() {
    bool single = job_.processes.size() == 1 && !job_.processes[0].rank;
    if (single) {
      process_block(0, true);
    } else {
      summary();
      if (a_) tree();
      details();
    }
    trailer();
    return std::move(out_);
  }

 private:
  std::string paint(const char* code, const std::string& s) const {
    return o_.color ? std::string(code) + s + kReset : s;
  }

  // Every line's text is escaped here, once (util/escape.h): names from the target (functions,
  // files, threads, command lines, sentences that quote them) can hold ESC, BEL or newlines.
  // Our own colour codes are added after, so only they reach the terminal raw.
  void line(const std::string& s) { visible_line(escape_for_text(s)); }
  // A line already escaped.
  void visible_line(const std::string& s) { out_ += cut(s, o_.width) + "\n"; }
  // A line whose colour codes must not be cut through: cut the plain text, then paint.
  void line(const char* code, const std::string& s) {
    out_ += paint(code, cut(escape_for_text(s), o_.width)) + "\n";
  }

  // ---- summary -------------------------------------------------------------------------
  void summary() {
    std::size_t ranks = std::count_if(job_.processes.begin(), job_.processes.end(),
                                      [](const ProcessSnapshot& p) { return p.rank.has_value(); });
    std::string s =
        fmt::format("hangscan: {} process{}, {} rank{}", job_.processes.size(),
                    job_.processes.size() == 1 ? "" : "es", ranks, ranks == 1 ? "" : "s");
    if (a_) s += fmt::format(", {} group{}", a_->groups.size(), a_->groups.size() == 1 ? "" : "s");
    if (a_ && a_->world_size) s += fmt::format(", world size {}", *a_->world_size);
    if (!job_.unreachable.empty()) {
      s += fmt::format(", {} unreachable node{}", job_.unreachable.size(),
                       job_.unreachable.size() == 1 ? "" : "s");
    }
    if (!job_.job_id.empty()) s += fmt::format(" (job {})", job_.job_id);
    line(kBold, s);
    if (!a_) return;
    for (const std::string& r : words_.suspect_reasons)
      out_ += paint(kRed, "SUSPECT") + " " + escape_for_text(r) + "\n";
    for (const std::string& n : words_.notes)
      out_ += paint(kYellow, "note") + ": " + escape_for_text(n) + "\n";
    for (const Group& g : a_->groups) {
      if (g.wait) line("timing: " + wait_sentence(job_, g, *g.wait));
    }
    for (const std::string& w : words_.wait_chains) line("waits: " + w);
    for (const std::string& d : words_.deadlocks) line("deadlock: " + d);
    if (words_.suspect_reasons.empty() && words_.notes.empty() && a_->grouped.size() < 2 &&
        !a_->grouped.empty()) {
      out_ += "note: only one process grouped\n";
    }
  }

  // ---- tree ----------------------------------------------------------------------------
  const char* thread_word() const {
    switch (a_->options.threads) {
      case GroupOptions::Threads::main:
        return "main thread";
      case GroupOptions::Threads::all:
        return "all threads";
      case GroupOptions::Threads::gil:
        return "GIL holder";
      case GroupOptions::Threads::matching:
        return "matching threads";
    }
    return "main thread";
  }

  std::string node_label(std::size_t n) const {
    const Frame& f = a_->trie.node(n).frame;
    if (a_->options.granularity == GroupOptions::Granularity::pc && f.kind != FrameKind::python) {
      return fmt::format("{} [{}+{:#x}]", f.function, base_name(f.module), f.offset);
    }
    return short_frame_label(f);
  }

  bool all_suspect(const std::vector<std::size_t>& members) const {
    return !members.empty() && std::all_of(members.begin(), members.end(),
                                           [&](std::size_t m) { return a_->is_suspect(m); });
  }

  std::string set_label(const std::vector<std::size_t>& members) const {
    return "[" + member_set_label(job_, members) + "]";
  }

  void tree() {
    if (a_->grouped.empty()) return;
    out_ += "\n";
    line(kBold, fmt::format("Stack tree ({}, outermost first):", thread_word()));
    branch(StackTrie::kRoot, "", true);
  }

  // Prints the children of `n` (and members whose stack ends at `n`) below `prefix`.
  void branch(std::size_t n, const std::string& prefix, bool show_ending) {
    const StackTrie& t = a_->trie;
    struct Item {
      std::size_t node;
      bool ending;
      std::size_t size;
    };
    std::vector<Item> items;
    for (std::size_t c : t.node(n).children) items.push_back({c, false, t.node(c).member_count});
    if (show_ending && !t.node(n).ending.empty())
      items.push_back({n, true, t.node(n).ending.size()});
    std::stable_sort(items.begin(), items.end(),
                     [](const Item& x, const Item& y) { return x.size > y.size; });
    std::size_t largest = items.empty() ? 0 : items.front().size;
    bool branching = items.size() > 1;
    for (std::size_t i = 0; i < items.size(); ++i) {
      bool last = i + 1 == items.size();
      std::string head = branching ? prefix + (last ? "└─" : "├─") : prefix;
      std::string rest = branching ? prefix + (last ? "  " : "│ ") : prefix;
      const Item& it = items[i];
      std::string mark;
      std::vector<std::size_t> members = it.ending ? t.node(n).ending : t.members(it.node);
      if (all_suspect(members)) mark = "  <- suspect";
      else if (branching && it.size < largest) mark = "  <- smallest";
      if (it.ending) {
        emit(head,
             set_label(members) + (n == StackTrie::kRoot ? " (no stack)" : " (stack ends here)"),
             mark);
        continue;
      }
      chain(it.node, head, rest, mark);
    }
  }

  void emit(const std::string& head, const std::string& text, const std::string& mark) {
    std::string s = cut(escape_for_text(head + text), o_.width - static_cast<int>(mark.size()));
    out_ +=
        s +
        (mark.empty() ? ""
                      : paint(mark.find("suspect") != std::string::npos ? kRed : kYellow, mark)) +
        "\n";
  }

  // A run of nodes with the same members and one child each prints flat; long runs elide.
  void chain(std::size_t first, const std::string& head, const std::string& rest,
             const std::string& mark) {
    const StackTrie& t = a_->trie;
    std::vector<std::size_t> run = {first};
    while (true) {
      const TrieNode& cur = t.node(run.back());
      if (cur.children.size() != 1 || !cur.ending.empty()) break;
      if (t.node(cur.children[0]).member_count != cur.member_count) break;
      run.push_back(cur.children[0]);
    }
    std::string label = set_label(t.members(first));
    std::string pad(columns(escape_for_text(label)) + 1, ' ');
    for (std::size_t i = 0; i < run.size(); ++i) {
      bool elide = run.size() > o_.max_chain && i >= 2 && i + 3 < run.size();
      if (elide) {
        if (i == 2) emit(rest, pad + fmt::format("... {} frames ...", run.size() - 5), "");
        continue;
      }
      bool last = i + 1 == run.size();
      if (i == 0) emit(head, label + " " + node_label(run[i]), last ? mark : "");
      else emit(rest, pad + node_label(run[i]), last ? mark : "");
    }
    const TrieNode& end = t.node(run.back());
    bool ending_branch = !end.ending.empty() && !end.children.empty();
    if (!end.children.empty()) branch(run.back(), rest, ending_branch);
  }

  // ---- details -------------------------------------------------------------------------
  void details() {
    std::vector<std::size_t> order(job_.processes.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto key = [&](std::size_t i) {
      const ProcessSnapshot& p = job_.processes[i];
      bool suspect = a_ && a_->is_suspect(i);
      return std::make_tuple(suspect ? 0 : 1, p.rank ? 0 : 1, p.rank.value_or(0), p.host, p.pid);
    };
    std::stable_sort(order.begin(), order.end(),
                     [&](std::size_t x, std::size_t y) { return key(x) < key(y); });
    std::set<std::size_t> shown;
    bool limited = job_.processes.size() > o_.detail_limit;
    if (limited && a_) {
      shown.insert(a_->suspect_members.begin(), a_->suspect_members.end());
      for (const Group& g : a_->groups) shown.insert(g.members.front());
    }
    out_ += "\n";
    line(kBold, "Processes:");
    std::size_t omitted = 0;
    for (std::size_t i : order) {
      if (limited && !shown.count(i)) {
        ++omitted;
        continue;
      }
      process_block(i, false);
    }
    if (omitted)
      line(fmt::format("({} more process{} like the ones above not shown)", omitted,
                       omitted == 1 ? "" : "es"));
  }

  std::string process_title(const ProcessSnapshot& p) const {
    std::string s =
        p.rank ? fmt::format("rank {}  pid {}", *p.rank, p.pid) : fmt::format("pid {}", p.pid);
    if (!p.host.empty()) s += "  host " + p.host;
    if (!p.role.empty() && p.role != "rank") s += "  " + p.role;
    if (p.state != '?') s += fmt::format("  state {}", p.state);
    std::string progress = progress_word(p);
    if (!progress.empty()) {
      s += "  " + progress;
      if (p.cpu_percent >= 0) s += fmt::format(" ({:.0f}% CPU)", p.cpu_percent);
    }
    if (p.python)
      s += "  python " + p.python->version + (p.python->nonblocking ? " (nonblocking)" : "") +
           (p.python->finalizing ? " (shutting down)" : "");
    if (!p.launcher.empty()) s += "  launcher " + p.launcher;
    if (p.container) s += "  container " + container_words(*p.container);
    if (p.pause_us > 0) s += fmt::format("  paused {} us", p.pause_us);
    std::string mem = memory_words(p.memory);
    if (!mem.empty()) s += "  " + mem;
    return s;
  }

  std::string cmdline(const ProcessSnapshot& p) const {
    std::string s;
    for (const std::string& a : p.cmdline) s += (s.empty() ? "" : " ") + a;
    return s.empty() ? p.exe : s;
  }

  void process_block(std::size_t i, bool single) {
    const ProcessSnapshot& p = job_.processes[i];
    std::string ind = single ? "" : "  ";
    if (single) {
      std::string cmd = cmdline(p);
      line(kBold, fmt::format("Process {}{}{}", p.pid, cmd.empty() ? "" : ": " + cmd,
                              p.host.empty() ? "" : " (" + p.host + ")"));
      std::string facts;
      if (p.state != '?') facts += fmt::format("state {}", p.state);
      if (p.python)
        facts += std::string(facts.empty() ? "" : ", ") + "Python " + p.python->version +
                 (p.python->nonblocking ? " (read without stopping)" : "") +
                 (p.python->finalizing ? ", the interpreter is shutting down" : "") +
                 (p.python->gc_collecting ? ", garbage collecting" : "");
      if (p.container)
        facts += (facts.empty() ? "container " : ", container ") + container_words(*p.container);
      if (p.pause_us > 0)
        facts += fmt::format("{}paused {} us", facts.empty() ? "" : ", ", p.pause_us);
      std::string mem = memory_words(p.memory);
      if (!mem.empty()) facts += (facts.empty() ? "" : ", ") + mem;
      if (!facts.empty()) line(facts);
      // A plain dump has no summary: a deadlock is said right under the process's title.
      if (a_) {
        for (const std::string& d : words_.deadlocks) line("deadlock: " + d);
      }
    } else {
      out_ += "\n";
      bool suspect = a_ && a_->is_suspect(i);
      std::string title = process_title(p);
      if (suspect) line(kRed, title + "  SUSPECT");
      else line(kBold, title);
      std::string cmd = cmdline(p);
      if (!cmd.empty()) line(ind + "cmd: " + cmd);
    }
    core_lines(p, ind);
    if (p.death) line(kRed, ind + "died: " + death_words(*p.death));
    for (const ThreadSnapshot& t : p.threads) {
      if (!o_.all_threads && !is_main_thread(p, t) && !t.crashed) continue;
      thread_block(t, ind, p.captured_at);
    }
    if (p.threads.empty()) line(ind + "(no threads captured)");
    asyncio_block(p, ind);
    for (const Diagnostic& d : p.diagnostics) diagnostic(d, ind);
  }

  // "Task "consumer" awaits task "producer"", then where its coroutines are suspended.
  void asyncio_block(const ProcessSnapshot& p, const std::string& ind) {
    if (p.asyncio_tasks.empty()) return;
    if (ind.empty()) out_ += "\n";
    line(kBold, fmt::format("{}asyncio tasks ({}):", ind, p.asyncio_tasks.size()));
    for (const AsyncioTask& t : p.asyncio_tasks) {
      std::string waits = t.awaits_task      ? " awaits task \"" + *t.awaits_task + "\""
                          : t.awaits.empty() ? ""
                                             : " awaits a " + t.awaits;
      line(fmt::format("{}  Task \"{}\"{}", ind, t.name, waits));
      for (const Frame& f : t.coroutines) frame(f, ind + "      ");
      if (t.coroutines.empty()) line(ind + "      (not started)");
    }
  }

  void core_lines(const ProcessSnapshot& p, const std::string& ind) {
    if (!p.core) return;
    line(ind + "core: " + p.core->path);
    if (p.core->signal) {
      const SignalInfo& s = *p.core->signal;
      std::string addr = s.address ? fmt::format(" at {:#x}", *s.address) : "";
      line(kRed, ind + fmt::format("signal: {} ({}){}, code {}", s.name, s.number, addr, s.code));
    }
    for (const std::string& a : p.core->annotations) line(ind + "crash: " + a);
    for (const std::string& o : p.core->omitted) line(ind + "omitted from core: " + o);
  }

  // "blocked 4.1 s", and where the figure comes from when an earlier stop shaped it.
  static std::string blocked_words(const ThreadSnapshot& t, std::optional<double> captured_at) {
    std::string out = "blocked " + seconds_words(*t.blocked_s);
    if (t.blocked_first_seen_at && captured_at) {
      auto since = static_cast<std::time_t>(*captured_at - *t.blocked_s);
      std::tm local{};
      char clock[16] = "?";
      if (::localtime_r(&since, &local)) std::strftime(clock, sizeof clock, "%H:%M:%S", &local);
      out += fmt::format(" (since {}, first seen by an earlier dump)", clock);
    } else if (t.syscall && *t.syscall == "restart_syscall") {
      out += " (counts only since an earlier stop)";
    }
    return out;
  }

  void thread_block(const ThreadSnapshot& t, const std::string& ind,
                    std::optional<double> captured_at) {
    std::vector<std::string> facts;
    if (t.is_main) facts.push_back("main");
    if (t.crashed) facts.push_back("CRASHED");
    if (t.state != '?') facts.push_back(fmt::format("state {}", t.state));
    if (t.syscall) facts.push_back(*t.syscall);
    if (t.blocked_s) facts.push_back(blocked_words(t, captured_at));
    if (t.wchan && !t.wchan->empty() && *t.wchan != "0") facts.push_back("wchan " + *t.wchan);
    if (t.gil.value_or(false)) facts.push_back("holds GIL");
    if (t.python_idle.value_or(false)) facts.push_back("idle");
    if (t.python_name) facts.insert(facts.begin(), "Python \"" + *t.python_name + "\"");
    if (t.gc_collecting) facts.push_back("garbage collecting");
    if (t.finalizing) facts.push_back("the interpreter is shutting down");
    std::string joined;
    for (const std::string& f : facts) joined += (joined.empty() ? "" : ", ") + f;
    if (ind.empty()) out_ += "\n";  // a plain dump separates threads like py-spy; jobs stay dense
    std::string head =
        fmt::format("{}Thread {}{}{}", ind, t.tid, t.name.empty() ? "" : " \"" + t.name + "\"",
                    joined.empty() ? "" : " (" + joined + ")");
    line(t.crashed ? kRed : kBold, head);
    std::string fi = ind + "    ";
    for (const Frame& f : t.frames) frame(f, fi);
    if (t.frames.empty() && t.native_frames.empty())
      line(fi + (t.finalizing ? "(no frames: the interpreter is shutting down)" : "(no frames)"));
    if (!t.native_frames.empty()) {
      line(ind + "  native:");
      for (const Frame& f : t.native_frames) frame(f, fi);
    }
    if (!t.kernel_frames.empty()) {
      line(ind + "  kernel:");
      for (const Frame& f : t.kernel_frames) frame(f, fi);
    }
    for (const WaitEdge& e : t.waits_on) line(ind + "  waits on: " + wait_edge_words(e));
    for (const std::string& n : t.notes) line(kYellow, ind + "  note: " + n);
  }

  // "rank 1 (n2:4242) via tcp 10.0.0.1:40312 -> 10.0.0.2:29502", "pipe:[77] (...)".
  static std::string wait_edge_words(const WaitEdge& e) {
    if (!e.pid) return e.via;
    if (e.tid) return fmt::format("thread {} of pid {} via {}", *e.tid, *e.pid, e.via);
    std::string who =
        e.host.empty() ? fmt::format("pid {}", *e.pid) : fmt::format("{}:{}", e.host, *e.pid);
    if (e.rank) who = fmt::format("rank {} ({})", *e.rank, who);
    return who + " via " + e.via;
  }

  void frame(const Frame& f, const std::string& ind) {
    line(ind + frame_line(f));
    for (const std::string& s : source_marker(f)) visible_line(ind + "    " + s);  // escaped
    for (const Local& l : f.locals) {  // a value is a repr: its backslashes are escapes already
      visible_line(escape_for_text(ind + "    " + l.name + " = ") +
                   escape_for_text(l.value, Backslashes::kept));
    }
  }

  void diagnostic(const Diagnostic& d, const std::string& ind) {
    std::string where;
    if (!d.host.empty()) where += d.host + ": ";
    line(d.severity == Diagnostic::Severity::error ? kRed : kYellow,
         fmt::format("{}{}: {}{}", ind, severity_name(d.severity), where, d.message));
    if (!d.hint.empty()) line(ind + "  hint: " + d.hint);
  }

  // ---- trailer -------------------------------------------------------------------------
  void trailer() {
    if (!job_.diagnostics.empty()) {
      out_ += "\n";
      line(kBold, "Diagnostics:");
      for (const Diagnostic& d : job_.diagnostics) diagnostic(d, "  ");
    }
    if (!job_.deaths.empty() && !a_) {
      out_ += "\n";
      line(kBold, "Deaths in the job's window (kernel log):");
      for (const Death& d : job_.deaths) {
        line(kRed, fmt::format("  pid {} ({}){}: {}", d.pid.value_or(0), d.comm,
                               d.host.empty() ? "" : " on " + d.host, death_words(d)));
      }
    }
    if (!job_.unreachable.empty()) {
      out_ += "\n";
      line(kBold, "Unreachable nodes:");
      for (const UnreachableNode& u : job_.unreachable) line(kRed, "  " + u.host + ": " + u.reason);
    }
  }

  const JobSnapshot& job_;
  const Analysis* a_;
  const TextOptions& o_;
  VerdictWords words_;  // the verdict's sentences (report/finding_words.h)
  std::string out_;
};

}  // namespace

std::string frame_line(const Frame& f) {
  std::string s;
  if (f.file && f.line) {
    s = fmt::format("{} ({}:{})", f.function, *f.file, *f.line);
  } else if ((f.kind == FrameKind::native || f.kind == FrameKind::inline_frame) &&
             !(f.module.empty() && f.offset == 0)) {  // a frame of words only (a gap) has neither
    // The offset is the module's (as in JSON), so it goes with the module, not the function.
    s = fmt::format("{} [{}+{:#x}]", f.function, base_name(f.module), f.offset);
  } else {
    s = f.function;
  }
  if (f.kind == FrameKind::inline_frame) s += " [inline]";
  return s;
}

std::string write_text(const JobSnapshot& job, const Analysis* analysis, const TextOptions& opts) {
  return TextWriter(job, analysis, opts).run();
}

void write_text(std::ostream& out, const JobSnapshot& job, const Analysis* analysis,
                const TextOptions& opts) {
  out << write_text(job, analysis, opts);
}

}  // namespace hangscan
