// GPU memory per process, through NVIDIA's NVML when the node has it.
//
// Why: a rank about to be OOM-killed on the GPU (or holding memory after a failed collective)
// shows it only in the GPU's own accounting. NVML (libnvidia-ml.so.1) ships with the driver,
// not with hangscan: it is loaded at run time with dlopen, so hangscan builds and runs on nodes
// without NVIDIA's driver, where this yields nothing and fails nothing.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace hangscan {

// Bytes of GPU memory each process uses, summed over the node's GPUs (NVML's compute
// processes); nullopt when `library` cannot be loaded, lacks a function, or NVML does not
// initialise (no driver, no GPU). A process NVML reports without a figure is left out.
std::optional<std::map<int, std::uint64_t>> gpu_memory_by_pid(
    const char* library = "libnvidia-ml.so.1");

}  // namespace hangscan
