#include "logs/log_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <glob.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <string_view>

#include "group/rank_set.h"
#include "logs/log_patterns.h"
#include "util/parse_number.h"

namespace hangscan {

namespace {

// One open log: a plain file read with read(2), or a gzip stream through zlib.
class LogSource {
 public:
  static std::unique_ptr<LogSource> open(const std::string& path, LogFile& file) {
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
      file.error = std::strerror(errno);
      return nullptr;
    }
    struct stat st {};
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      file.error = "not a regular file";
      ::close(fd);
      return nullptr;
    }
    file.modified = static_cast<double>(st.st_mtim.tv_sec) + st.st_mtim.tv_nsec / 1e9;
    unsigned char magic[2] = {0, 0};
    bool gz = ::pread(fd, magic, 2, 0) == 2 && magic[0] == 0x1f && magic[1] == 0x8b;
    auto src = std::unique_ptr<LogSource>(new LogSource(fd));
    if (gz) {
      src->gz_ = ::gzdopen(fd, "rb");
      if (!src->gz_) {
        file.error = "cannot read gzip stream";
        return nullptr;
      }
      src->fd_ = -1;  // gzclose closes it
      file.compressed = true;
    }
    return src;
  }
  // A log already in memory (read elsewhere, e.g. with the job's user's rights).
  static std::unique_ptr<LogSource> of_text(std::string_view text) {
    auto src = std::unique_ptr<LogSource>(new LogSource(-1));
    src->text_ = text;
    return src;
  }
  ~LogSource() {
    if (gz_) ::gzclose(gz_);
    if (fd_ >= 0) ::close(fd_);
  }
  // Bytes read into buf; 0 at the end; -1 on an error (`why` says which).
  long read(char* buf, std::size_t size, std::string& why) {
    if (gz_) {
      int n = ::gzread(gz_, buf, static_cast<unsigned>(size));
      if (n < 0) {
        int code = 0;
        why = ::gzerror(gz_, &code);
      }
      return n;
    }
    if (fd_ < 0) {
      std::size_t n = std::min(size, text_.size());
      std::memcpy(buf, text_.data(), n);
      text_.remove_prefix(n);
      return static_cast<long>(n);
    }
    ssize_t n = ::read(fd_, buf, size);
    if (n < 0) why = std::strerror(errno);
    return n;
  }

 private:
  explicit LogSource(int fd) : fd_(fd) {}
  int fd_ = -1;
  gzFile gz_ = nullptr;
  std::string_view text_;  // of_text(): what is left to read
};

// What a rank label's lines are in the middle of: a traceback, torchrun's summary.
struct LabelState {
  bool traceback = false;
  std::string where;        // the traceback's innermost frame so far
  bool summary = false;     // inside torchrun's "Failures:" / "Root Cause" blocks
  bool root_cause = false;  // inside the "Root Cause" block
  LogEvent failure;         // the block being read
  bool has_failure = false;
};

// An exception that only says a peer went away or a collective timed out: the rank raising it
// is the victim of another rank's failure, not its cause.
bool is_consequence(std::string_view line) {
  if (auto e = classify_log_line(line)) {
    if (e->kind == LogKind::gloo_timeout || e->kind == LogKind::peer_closed ||
        e->kind == LogKind::collective_timeout || e->kind == LogKind::dump_signal)
      return true;
  }
  for (std::string_view words : {"DistBackendError", "NCCL communicator was aborted",
                                 "Connection reset by peer", "DistNetworkError"}) {
    if (line.find(words) != std::string_view::npos) return true;
  }
  return false;
}

// Lines Slurm and the kernel write about a job, a step or a node (a batch script's output, a
// kernel log): the file's name never gives their rank ("my-job-26601.out" is no rank 26601).
bool job_level(LogKind kind) {
  return kind == LogKind::slurm_cancelled || kind == LogKind::slurm_oom ||
         kind == LogKind::srun_task || kind == LogKind::kernel_oom ||
         kind == LogKind::torchrun_stop;
}

std::string_view field_value(std::string_view rest, std::string_view name) {
  std::string_view t = trim_space(rest);
  if (t.substr(0, name.size()) != name) return {};
  t.remove_prefix(name.size());
  t = trim_space(t);
  if (t.empty() || t.front() != ':') return {};
  return trim_space(t.substr(1));
}

class LineReader {
 public:
  LineReader(LogSet& set, std::size_t file, const LogReadOptions& o)
      : set_(set), file_(file), options_(o) {}

