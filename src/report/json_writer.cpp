// The hangscan/1 JSON writer.
#include "report/json_writer.h"

#include <fmt/format.h>

#include "report/finding_json.h"
#include "report/finding_words.h"

namespace hangscan {

using nlohmann::json;

namespace {

json state_json(char s) { return s == '?' || s == '\0' ? json(nullptr) : json(std::string(1, s)); }

json string_or_null(const std::string& s) { return s.empty() ? json(nullptr) : json(s); }

json stack_json(const std::vector<Frame>& frames, StackInterner* stacks) {
  if (stacks) return json(stacks->intern(frames));
  return frames_to_json(frames);
}

const char* threads_name(GroupOptions::Threads t) {
  switch (t) {
    case GroupOptions::Threads::main:
      return "main";
    case GroupOptions::Threads::all:
      return "all";
    case GroupOptions::Threads::gil:
      return "gil";
    case GroupOptions::Threads::matching:
      return "matching";
  }
  return "main";
}

const char* granularity_name(GroupOptions::Granularity g) {
  switch (g) {
    case GroupOptions::Granularity::function:
      return "function";
    case GroupOptions::Granularity::function_line:
      return "function_line";
    case GroupOptions::Granularity::pc:
      return "pc";
  }
  return "function";
}

void add_analysis(json& doc, const JobSnapshot& job, const Analysis* a, StackInterner* stacks) {
  if (!a) {
    for (const char* k : {"groups", "suspects", "suspect_reasons", "suspect_members",
                          "missing_ranks", "notes", "wait_chains", "findings", "grouping"}) {
      doc[k] = nullptr;
    }
    return;
  }
  json groups = json::array();
  for (const Group& g : a->groups) {
    json wait = nullptr;
    if (g.wait) {
      const ProcessSnapshot& last = job.processes[g.wait->last];
      wait = {
          {"longest_s", g.wait->longest_s},
          {"shortest_s", g.wait->shortest_s},
          {"spread_s", g.wait->spread_s()},
          {"last", {{"host", last.host}, {"pid", last.pid}, {"rank", json_or_null(last.rank)}}}};
    }
    groups.push_back({{"ranks", g.ranks},
                      {"pids", g.pids},
                      {"hosts", g.hosts},
                      {"suspect", g.suspect},
                      {"frames", stack_json(g.frames, stacks)},
                      {"wait", std::move(wait)}});
  }
  doc["groups"] = std::move(groups);
  VerdictWords words = verdict_words(job, *a);  // the sentences (report/finding_words.h)
  doc["suspects"] = a->suspects;
  doc["suspect_reasons"] = std::move(words.suspect_reasons);
  json members = json::array();
  for (std::size_t m : a->suspect_members) {
    const ProcessSnapshot& p = job.processes[m];
    members.push_back({{"host", p.host}, {"pid", p.pid}, {"rank", json_or_null(p.rank)}});
  }
  doc["suspect_members"] = std::move(members);
  doc["missing_ranks"] = a->missing_ranks;
  doc["notes"] = std::move(words.notes);
  doc["wait_chains"] = std::move(words.wait_chains);
  doc["findings"] = findings_to_json(job, *a);  // the same as data (report/finding_json.h)
  if (!words.deadlocks.empty()) doc["deadlocks"] = std::move(words.deadlocks);  // only when found
  if (!a->last_logs.empty()) {                                                  // only with --logs
    json logs = json::array();
    for (const RankLastLog& l : a->last_logs) {
      logs.push_back({{"rank", l.rank},
                      {"file", l.file},
                      {"line", l.line},
                      {"kind", l.kind},
                      {"text", l.text},
                      {"before_capture_s", json_or_null(l.before_capture_s)},
                      {"where", string_or_null(l.where)}});
    }
    doc["last_logs"] = std::move(logs);
  }
  doc["grouping"] = {{"threads", threads_name(a->options.threads)},
                     {"granularity", granularity_name(a->options.granularity)},
                     {"top_n", a->options.top_n},
                     {"thread_regex", string_or_null(a->options.thread_regex)}};
}

}  // namespace

std::string hex_string(std::uint64_t v) { return fmt::format("{:#x}", v); }

json frame_to_json(const Frame& f) {
  bool native = f.kind == FrameKind::native || f.kind == FrameKind::inline_frame;
  json locals = json::array();
  for (const Local& l : f.locals) locals.push_back({{"name", l.name}, {"value", l.value}});
  return {{"kind", frame_kind_name(f.kind)},
          {"function", f.function},
          {"file", json_or_null(f.file)},
          {"line", json_or_null(f.line)},
          {"module", f.module},
          {"pc", native || f.pc ? json(hex_string(f.pc)) : json(nullptr)},
          {"offset", native || f.offset ? json(hex_string(f.offset)) : json(nullptr)},
          {"build_id", string_or_null(f.build_id)},
          {"locals", std::move(locals)},
          {"column", json_or_null(f.column)},
          {"end_line", json_or_null(f.end_line)},
          {"end_column", json_or_null(f.end_column)},
          {"source", json_or_null(f.source)}};
}

json frames_to_json(const std::vector<Frame>& frames) {
  json out = json::array();
  for (const Frame& f : frames) out.push_back(frame_to_json(f));
  return out;
}

json diagnostic_to_json(const Diagnostic& d) {
  return {{"severity", severity_name(d.severity)},
          {"message", d.message},
          {"hint", d.hint},
          {"host", d.host},
          {"pid", json_or_null(d.pid)},
          {"tid", json_or_null(d.tid)}};
}

json waits_json(const std::vector<WaitEdge>& edges) {
  json out = json::array();
  for (const WaitEdge& e : edges) {
    json edge = {{"host", string_or_null(e.host)},
                 {"pid", json_or_null(e.pid)},
                 {"rank", json_or_null(e.rank)},
                 {"via", e.via}};
    if (e.tid) edge["tid"] = *e.tid;  // only mutex owners: other edges' documents stay as they were
    out.push_back(std::move(edge));
  }
  return out;
}

json thread_to_json(const ThreadSnapshot& t, StackInterner* stacks) {
  json out = {{"tid", t.tid},
              {"name", t.name},
              {"state", state_json(t.state)},
              {"wchan", json_or_null(t.wchan)},
              {"syscall", json_or_null(t.syscall)},
              {"is_main", t.is_main},
              {"gil", json_or_null(t.gil)},
              {"python_idle", json_or_null(t.python_idle)},
              {"python_name", json_or_null(t.python_name)},
              {"gc_collecting", t.gc_collecting},
              {"finalizing", t.finalizing},
              {"crashed", t.crashed},
              {"incomplete", t.incomplete},
              {"cpu_ticks", t.cpu_ticks},
              {"blocked_s", json_or_null(t.blocked_s)},
              {"waits_on", waits_json(t.waits_on)},
              {"frames", stack_json(t.frames, stacks)},
              {"native_frames", stack_json(t.native_frames, stacks)},
              {"kernel_frames", stack_json(t.kernel_frames, stacks)},
              {"notes", t.notes}};
  // Only when carried from an earlier dump: other documents stay as they were.
  if (t.blocked_first_seen_at) out["blocked_first_seen_at"] = *t.blocked_first_seen_at;
  if (t.capture)
    out["capture"] = *t.capture;  // live captures only: cores' documents stay as they were
  return out;
}

json memory_json(const Boxed<MemoryUsage>& m) {
  if (!m) return nullptr;
  return {{"rss_bytes", json_or_null(m->rss_bytes)},
          {"peak_rss_bytes", json_or_null(m->peak_rss_bytes)},
          {"cgroup", string_or_null(m->cgroup)},
          {"cgroup_usage_bytes", json_or_null(m->cgroup_usage_bytes)},
          {"cgroup_limit_bytes", json_or_null(m->cgroup_limit_bytes)},
          {"gpu_bytes", json_or_null(m->gpu_bytes)}};
}

json container_json(const Boxed<ContainerInfo>& c) {
  if (!c) return nullptr;
  return {{"runtime", c->runtime}, {"id", c->id}, {"name", c->name}, {"pod_uid", c->pod_uid}};
}

json death_json(const Death& d) {
  return {{"how", d.how},
          {"signal", json_or_null(d.signal)},
          {"signal_name", string_or_null(d.signal_name)},
          {"exit_code", json_or_null(d.exit_code)},
          {"core_dumped", d.core_dumped},
          {"at", json_or_null(d.at)},
          {"cgroup", string_or_null(d.cgroup)},
          {"limit_bytes", json_or_null(d.limit_bytes)},
          {"rss_bytes", json_or_null(d.rss_bytes)},
          {"detail", string_or_null(d.detail)},
          {"core", string_or_null(d.core)},
          {"evidence", d.evidence},
          {"pid", json_or_null(d.pid)},
          {"comm", string_or_null(d.comm)},
          {"host", string_or_null(d.host)},
          {"rank", json_or_null(d.rank)},
          {"slurm", d.slurm_step.empty() ? json(nullptr)
                                         : json{{"step", d.slurm_step},
                                                {"state", d.slurm_state},
                                                {"exit_code", d.slurm_exit_code}}}};
}

json process_to_json(const ProcessSnapshot& p, StackInterner* stacks) {
  json threads = json::array();
  for (const ThreadSnapshot& t : p.threads) threads.push_back(thread_to_json(t, stacks));
  json diags = json::array();
  for (const Diagnostic& d : p.diagnostics) diags.push_back(diagnostic_to_json(d));
  json python = nullptr;
  if (p.python) {
    python = {{"version", p.python->version},
              {"nonblocking", p.python->nonblocking},
              {"locator", p.python->locator},
              {"finalizing", p.python->finalizing},
              {"gc_collecting", p.python->gc_collecting}};
  }
  json tasks = json::array();
  for (const AsyncioTask& t : p.asyncio_tasks) {
    tasks.push_back({{"name", t.name},
                     {"address", hex_string(t.address)},
                     {"awaits_task", json_or_null(t.awaits_task)},
                     {"awaits", string_or_null(t.awaits)},
                     {"coroutines", frames_to_json(t.coroutines)}});
  }
  json core = nullptr, signal = nullptr, crashed_tid = nullptr;
  json annotations = json::array(), omitted = json::array();
  if (p.core) {
    core = p.core->path;
    if (p.core->signal) {
      const SignalInfo& s = *p.core->signal;
      signal = {{"number", s.number},
                {"name", s.name},
                {"address", s.address ? json(hex_string(*s.address)) : json(nullptr)},
                {"code", s.code}};
    }
    crashed_tid = json_or_null(p.core->crashed_tid);
    annotations = p.core->annotations;
    omitted = p.core->omitted;
  }
  return {{"host", p.host},
          {"pid", p.pid},
          {"ppid", p.ppid},
          {"start_ticks", p.start_ticks},
          {"rank", json_or_null(p.rank)},
          {"world_size", json_or_null(p.world_size)},
          {"local_rank", json_or_null(p.local_rank)},
          {"launcher", p.launcher},
          {"role", p.role},
          {"cmdline", p.cmdline},
          {"exe", p.exe},
          {"state", state_json(p.state)},
          {"cpu_percent", p.cpu_percent < 0 ? json(nullptr) : json(p.cpu_percent)},
          {"progress", json_or_null(p.progress)},
          {"pause_us", p.pause_us},
          {"captured_at", json_or_null(p.captured_at)},
          {"memory", memory_json(p.memory)},
          {"death", p.death ? death_json(*p.death) : json(nullptr)},
          {"tcp_connections", p.tcp_connections},
          {"container", container_json(p.container)},
          {"python", std::move(python)},
          {"asyncio_tasks", std::move(tasks)},
          {"core", std::move(core)},
          {"signal", std::move(signal)},
          {"crashed_tid", std::move(crashed_tid)},
          {"annotations", std::move(annotations)},
          {"omitted", std::move(omitted)},
          {"threads", std::move(threads)},
          {"diagnostics", std::move(diags)}};
}

json job_to_json(const JobSnapshot& job, const Analysis* analysis, StackInterner* stacks) {
  json doc;
  doc["schema"] = kSchemaName;
  doc["job_id"] = string_or_null(job.job_id);
  doc["expected_world_size"] = json_or_null(job.expected_world_size);
  json processes = json::array();
  for (const ProcessSnapshot& p : job.processes) processes.push_back(process_to_json(p, stacks));
  doc["processes"] = std::move(processes);
  add_analysis(doc, job, analysis, stacks);
  json unreachable = json::array();
  for (const UnreachableNode& u : job.unreachable)
    unreachable.push_back({{"host", u.host}, {"reason", u.reason}});
  doc["unreachable"] = std::move(unreachable);
  json diags = json::array();
  for (const Diagnostic& d : job.diagnostics) diags.push_back(diagnostic_to_json(d));
  doc["diagnostics"] = std::move(diags);
  json deaths = json::array();
  for (const Death& d : job.deaths) {
    deaths.push_back(death_json(d));
    if (!analysis) continue;  // an agent's document: the front end links
    json& out = deaths.back();
    out["rank_from"] = nullptr;
    for (const Finding& f : analysis->findings) {  // the rank the analysis linked it to
      if (!f.rank || f.kind != FindingKind::death || f.death != d) continue;
      if (!d.rank) out["rank"] = *f.rank;
      if (out["rank"] == *f.rank) out["rank_from"] = rank_from_name(f.rank_from);
    }
  }
  doc["deaths"] = std::move(deaths);
  return doc;
}

std::string write_json(const JobSnapshot& job, const Analysis* analysis, int indent) {
  return job_to_json(job, analysis).dump(indent, ' ', false, json::error_handler_t::replace) + "\n";
}

void write_json(std::ostream& out, const JobSnapshot& job, const Analysis* analysis, int indent) {
  out << write_json(job, analysis, indent);
}

}  // namespace hangscan
