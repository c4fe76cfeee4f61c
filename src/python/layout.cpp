#include "python/layout.h"

#include <fmt/format.h>

namespace hangscan::python {

std::optional<PyLayout> builtin_layout(int major, int minor) {
  for (const auto& row : builtin_layouts()) {
    if (row.major == major && row.minor == minor) {
      PyLayout l = row;
      l.instance_dict = instance_dict_model(minor);
      return l;
    }
  }
  return std::nullopt;
}

InstanceDict instance_dict_model(int minor) {
  if (minor <= 10) return InstanceDict::dict_offset;
  if (minor == 11) return InstanceDict::managed_311;
  if (minor == 12) return InstanceDict::managed_312;
  return InstanceDict::inline_313;
}

std::string supported_versions() {
  const auto& rows = builtin_layouts();
  if (rows.empty()) return "3.13+ (_Py_DebugOffsets)";
  return fmt::format("{}.{} to {}.{} (offset tables), 3.13 and 3.14 (_Py_DebugOffsets)",
                     rows.front().major, rows.front().minor, rows.back().major, rows.back().minor);
}

}  // namespace hangscan::python