  void line(std::string_view text, std::uint64_t number) {
    number_ = number;
    if (text.find_first_not_of(" \t") != std::string_view::npos) {
      LogFile& file = set_.files[file_];
      file.last_line.assign(text.substr(0, kMaxEventText));
      file.last_line_number = number;
    }
    text_ = text;
    LinePrefix prefix = parse_line_prefix(text, false);
    auto& labels = set_.files[file_].label_last_lines;
    if (prefix.rank && prefix.rest.find_first_not_of(" \t") != std::string_view::npos &&
        (labels.size() < options_.max_labels || labels.count(*prefix.rank))) {
      auto& last = labels[*prefix.rank];
      last.first = number;
      last.second.assign(text.substr(0, kMaxEventText));
    }
    // One state per label, bounded: past max_labels labels, new ones share the unlabelled state.
    int label = prefix.rank.value_or(-1);
    if (states_.size() >= options_.max_labels && !states_.count(label)) label = -1;
    LabelState& st = states_[label];
    std::string_view rest = prefix.rest;
    if (summary(st, rest, prefix)) return;
    traceback(st, rest, prefix);
    if (auto e = classify_log_line(text)) add(std::move(*e), prefix);
  }

  void finish() {
    for (auto& [label, st] : states_) flush_failure(st);
  }

 private:
  void add(LogEvent e, const LinePrefix& prefix) {
    if (set_.events.size() >= options_.max_events) {
      ++set_.dropped_events;
      return;
    }
    e.file = file_;
    e.line = number_;
    if (!e.rank) e.rank = prefix.rank;
    if (!e.rank && !job_level(e.kind)) e.rank = set_.files[file_].rank;
    if (e.kind == LogKind::srun_task) return add_tasks(std::move(e));
    set_.events.push_back(std::move(e));
  }

  // srun names a task list ("tasks 0-3"): one event per task, whose id is its rank.
  void add_tasks(LogEvent e) {
    auto tasks = RankSet::parse(e.what, 1u << 16);
    if (!tasks || tasks->empty()) return set_.events.push_back(std::move(e));
    for (int t : tasks->values()) {
      LogEvent one = e;
      one.rank = t;
      one.what = "task " + std::to_string(t);
      if (set_.events.size() >= options_.max_events) {
        ++set_.dropped_events;
        continue;
      }
      set_.events.push_back(std::move(one));
    }
  }

  // Python's traceback: the innermost "File ..., line N, in F" and the exception line.
  void traceback(LabelState& st, std::string_view rest, const LinePrefix& prefix) {
    if (rest.substr(0, 35) == "Traceback (most recent call last):") {
      st.traceback = true;
      st.where.clear();
      return;
    }
    if (!st.traceback) return;
    if (rest.empty()) return;
    if (rest.front() == ' ' || rest.front() == '\t') {
      std::string_view t = trim_space(rest);
      if (t.substr(0, 6) == "File \"") frame(st, t);
      return;
    }
    st.traceback = false;
    LogEvent e;
    e.kind = LogKind::exception;
    e.what = std::string(rest.substr(0, 300));
    e.where = st.where;
    e.time = parse_line_prefix(text_).time;
    if (is_consequence(rest)) e.op = "communication";
    e.text = std::string(rest.substr(0, kMaxEventText));
    add(std::move(e), prefix);
  }

  static void frame(LabelState& st, std::string_view t) {
    // File "PATH", line N, in FUNC
    std::size_t q = t.find("\", line ", 6);
    if (q == std::string_view::npos) return;
    std::string_view path = t.substr(6, q - 6);
    std::string_view after = t.substr(q + 8);
    std::size_t comma = after.find(", in ");
    std::string_view line = after.substr(0, comma);
    std::string_view func = comma == std::string_view::npos ? "" : after.substr(comma + 5);
    std::size_t slash = path.rfind('/');
    st.where = std::string(path.substr(slash == std::string_view::npos ? 0 : slash + 1)) + ":" +
               std::string(line) + (func.empty() ? "" : " in " + std::string(func.substr(0, 120)));
  }

