#include "python/code_positions.h"

namespace hangscan::python {
namespace {

// Cursor over the table that never reads past its end.
struct Bytes {
  std::string_view s;
  std::size_t pos = 0;
  bool ok = true;
  bool at_end() const { return pos >= s.size(); }
  std::uint8_t next() {
    if (pos >= s.size()) {
      ok = false;
      return 0;
    }
    return static_cast<std::uint8_t>(s[pos++]);
  }
  // 6-bit little-endian groups, bit 6 = more follows.
  std::uint64_t varint() {
    std::uint8_t b = next();
    std::uint64_t val = b & 63;
    unsigned shift = 0;
    while ((b & 64) != 0 && ok && shift < 56) {
      b = next();
      shift += 6;
      val |= static_cast<std::uint64_t>(b & 63) << shift;
    }
    return val;
  }
  std::int64_t svarint() {
    std::uint64_t u = varint();
    return (u & 1) != 0 ? -static_cast<std::int64_t>(u >> 1) : static_cast<std::int64_t>(u >> 1);
  }
};

}  // namespace

std::optional<int> lnotab_line(std::string_view table, int firstlineno, std::uint64_t offset) {
  std::int64_t line = firstlineno;
  std::uint64_t addr = 0;
  for (std::size_t i = 0; i + 1 < table.size(); i += 2) {
    addr += static_cast<std::uint8_t>(table[i]);
    if (addr > offset) break;
    line += static_cast<std::int8_t>(table[i + 1]);
  }
  return static_cast<int>(line);
}

std::optional<int> linetable310_line(std::string_view table, int firstlineno,
                                     std::uint64_t offset) {
  std::int64_t line = firstlineno;
  std::uint64_t start = 0;
  for (std::size_t i = 0; i + 1 < table.size(); i += 2) {
    std::uint64_t end = start + static_cast<std::uint8_t>(table[i]);
    auto delta = static_cast<std::int8_t>(table[i + 1]);
    bool no_line = delta == -128;
    if (!no_line) line += delta;
    if (offset >= start && offset < end) {
      if (no_line) return std::nullopt;
      return static_cast<int>(line);
    }
    start = end;
  }
  return std::nullopt;
}

std::optional<SourcePosition> location_table_position(std::string_view table, int firstlineno,
                                                      std::uint64_t offset) {
  const std::uint64_t target = offset / 2;  // the table counts 2-byte code units
  std::int64_t line = firstlineno;
  std::uint64_t addr = 0;
  Bytes b{table};
  while (!b.at_end()) {
    std::uint8_t first = b.next();
    if ((first & 0x80) == 0) return std::nullopt;  // not at an entry start: malformed
    int code = (first >> 3) & 15;
    std::uint64_t length = (first & 7) + 1;
    bool no_line = false;
    std::int64_t end_line_delta = 0;
    std::optional<std::int64_t> col;
    std::optional<std::int64_t> end_col;
    if (code == 15) {
      no_line = true;
    } else if (code == 14) {  // long form: every field a varint, columns + 1 (0: none)
      line += b.svarint();
      end_line_delta = static_cast<std::int64_t>(b.varint());
      std::uint64_t c = b.varint();
      std::uint64_t e = b.varint();
      if (c != 0) col = static_cast<std::int64_t>(c - 1);
      if (e != 0) end_col = static_cast<std::int64_t>(e - 1);
    } else if (code == 13) {  // no column
      line += b.svarint();
    } else if (code >= 10) {  // one line: line delta in the code, two column bytes
      line += code - 10;
      col = b.next();
      end_col = b.next();
    } else {  // short form: same line, column in code and byte
      std::uint8_t second = b.next();
      col = code * 8 + ((second >> 4) & 7);
      end_col = *col + (second & 15);
    }
    if (!b.ok) return std::nullopt;
    if (target >= addr && target < addr + length) {
      if (no_line) return std::nullopt;
      SourcePosition p;
      p.line = static_cast<int>(line);
      p.end_line = static_cast<int>(line + end_line_delta);
      if (col && *col < (1 << 24)) p.column = static_cast<int>(*col);
      if (end_col && *end_col < (1 << 24)) p.end_column = static_cast<int>(*end_col);
      return p;
    }
    addr += length;
  }
  return std::nullopt;
}

std::optional<int> location_table_line(std::string_view table, int firstlineno,
                                       std::uint64_t offset) {
  auto p = location_table_position(table, firstlineno, offset);
  if (!p) return std::nullopt;
  return p->line;
}

std::optional<int> addr_to_line(LineTable format, std::string_view table, int firstlineno,
                                std::uint64_t byte_offset) {
  switch (format) {
    case LineTable::lnotab:
      return lnotab_line(table, firstlineno, byte_offset);
    case LineTable::linetable310:
      return linetable310_line(table, firstlineno, byte_offset);
    case LineTable::location311:
      return location_table_line(table, firstlineno, byte_offset);
  }
  return std::nullopt;
}

}  // namespace hangscan::python
