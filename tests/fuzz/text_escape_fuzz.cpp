// libFuzzer entry for the text report's escaping (util/escape.h at the writers' edge).
//
// Why: every name in a report comes from a target (functions, files, modules, threads,
// command lines, hosts, locals, asyncio tasks, deaths, diagnostics). Whatever bytes they hold,
// the text report must not carry a control byte to a terminal (no ESC, no BEL, no CR) and no
// name may start a line of its own: each line starting with "SUSPECT" is one of the analysis's
// suspect reasons. The DOT and folded outputs keep their line structure the same way.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "group/analysis.h"
#include "report/finding_words.h"
#include "report/graph_writers.h"
#include "report/text_writer.h"

namespace {

using namespace hangscan;

// Cuts the fuzz input into names: one length byte, then that many bytes; "" once it runs out.
class Names {
 public:
  explicit Names(std::string_view data) : data_(data) {}
  std::string next() {
    if (data_.empty()) return {};
    std::size_t n = static_cast<unsigned char>(data_.front()) % 48;
    data_.remove_prefix(1);
    n = std::min(n, data_.size());
    std::string s(data_.substr(0, n));
    data_.remove_prefix(n);
    return s;
  }
  std::size_t byte() {
    if (data_.empty()) return 0;
    auto b = static_cast<unsigned char>(data_.front());
    data_.remove_prefix(1);
    return b;
  }

 private:
  std::string_view data_;
};

Frame frame(Names& in, FrameKind kind) {
  Frame f;
  f.kind = kind;
  f.function = in.next();
  if (kind == FrameKind::python) {
    f.file = in.next();
    f.line = 7;
    f.source = in.next();
    f.locals.push_back({in.next(), in.next()});
  } else {
    f.module = in.next();
    f.offset = 0x40;
  }
  return f;
}

ThreadSnapshot thread(Names& in, int tid, bool odd) {
  ThreadSnapshot t;
  t.tid = tid;
  t.is_main = true;
  t.state = 'S';
  t.name = in.next();
  t.python_name = in.next();
  t.wchan = in.next();
  t.notes.push_back(in.next());
  std::vector<Frame> frames = {frame(in, FrameKind::python), frame(in, FrameKind::native)};
  if (odd) frames.insert(frames.begin(), frame(in, FrameKind::python));
  t.frames = frames;
  t.kernel_frames = {frame(in, FrameKind::kernel)};
  return t;
}

// Ranks 0..n-1; the last stands elsewhere, so the analysis has a suspect to name.
JobSnapshot job_of(Names& in) {
  JobSnapshot job;
  std::size_t n = 3 + in.byte() % 4;
  job.job_id = in.next();
  Names shared = in;  // the majority's names: the same bytes for every rank
  for (std::size_t r = 0; r < n; ++r) {
    bool odd = r + 1 == n;
    Names own = odd ? in : shared;
    ProcessSnapshot p;
    p.pid = 100 + static_cast<int>(r);
    p.rank = static_cast<int>(r);
    p.role = "rank";
    p.state = 'S';
    p.host = own.next();
    p.cmdline = {own.next(), own.next()};
    p.exe = own.next();
    p.threads.push_back(thread(own, p.pid, odd));
    p.asyncio_tasks.push_back({});
    p.asyncio_tasks.back().name = own.next();
    p.asyncio_tasks.back().awaits_task = own.next();
    p.diagnostics.push_back({});
    p.diagnostics.back().message = own.next();
    p.diagnostics.back().hint = own.next();
    job.processes.push_back(std::move(p));
    if (odd) in = own;
  }
  job.unreachable.push_back({in.next(), in.next()});
  return job;
}

// No byte below 0x20 but the line ends, no DEL.
void check_controls(const std::string& text) {
  for (char ch : text) {
    auto c = static_cast<unsigned char>(ch);
    if ((c < 0x20 && c != '\n') || c == 0x7f) std::abort();
  }
}

std::size_t lines_starting_with(const std::string& text, std::string_view prefix) {
  std::size_t count = 0;
  for (std::size_t at = 0; at < text.size();) {
    std::size_t end = text.find('\n', at);
    if (end == std::string::npos) end = text.size();
    if (std::string_view(text).substr(at, end - at).starts_with(prefix)) ++count;
    at = end + 1;
  }
  return count;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  Names in(std::string_view(reinterpret_cast<const char*>(data), size));
  JobSnapshot job = job_of(in);
  Analysis a = analyze(job, GroupOptions{});
  for (int width : {0, 50}) {
    TextOptions o;
    o.width = width;
    std::string text = write_text(job, &a, o);
    check_controls(text);
    if (lines_starting_with(text, "SUSPECT") != verdict_words(job, a).suspect_reasons.size())
      std::abort();
  }
  std::string folded = write_folded(job, GroupOptions{});
  check_controls(folded);
  if (lines_starting_with(folded, "") > job.processes.size()) std::abort();
  check_controls(write_dot(job, a));
  return 0;
}
