// Loads one variant of tests/bench/bpf_floor.bpf.c onto the scheduler tracepoints for a while
// and prints each program's runs and run time (kernel.bpf_stats_enabled must be 1; the driver,
// bpf_floor.py, sets it and puts it back).
//
// Why: the floor under the recorder's scheduler programs, measured with programs that do one
// thing each (docs/performance.md). Everything is a file descriptor of this process: the
// kernel detaches and frees it all when it exits, however it exits.
//
// usage: hs_bpf_floor OBJECT VARIANT SECONDS   (VARIANT: empty, lookup or clock)
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

namespace {

struct Stats {
  unsigned long long runs = 0;
  unsigned long long ns = 0;
};

Stats stats_of(const bpf_program* prog) {
  bpf_prog_info info{};
  __u32 len = sizeof(info);
  Stats s;
  if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) == 0) {
    s.runs = info.run_cnt;
    s.ns = info.run_time_ns;
  }
  return s;
}

int run(const char* path, const std::string& variant, int seconds) {
  bpf_object* obj = bpf_object__open_file(path, nullptr);
  if (obj == nullptr) {
    std::fprintf(stderr, "hs_bpf_floor: cannot open %s\n", path);
    return 2;
  }
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, obj) {
    std::string name = bpf_program__name(prog);
    bpf_program__set_autoload(prog, name.rfind(variant + "_", 0) == 0);
  }
  if (bpf_object__load(obj) != 0) {
    std::fprintf(stderr, "hs_bpf_floor: the programs did not load (root with BTF needed)\n");
    bpf_object__close(obj);
    return 2;
  }
  std::vector<bpf_link*> links;
  std::vector<const bpf_program*> loaded;
  bpf_object__for_each_program(prog, obj) {
    if (!bpf_program__autoload(prog)) continue;
    bpf_link* link = bpf_program__attach(prog);
    if (link == nullptr) {
      std::fprintf(stderr, "hs_bpf_floor: %s did not attach\n", bpf_program__name(prog));
      return 2;  // the process's exit frees what was attached
    }
    links.push_back(link);
    loaded.push_back(prog);
  }
  std::vector<Stats> before;
  for (const auto* p : loaded) before.push_back(stats_of(p));
  std::this_thread::sleep_for(std::chrono::seconds(seconds));
  for (std::size_t i = 0; i < loaded.size(); ++i) {
    Stats after = stats_of(loaded[i]);
    std::printf("%s %llu %llu\n", bpf_program__name(loaded[i]), after.runs - before[i].runs,
                after.ns - before[i].ns);
  }
  for (auto* l : links) bpf_link__destroy(l);
  bpf_object__close(obj);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4) {
    std::fprintf(stderr, "usage: hs_bpf_floor OBJECT VARIANT SECONDS\n");
    return 64;
  }
  return run(argv[1], argv[2], std::atoi(argv[3]));
}
