// Line numbers from a code object's line table, for each CPython encoding.
//
// Why: the line of a Python frame is not stored anywhere; it is derived from the instruction
// offset and the code object's line table, whose format changed in 3.6 (signed deltas),
// 3.10 (co_linetable) and 3.11 (PEP 657 location table). These are pure functions over bytes
// so they can be tested on their own and never read out of bounds.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "python/layout.h"

namespace hangscan::python {

// The source line executing at `byte_offset` (from the start of the bytecode) of a code object
// whose first line is `firstlineno`; nullopt when the table says "no line" or is malformed.
std::optional<int> addr_to_line(LineTable format, std::string_view table, int firstlineno,
                                std::uint64_t byte_offset);

std::optional<int> lnotab_line(std::string_view table, int firstlineno, std::uint64_t offset);
std::optional<int> linetable310_line(std::string_view table, int firstlineno, std::uint64_t offset);
std::optional<int> location_table_line(std::string_view table, int firstlineno,
                                       std::uint64_t offset);

// A PEP 657 position: lines, and 0-based UTF-8 byte columns when the table has them.
struct SourcePosition {
  int line = 0;
  int end_line = 0;
  std::optional<int> column;
  std::optional<int> end_column;
};

// The full position at `offset` (3.11+ location tables); nullopt when "no location".
std::optional<SourcePosition> location_table_position(std::string_view table, int firstlineno,
                                                      std::uint64_t offset);

}  // namespace hangscan::python
