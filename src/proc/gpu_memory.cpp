#include "proc/gpu_memory.h"

#include <dlfcn.h>

#include <algorithm>
#include <vector>

namespace hangscan {

namespace {

// NVML's own declarations (nvml.h, stable ABI): nvmlReturn_t is an int, 0 is NVML_SUCCESS,
// 7 NVML_ERROR_INSUFFICIENT_SIZE; nvmlProcessInfo_t of the _v3 calls.
using NvmlDevice = void*;
struct NvmlProcessInfo {
  unsigned int pid;
  unsigned long long used_gpu_memory;
  unsigned int gpu_instance_id;
  unsigned int compute_instance_id;
};
constexpr int kSuccess = 0;
constexpr int kInsufficientSize = 7;
constexpr unsigned long long kNotAvailable = ~0ULL;
constexpr unsigned int kMaxProcesses = 4096;

struct Nvml {
  int (*init)();
  int (*shutdown)();
  int (*count)(unsigned int*);
  int (*handle)(unsigned int, NvmlDevice*);
  int (*processes)(NvmlDevice, unsigned int*, NvmlProcessInfo*);
};

template <class F>
bool load(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  return out != nullptr;
}

void add_device(const Nvml& n, NvmlDevice dev, std::map<int, std::uint64_t>& out) {
  unsigned int count = 0;
  int rc = n.processes(dev, &count, nullptr);
  if (rc != kSuccess && rc != kInsufficientSize) return;
  if (count == 0) return;
  count = std::min(count + 8, kMaxProcesses);  // processes may start between the two calls
  std::vector<NvmlProcessInfo> infos(count);
  if (n.processes(dev, &count, infos.data()) != kSuccess) return;
  for (unsigned int i = 0; i < count && i < infos.size(); ++i) {
    if (infos[i].used_gpu_memory == kNotAvailable) continue;
    out[static_cast<int>(infos[i].pid)] += infos[i].used_gpu_memory;
  }
}

}  // namespace

std::optional<std::map<int, std::uint64_t>> gpu_memory_by_pid(const char* library) {
  void* lib = dlopen(library, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) return std::nullopt;
  Nvml n{};
  bool ok = load(lib, "nvmlInit_v2", n.init) && load(lib, "nvmlShutdown", n.shutdown) &&
            load(lib, "nvmlDeviceGetCount_v2", n.count) &&
            load(lib, "nvmlDeviceGetHandleByIndex_v2", n.handle) &&
            load(lib, "nvmlDeviceGetComputeRunningProcesses_v3", n.processes);
  std::optional<std::map<int, std::uint64_t>> out;
  if (ok && n.init() == kSuccess) {
    out.emplace();
    unsigned int devices = 0;
    if (n.count(&devices) == kSuccess) {
      for (unsigned int d = 0; d < devices; ++d) {
        NvmlDevice dev = nullptr;
        if (n.handle(d, &dev) == kSuccess) add_device(n, dev, *out);
      }
    }
    n.shutdown();
  }
  dlclose(lib);
  return out;
}

}  // namespace hangscan
