// Synthetic job generator.
#include "synth_job.h"

#include <numeric>
#include <string>

#include <fmt/format.h>

#include "../unit/group/job_builder.h"
#include "util/stack_table.h"

namespace hangscan::bench {

namespace {

// Class sizes: minorities of ranks/100, ranks/1000, ... (at least one rank each).
std::vector<int> class_sizes(const SynthOptions& o) {
  std::vector<int> sizes(static_cast<std::size_t>(std::max(1, o.classes)), 0);
  long long div = 100;
  int rest = o.ranks;
  for (std::size_t k = 1; k < sizes.size(); ++k, div *= 10) {
    sizes[k] = static_cast<int>(std::max<long long>(1, o.ranks / div));
    rest -= sizes[k];
  }
  sizes[0] = std::max(0, rest);
  return sizes;
}

Frame frame(std::string function, int file, int line) {
  Frame f;
  f.kind = FrameKind::python;
  f.function = std::move(function);
  f.file = fmt::format("/opt/venv/lib/python3.11/site-packages/model/layer_{}.py", file);
  f.line = line;
  return f;
}

}  // namespace

std::vector<int> synth_classes(const SynthOptions& o) {
  std::vector<int> sizes = class_sizes(o);
  std::vector<int> cls(static_cast<std::size_t>(o.ranks), 0);
  // Scatter the minority ranks: position p of the class order is rank (p * step) % ranks.
  long long step = std::gcd(7919, o.ranks) == 1 ? 7919 : 1;
  long long p = 0;
  for (std::size_t k = 1; k < sizes.size(); ++k) {
    for (int i = 0; i < sizes[k] && p < o.ranks; ++i, ++p) {
      cls[static_cast<std::size_t>((p * step) % o.ranks)] = static_cast<int>(k);
    }
  }
  return cls;
}

std::size_t synth_minority_count(const SynthOptions& o) {
  std::vector<int> sizes = class_sizes(o);
  return static_cast<std::size_t>(std::accumulate(sizes.begin() + 1, sizes.end(), 0));
}

JobSnapshot make_synthetic_job(const SynthOptions& o, int first, int count) {
  std::vector<int> cls = synth_classes(o);
  JobSnapshot job;
  StackTable stacks;  // as a reader or a merge leaves them: one copy of each distinct stack
  job.expected_world_size = o.ranks;
  job.processes.reserve(static_cast<std::size_t>(count));
  for (int r = first; r < first + count && r < o.ranks; ++r) {
    int k = cls[static_cast<std::size_t>(r)];
    // Class k shares the outermost depth - 4k frames with class 0, then goes its own way.
    int shared = k == 0 ? o.depth : std::max(1, o.depth - 4 * k);
    ProcessSnapshot p;
    p.host = fmt::format("node{:05d}", r / std::max(1, o.ranks_per_host));
    p.pid = 10000 + r % std::max(1, o.ranks_per_host);
    p.ppid = 9999;
    p.rank = r;
    p.world_size = o.ranks;
    p.local_rank = r % std::max(1, o.ranks_per_host);
    p.role = "rank";
    p.launcher = "torchrun";
    p.cmdline = {"python3", "train.py"};
    p.state = 'S';
    ThreadSnapshot t;
    t.tid = p.pid;
    t.name = "python3";
    t.state = 'S';
    t.is_main = true;
    std::vector<Frame> frames;
    frames.reserve(static_cast<std::size_t>(o.depth));
    for (int d = o.depth - 1; d >= 0; --d) {  // innermost first
      if (d < shared) frames.push_back(frame(fmt::format("step_{}", d), d % 7, 10 + d));
      else frames.push_back(frame(fmt::format("odd{}_{}", k, d), 100 + k, 20 + d));
    }
    t.frames = stacks.intern(std::move(frames));
    p.threads.push_back(std::move(t));
    if (o.helper_thread) {
      ThreadSnapshot h;
      h.tid = p.pid + 100000;
      h.name = "pt_data_worker";
      h.state = 'S';
      h.frames = stacks.intern(FrameStack{frame("poll", 50, r % 3)});
      p.threads.push_back(std::move(h));
    }
    job.processes.push_back(std::move(p));
  }
  return job;
}

namespace {

// Rank r's main-thread stack: 0 (the majority), or one of the others for every 50th rank.
int page_variant(const PageJobOptions& o, int r) {
  int odd = std::max(1, o.stacks - (o.threads - 1) - 1);
  return r % 50 == 7 ? 1 + (r / 50) % odd : 0;
}

}  // namespace

std::size_t page_job_odd_ranks(const PageJobOptions& o) {
  std::size_t n = 0;
  for (int r = 0; r < o.ranks; ++r) n += page_variant(o, r) != 0 ? 1 : 0;
  return n;
}

JobSnapshot make_page_job(const PageJobOptions& o) {
  static const char* const kHelpers[] = {"gloo:tcp",   "pt_autograd_0", "pt_data_worker",
                                         "pt_elastic", "python3",       "nccl:watchdog",
                                         "pin_memory"};
  JobSnapshot job;
  StackTable stacks;
  job.expected_world_size = o.ranks;
  job.processes.reserve(static_cast<std::size_t>(o.ranks));
  for (int r = 0; r < o.ranks; ++r) {
    ProcessSnapshot p;
    p.host = fmt::format("node{:05d}", r / 8);
    p.pid = 20000 + r;
    p.ppid = 19000 + r / 8;
    p.start_ticks = 123456 + static_cast<std::uint64_t>(r);
    p.rank = r;
    p.world_size = o.ranks;
    p.local_rank = r % 8;
    p.role = "rank";
    p.launcher = "torchrun";
    p.cmdline = {"/usr/bin/python3", "train.py", "--config", "big.yaml"};
    p.exe = "/usr/bin/python3.11";
    p.state = 'S';
    p.cpu_percent = 0.5 * (r % 7);
    p.captured_at = 1764255000.0 + 0.001 * r;
    p.memory.emplace();
    p.memory->rss_bytes = 1000000000ULL + 4096ULL * static_cast<std::uint64_t>(r);
    int v = page_variant(o, r);
    std::vector<Frame> main;
    for (int d = o.depth - 1; d >= 0; --d) {  // innermost first; variants part 6 frames up
      if (v == 0 || d < o.depth - 6)
        main.push_back(frame(fmt::format("step_{}", d), d % 7, 10 + d));
      else main.push_back(frame(fmt::format("odd{}_{}", v, d), 100 + v, 20 + d));
    }
    for (int k = 0; k < o.threads; ++k) {
      ThreadSnapshot t;
      t.tid = k == 0 ? p.pid : 100000 + r * o.threads + k;
      t.name = k == 0 ? "pt_main_thread" : kHelpers[(k - 1) % 7];
      t.state = 'S';
      t.syscall = "futex";
      t.is_main = k == 0;
      t.cpu_ticks = static_cast<std::uint64_t>(r % 97 + k);
      t.blocked_s = 120.0 + 0.01 * (r % 1000);
      if (k == 0) {
        t.frames = stacks.intern(std::vector<Frame>(main));
      } else {
        t.frames = stacks.intern(FrameStack{
            testing::native("__futex_abstimed_wait_common", "/usr/lib/x86_64-linux-gnu/libc.so.6",
                            0x8a000),
            testing::native(fmt::format("helper_loop_{}", k), "/opt/lib/libtorch_cpu.so",
                            0x100000 + 0x40 * static_cast<std::uint64_t>(k)),
            testing::native("start_thread", "/usr/lib/x86_64-linux-gnu/libc.so.6", 0x89000)});
      }
      p.threads.push_back(std::move(t));
    }
    job.processes.push_back(std::move(p));
  }
  return job;
}

}  // namespace hangscan::bench