  // torchrun's ChildFailedError summary (torch/distributed/elastic/multiprocessing/errors/
  // __init__.py, ChildFailedError.format_msg): "Failures:" and "Root Cause (first observed
  // failure):", each failure a "[i]:" block of "time : ...", "host : ...", "rank : R
  // (local_rank: L)", "exitcode : C (pid: P)". True when the line belonged to it.
  bool summary(LabelState& st, std::string_view rest, const LinePrefix& prefix) {
    std::string_view t = trim_space(rest);
    if (t == "Failures:" || t == "Root Cause (first observed failure):") {
      flush_failure(st);
      st.summary = true;
      st.root_cause = t.front() == 'R';
      return true;
    }
    if (!st.summary) return false;
    if (t.size() >= 3 && t.front() == '[' && t.back() == ':') {
      flush_failure(st);
      st.failure = LogEvent{};
      st.failure.kind = LogKind::torchrun_failure;
      st.failure.what = st.root_cause ? "root cause" : "failure";
      st.failure.text = std::string(t.substr(0, kMaxEventText));
      st.has_failure = true;
      return true;
    }
    if (!t.empty() && (t.front() == '=' || t.front() == '-')) {
      flush_failure(st);
      if (t.front() == '=') st.summary = false;
      return true;
    }
    if (!st.has_failure) return t == "<NO_OTHER_FAILURES>" || t.empty();
    LogEvent& f = st.failure;
    if (auto v = field_value(t, "time"); !v.empty()) f.time = parse_log_time(v);
    if (auto v = field_value(t, "host"); !v.empty()) f.host = std::string(v.substr(0, 255));
    if (auto v = field_value(t, "rank"); !v.empty())
      f.rank = parse_int_in<int>(v.substr(0, v.find(' ')), 0, 1 << 24);
    if (auto v = field_value(t, "exitcode"); !v.empty()) {
      f.exit_code = parse_int_in<int>(v.substr(0, v.find(' ')), -255, 255);
      std::size_t pid = v.find("(pid: ");
      if (pid != std::string_view::npos)
        f.pid = parse_int_in<int>(v.substr(pid + 6, v.find(')', pid) - pid - 6), 1, 1 << 22);
    }
    if (auto v = field_value(t, "traceback"); !v.empty() && v.substr(0, 9) != "To enable")
      f.where = std::string(v.substr(0, 200));
    (void)prefix;
    return true;
  }

  void flush_failure(LabelState& st) {
    if (!st.has_failure) return;
    st.has_failure = false;
    LogEvent e = std::move(st.failure);
    LinePrefix none;
    add(std::move(e), none);
  }

  LogSet& set_;
  std::size_t file_;
  const LogReadOptions& options_;
  std::uint64_t number_ = 0;
  std::string_view text_;  // the line being read
  std::map<int, LabelState> states_;
};

void read_one(LogSet& set, std::size_t index, const LogReadOptions& o,
              std::unique_ptr<LogSource> src) {
  if (!src) return;
  LineReader reader(set, index, o);
  std::string carry;
  std::vector<char> buf(1u << 20);
  bool checked_binary = false, cutting = false;
  std::uint64_t number = 0;
  for (;;) {
    std::string why;
    long n = src->read(buf.data(), buf.size(), why);
    if (n < 0) {
      set.files[index].error = "read failed: " + why;
      break;
    }
    if (n == 0) break;
    std::string_view chunk(buf.data(), static_cast<std::size_t>(n));
    if (!checked_binary) {
      checked_binary = true;
      if (chunk.substr(0, 65536).find('\0') != std::string_view::npos) {
        set.files[index].error = "binary data (NUL bytes), not read as a log";
        return;
      }
    }
    set.files[index].bytes += chunk.size();
    while (!chunk.empty()) {
      std::size_t nl = chunk.find('\n');
      std::string_view piece = chunk.substr(0, nl);
      if (!cutting) {
        std::size_t room = o.max_line - std::min(o.max_line, carry.size());
        if (piece.size() > room) {
          carry.append(piece.substr(0, room));
          cutting = true;
          ++set.files[index].cut_lines;
        } else {
          carry.append(piece);
        }
      }
      if (nl == std::string_view::npos) break;
      chunk.remove_prefix(nl + 1);
      if (!carry.empty() && carry.back() == '\r') carry.pop_back();
      reader.line(carry, ++number);
      carry.clear();
      cutting = false;
    }
  }
  if (!carry.empty()) reader.line(carry, ++number);  // a last line without its newline
  reader.finish();
  set.files[index].lines = number;
}

bool has_glob(std::string_view s) { return s.find_first_of("*?[") != std::string_view::npos; }

void walk(const std::string& dir, std::vector<std::string>& out, std::size_t max, int depth) {
  if (depth > 16 || out.size() >= max) return;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return;
  std::vector<std::pair<std::string, unsigned char>> entries;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") entries.emplace_back(name, e->d_type);
  }
  ::closedir(d);
  std::sort(entries.begin(), entries.end());
  for (const auto& [name, type] : entries) {
    std::string path = dir + "/" + name;
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) continue;  // links are not followed
    if (S_ISDIR(st.st_mode)) {
      walk(path, out, max, depth + 1);
    } else if (S_ISREG(st.st_mode) && out.size() < max) {
      out.push_back(path);
    }
  }
}

std::vector<std::string> expand(const std::string& path, std::size_t max, std::string& error) {
  std::vector<std::string> out;
  struct stat st {};
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      walk(path, out, max, 0);
      if (out.empty()) error = "no files in this directory";
    } else {
      out.push_back(path);
    }
    return out;
  }
  if (has_glob(path)) {
    glob_t g{};
    if (::glob(path.c_str(), 0, nullptr, &g) == 0) {
      for (std::size_t i = 0; i < g.gl_pathc && out.size() < max; ++i)
        out.emplace_back(g.gl_pathv[i]);
    }
    ::globfree(&g);
    if (out.empty()) error = "no file matches this pattern";
    return out;
  }
  error = std::strerror(errno);
  return out;
}

