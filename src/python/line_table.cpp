#include "python/line_table.h"

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

std::optional<int> location_table_line(std::string_view table, int firstlineno,
                                       std::uint64_t offset) {
  const std::uint64_t target = offset / 2;   // the table counts 2-byte code units
  std::int64_t line = firstlineno;
  std::uint64_t addr = 0;
  Bytes b{table};
  while (!b.at_end()) {
    std::uint8_t first = b.next();
    if ((first & 0x80) == 0) return std::nullopt;   // not at an entry start: malformed
    int code = (first >> 3) & 15;
    std::uint64_t length = (first & 7) + 1;
    bool no_line = false;
    if (code == 15) {
      no_line = true;
    } else if (code == 14) {
      line += b.svarint();
      b.varint();   // end line delta
      b.varint();   // column + 1
      b.varint();   // end column + 1
    } else if (code == 13) {
      line += b.svarint();
    } else if (code >= 10) {
      line += code - 10;
      b.next();
      b.next();
    } else {
      b.next();
    }
    if (!b.ok) return std::nullopt;
    if (target >= addr && target < addr + length) {
      if (no_line) return std::nullopt;
      return static_cast<int>(line);
    }
    addr += length;
  }
  return std::nullopt;
}

std::optional<int> addr_to_line(LineTable format, std::string_view table, int firstlineno,
                                std::uint64_t byte_offset) {
  switch (format) {
    case LineTable::lnotab: return lnotab_line(table, firstlineno, byte_offset);
    case LineTable::linetable310: return linetable310_line(table, firstlineno, byte_offset);
    case LineTable::location311: return location_table_line(table, firstlineno, byte_offset);
  }
  return std::nullopt;
}

}  // namespace hangscan::python
