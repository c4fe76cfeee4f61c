#include "proc/process_tree.h"

#include <algorithm>
#include <set>

#include <fmt/format.h>

#include "proc/proc_files.h"

namespace hangscan {

namespace {

bool by_pid(const ProcessEntry& a, const ProcessEntry& b) { return a.pid < b.pid; }

}  // namespace

ProcessTree ProcessTree::scan(const std::string& proc_root) {
  std::vector<ProcessEntry> entries;
  for (int pid : list_pids(proc_root)) {
    // Gone since the listing: not part of the snapshot.
    auto text = read_text_file(fmt::format("{}/{}/stat", proc_root, pid), 4096);
    if (!text) continue;
    auto st = parse_stat(*text);
    if (!st) continue;
    entries.push_back(ProcessEntry{st->pid, st->ppid, st->comm, st->state, st->is_kernel_thread(),
                                   st->start_time});
  }
  return ProcessTree(std::move(entries));
}

ProcessTree::ProcessTree(std::vector<ProcessEntry> entries) : entries_(std::move(entries)) {
  std::sort(entries_.begin(), entries_.end(), by_pid);
}

const ProcessEntry* ProcessTree::find(int pid) const {
  ProcessEntry key;
  key.pid = pid;
  auto it = std::lower_bound(entries_.begin(), entries_.end(), key, by_pid);
  if (it == entries_.end() || it->pid != pid) return nullptr;
  return &*it;
}

std::vector<int> ProcessTree::children(int pid) const {
  std::vector<int> out;
  for (const auto& e : entries_)
    if (e.ppid == pid && e.pid != pid) out.push_back(e.pid);
  return out;
}

std::vector<int> ProcessTree::descendants(int pid) const {
  std::vector<int> out;
  std::set<int> seen{pid};
  std::vector<int> frontier{pid};
  while (!frontier.empty()) {
    std::vector<int> next;
    for (int p : frontier) {
      for (int c : children(p)) {
        if (!seen.insert(c).second) continue;
        out.push_back(c);
        next.push_back(c);
      }
    }
    frontier = std::move(next);
  }
  return out;
}

std::vector<int> ProcessTree::ancestors(int pid) const {
  std::vector<int> out;
  std::set<int> seen{pid};
  const ProcessEntry* e = find(pid);
  while (e != nullptr && e->ppid > 0 && seen.insert(e->ppid).second) {
    out.push_back(e->ppid);
    e = find(e->ppid);
  }
  return out;
}

bool ProcessTree::is_ancestor(int ancestor, int pid) const {
  auto a = ancestors(pid);
  return std::find(a.begin(), a.end(), ancestor) != a.end();
}

namespace {

// A NUL-separated /proc file (cmdline, environ) as its items; empty when unreadable.
std::vector<std::string> read_nul_file(const std::string& path, std::size_t max_bytes) {
  auto text = read_text_file(path, max_bytes);
  if (!text || text->empty()) return {};
  std::string_view v(*text);
  if (v.back() == '\0') v.remove_suffix(1);
  return split_nul(v);
}

}  // namespace

std::vector<std::string> process_cmdline(int pid, const std::string& proc_root) {
  return read_nul_file(fmt::format("{}/{}/cmdline", proc_root, pid), 1 << 20);
}

std::vector<std::string> process_environ_file(int pid, const std::string& proc_root) {
  return read_nul_file(fmt::format("{}/{}/environ", proc_root, pid), 1 << 22);
}

std::string joined_cmdline(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out += ' ';
    out += a;
  }
  return out;
}

Result<Pattern> compile_match_pattern(const std::string& regex) {
  if (regex.empty()) {
    return Error(Errc::usage, "--match pattern is empty: it would match every process", 0,
                 "give a regular expression of the command lines to capture, e.g. --match "
                 "'python.*train.py'");
  }
  if (regex.size() > kMaxPatternLength) {
    return Error(Errc::usage,
                 fmt::format("--match pattern is {} characters long; at most {} are accepted",
                             regex.size(), kMaxPatternLength),
                 0, "match a shorter, distinctive part of the command line");
  }
  auto compiled = Pattern::compile(regex, {Pattern::Syntax::posix_extended});
  if (!compiled) {
    return Error(Errc::usage,
                 fmt::format("invalid --match pattern '{}': {}", regex, compiled.error().message),
                 0, "the pattern is a POSIX extended regular expression, as for 'pgrep -f'");
  }
  return compiled;
}

Result<std::vector<int>> match_processes(const ProcessTree& tree, const std::string& regex,
                                         const std::vector<int>& exclude,
                                         const std::string& proc_root) {
  auto compiled = compile_match_pattern(regex);
  if (!compiled) return std::move(compiled).error();
  const Pattern& re = *compiled;
  std::vector<int> out;
  for (const auto& e : tree.entries()) {
    if (e.kernel_thread) continue;
    if (std::find(exclude.begin(), exclude.end(), e.pid) != exclude.end()) continue;
    auto argv = process_cmdline(e.pid, proc_root);
    if (argv.empty()) continue;
    std::string line = joined_cmdline(argv);
    if (line.size() > kMaxMatchedCmdline) line.resize(kMaxMatchedCmdline);
    if (re.search(line)) out.push_back(e.pid);
  }
  return out;
}

}  // namespace hangscan