// Lines that name a pid with its rank (NCCL's "Init COMPLETE": HOST:PID and rank R; torchrun's
// failure summary: host, "rank : R", "(pid: P)") tie the pid to the rank; lines that name only a
// pid (NCCL WARN, the kernel's OOM kills, torchrun's closing signals) take it from them. Why:
// the kernel and the launchers speak of pids, the verdict of ranks; the logs' own pairs are
// exact. A pid tied to two ranks (on the line's host, or anywhere for a line naming none) gives
// none.
void ranks_from_log_pids(LogSet& set) {
  std::multimap<int, std::pair<std::string, int>> named;  // pid -> (host, rank)
  for (LogEvent& e : set.events) {
    if (e.kind == LogKind::nccl_init && e.peer_rank) e.rank = e.peer_rank;
    if (ties_pid_to_rank(e.kind) && e.pid && e.rank)
      named.emplace(*e.pid, std::pair{e.host, *e.rank});
  }
  for (LogEvent& e : set.events) {
    if (e.rank || !e.pid) continue;
    std::set<int> ranks;
    auto [from, to] = named.equal_range(*e.pid);
    for (auto it = from; it != to; ++it) {
      if (e.host.empty() || it->second.first.empty() || same_host(it->second.first, e.host))
        ranks.insert(it->second.second);
    }
    if (ranks.size() == 1) e.rank = *ranks.begin();
  }
}

}  // namespace

std::optional<int> rank_from_file_name(std::string_view path) {
  std::size_t slash = path.rfind('/');
  std::string_view name = path.substr(slash == std::string_view::npos ? 0 : slash + 1);
  auto number_at = [](std::string_view s, std::size_t at) -> std::optional<int> {
    std::size_t end = at;
    while (end < s.size() && end - at < 8 && s[end] >= '0' && s[end] <= '9') ++end;
    if (end == at) return std::nullopt;
    return parse_int_in<int>(s.substr(at, end - at), 0, 1 << 24);
  };
  for (std::string_view tag :
       {std::string_view("rank_"), std::string_view("rank-"), std::string_view("rank")}) {
    if (std::size_t at = name.find(tag); at != std::string_view::npos) {
      if (auto r = number_at(name, at + tag.size())) return r;
    }
  }
  if (name == "stderr.log" || name == "stdout.log" || name == "error.json") {
    std::string_view parent = path.substr(0, slash == std::string_view::npos ? 0 : slash);
    std::size_t p = parent.rfind('/');
    std::string_view dir = parent.substr(p == std::string_view::npos ? 0 : p + 1);
    return parse_int_in<int>(dir, 0, 1 << 24);
  }
  // Slurm's %t: the last number of the name before its extensions ("train-42-3.out").
  std::size_t dot = name.find('.');
  std::string_view stem = name.substr(0, dot);
  std::size_t dash = stem.find_last_of("-_");
  if (dash == std::string_view::npos || dash + 1 >= stem.size()) return std::nullopt;
  if (stem.substr(0, dash).find_first_of("-_") == std::string_view::npos) return std::nullopt;
  return parse_int_in<int>(stem.substr(dash + 1), 0, 1 << 24);
}

LogSet read_logs(const std::vector<std::string>& paths, const LogReadOptions& options,
                 const std::vector<LogText>& texts) {
  LogSet set;
  for (const std::string& path : paths) {
    std::string error;
    std::vector<std::string> files =
        expand(path, options.max_files - std::min(options.max_files, set.files.size()), error);
    if (files.empty()) {
      LogFile missing;
      missing.path = path;
      missing.error = error;
      set.files.push_back(std::move(missing));
      continue;
    }
    for (std::string& f : files) {
      LogFile lf;
      lf.rank = rank_from_file_name(f);
      lf.path = std::move(f);
      set.files.push_back(std::move(lf));
      read_one(set, set.files.size() - 1, options,
               LogSource::open(set.files.back().path, set.files.back()));
    }
  }
  for (const LogText& t : texts) {
    LogFile lf;
    lf.rank = t.rank ? t.rank : rank_from_file_name(t.name);
    lf.path = t.name;
    lf.modified = t.modified;
    lf.error = t.error;
    set.files.push_back(std::move(lf));
    if (t.error.empty()) read_one(set, set.files.size() - 1, options, LogSource::of_text(t.text));
  }
  ranks_from_log_pids(set);
  return set;
}

}  // namespace hangscan
