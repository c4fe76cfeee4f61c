// DwarfLines: file:line of an address from one CU's DWARF line program, without building the
// whole table.
//
// Why: libdw's dwarf_getsrc_die() (and, in elfutils 0.188, dwarf_getsrcfiles()) decode a
// CU's entire line program into a malloc'ed row list and sort it. python3.11's LTO units
// have tens of thousands of rows: on a torch core that was ~110,000 mallocs and ~1,700 page
// faults, as much time as inflating the debug info. This runs the line program once per
// lookup with no allocation per row and keeps the row libdw's binary search would return
// (the greatest address <= pc; at equal addresses a normal row after an end_sequence, the
// later one in program order; the CU's very last row counts as an end_sequence, as libdw
// marks it), and builds file names exactly as libdw does. Anything it does
// not handle (VLIW op_index, DW_LNE_define_file, unknown forms) makes parse() fail and the
// caller falls back to libdw.
#pragma once

#include <elfutils/libdw.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace hangscan {

class DwarfLines {
 public:
  // The line program of `cudie` (DW_AT_stmt_list into .debug_line of `dbg`); nullopt when
  // absent or in a shape this does not read.
  static std::optional<DwarfLines> parse(Dwarf* dbg, Dwarf_Die* cudie);

  struct Row {
    std::string file;
    int line = 0;
  };
  // The row for `addr`; nullopt when no row covers it (as dwarf_getsrc_die returns NULL), or
  // the program is damaged.
  std::optional<Row> lookup(std::uint64_t addr) const;
  // File `index` of the table (DW_AT_call_file), as dwarf_filesrc() names it.
  const std::string* file(std::uint64_t index) const;

 private:
  std::vector<std::string> files_;
  const std::uint8_t* program_ = nullptr;  // the opcodes, up to the end of the unit
  const std::uint8_t* end_ = nullptr;
  int version_ = 0;
  std::uint8_t address_size_ = 8;
  std::uint8_t min_inst_length_ = 1;
  bool default_is_stmt_ = true;
  std::int8_t line_base_ = 0;
  std::uint8_t line_range_ = 1;
  std::uint8_t opcode_base_ = 1;
  std::vector<std::uint8_t> opcode_lengths_;
};

}  // namespace hangscan
