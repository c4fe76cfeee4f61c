#include "proc/gpu_xid.h"

#include <fmt/format.h>

#include "util/parse_number.h"

namespace hangscan {

namespace {

// "pid=1234" or "pid='<unknown>'" / "name=python3" at the front of `rest`: the value, and
// `rest` moved past the field and its comma.
std::optional<std::string_view> take_field(std::string_view& rest, std::string_view key) {
  rest = trim_space(rest);
  if (rest.substr(0, key.size()) != key) return std::nullopt;
  auto comma = rest.find(',');
  std::string_view value = rest.substr(
      key.size(), comma == std::string_view::npos ? std::string_view::npos : comma - key.size());
  rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
  return trim_space(value);
}

}  // namespace

std::optional<XidEvent> parse_xid(std::string_view m, double boot_s) {
  constexpr std::string_view kHead = "NVRM: Xid (";
  auto at = m.find(kHead);
  if (at == std::string_view::npos) return std::nullopt;
  std::string_view rest = m.substr(at + kHead.size());
  auto close = rest.find("): ");
  if (close == std::string_view::npos) return std::nullopt;
  XidEvent e;
  e.boot_s = boot_s;
  std::string_view pci = rest.substr(0, close);
  if (pci.substr(0, 4) == "PCI:") pci.remove_prefix(4);
  e.pci = std::string(pci);
  rest.remove_prefix(close + 3);
  auto comma = rest.find(',');
  auto xid = parse_int<int>(trim_space(rest.substr(0, comma)));
  if (!xid) return std::nullopt;
  e.xid = *xid;
  rest.remove_prefix(comma == std::string_view::npos ? rest.size() : comma + 1);
  if (auto pid = take_field(rest, "pid=")) e.pid = parse_int<int>(*pid);
  if (auto name = take_field(rest, "name=")) {
    if (*name != "<unknown>") e.comm = std::string(*name);
  }
  e.message = std::string(trim_space(rest).substr(0, 300));
  return e;
}

std::vector<XidEvent> xid_events(const std::vector<KernelRecord>& records, double since_boot_s) {
  std::vector<XidEvent> out;
  for (const KernelRecord& r : records) {
    if (r.boot_s < since_boot_s) continue;
    if (auto e = parse_xid(r.text, r.boot_s)) out.push_back(std::move(*e));
  }
  return out;
}

std::string xid_words(const XidEvent& e) {
  std::string who;
  if (e.pid && *e.pid > 0) {
    who = e.comm.empty() ? fmt::format(" (pid {})", *e.pid)
                         : fmt::format(" (pid {}, {})", *e.pid, e.comm);
  }
  return fmt::format("GPU {} reported NVIDIA Xid {}{}{}{}", e.pci, e.xid, who,
                     e.message.empty() ? "" : ": ", e.message);
}

}  // namespace hangscan
