// NVIDIA Xid events from the kernel log: a GPU's own report of what went wrong.
//
// Why: on a GPU node, a rank that "hangs" in a collective is often waiting for a peer whose GPU
// failed (fell off the bus, an uncorrectable ECC error, an MMU fault). The driver writes each
// such event to the kernel log as "NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU
// has fallen off the bus." (format documented by NVIDIA, "Xid Errors"). They belong next to the
// deaths: same log, same window. Parsers take text; no GPU is needed to test them.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "proc/deaths.h"

namespace hangscan {

struct XidEvent {
  double boot_s = 0;       // the kernel log's clock
  std::string pci;         // "0000:3b:00"
  int xid = 0;             // 79
  std::optional<int> pid;  // absent when the driver says pid='<unknown>' or none
  std::string comm;        // name=..., empty when unknown
  std::string message;     // "GPU has fallen off the bus."
};

// One kernel-log message as an Xid event; nullopt for any other message.
std::optional<XidEvent> parse_xid(std::string_view message, double boot_s);

// Every Xid event of `records` at or after `since_boot_s`.
std::vector<XidEvent> xid_events(const std::vector<KernelRecord>& records, double since_boot_s);

// "GPU 0000:3b:00 reported NVIDIA Xid 79 (pid 1234, python3): GPU has fallen off the bus."
std::string xid_words(const XidEvent& e);

}  // namespace hangscan
