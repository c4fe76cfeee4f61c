#include "unwind/dwarf_lines.h"

#include <dwarf.h>
#include <gelf.h>
#include <libelf.h>

#include <cstring>
#include <string_view>

namespace hangscan {
namespace {

// A bounds-checked cursor: every read past the end fails (sets ok = false) and yields 0.
struct Cursor {
  const std::uint8_t* p;
  const std::uint8_t* end;
  bool ok = true;

  bool has(std::size_t n) {
    if (static_cast<std::size_t>(end - p) < n) ok = false;
    return ok;
  }
  std::uint64_t fixed(std::size_t n) {
    if (!has(n)) return 0;
    std::uint64_t v = 0;
    std::memcpy(&v, p, n);  // little-endian only (DebugImage refuses the others)
    p += n;
    return v;
  }
  std::uint64_t uleb() {
    std::uint64_t v = 0;
    for (int shift = 0; has(1); shift += 7) {
      std::uint8_t b = *p++;
      if (shift < 64) v |= std::uint64_t{b & 0x7fu} << shift;
      if ((b & 0x80) == 0) return v;
    }
    return 0;
  }
  std::int64_t sleb() {
    std::int64_t v = 0;
    int shift = 0;
    std::uint8_t b = 0;
    do {
      if (!has(1)) return 0;
      b = *p++;
      if (shift < 64) v |= static_cast<std::int64_t>(std::uint64_t{b & 0x7fu} << shift);
      shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40)) v |= -(std::int64_t{1} << shift);
    return v;
  }
  const char* cstring() {
    const void* nul =
        ok && p < end ? std::memchr(p, 0, static_cast<std::size_t>(end - p)) : nullptr;
    if (nul == nullptr) {
      ok = false;
      return "";
    }
    const char* s = reinterpret_cast<const char*>(p);
    p = static_cast<const std::uint8_t*>(nul) + 1;
    return s;
  }
  void skip(std::uint64_t n) {
    if (has(static_cast<std::size_t>(std::min<std::uint64_t>(n, SIZE_MAX)))) p += n;
  }
};

struct Section {
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
};

Section section(Elf* elf, std::string_view want) {
  std::size_t shstrndx = 0;
  if (elf == nullptr || elf_getshdrstrndx(elf, &shstrndx) != 0) return {};
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr sh;
    if (gelf_getshdr(scn, &sh) == nullptr) continue;
    const char* name = elf_strptr(elf, shstrndx, sh.sh_name);
    if (name == nullptr || want != name) continue;
    Elf_Data* d = elf_getdata(scn, nullptr);
    if (d == nullptr || d->d_buf == nullptr) return {};
    return {static_cast<const std::uint8_t*>(d->d_buf), d->d_size};
  }
  return {};
}

const char* string_at(const Section& s, std::uint64_t off) {
  if (s.data == nullptr || off >= s.size) return nullptr;
  if (std::memchr(s.data + off, 0, s.size - off) == nullptr) return nullptr;
  return reinterpret_cast<const char*>(s.data + off);
}

// One entry of a DWARF 5 directory or file table: its path and directory index.
struct LineEntry {
  const char* path = nullptr;
  std::uint64_t dir = 0;
};

// Reads `count` entries described by `formats` ((content type, form) pairs).
bool read_entries(Cursor& c, const std::vector<std::pair<std::uint64_t, std::uint64_t>>& formats,
                  std::uint64_t count, int offset_size, const Section& line_str, const Section& str,
                  std::vector<LineEntry>& out) {
  for (std::uint64_t i = 0; i < count && c.ok; ++i) {
    LineEntry e;
    for (const auto& [type, form] : formats) {
      std::uint64_t value = 0;
      const char* text = nullptr;
      switch (form) {
        case DW_FORM_string:
          text = c.cstring();
          break;
        case DW_FORM_line_strp:
          text = string_at(line_str, c.fixed(static_cast<std::size_t>(offset_size)));
          break;
        case DW_FORM_strp:
          text = string_at(str, c.fixed(static_cast<std::size_t>(offset_size)));
          break;
        case DW_FORM_udata:
          value = c.uleb();
          break;
        case DW_FORM_data1:
          value = c.fixed(1);
          break;
        case DW_FORM_data2:
          value = c.fixed(2);
          break;
        case DW_FORM_data4:
          value = c.fixed(4);
          break;
        case DW_FORM_data8:
          value = c.fixed(8);
          break;
        case DW_FORM_data16:
          c.skip(16);
          break;
        case DW_FORM_block:
          c.skip(c.uleb());
          break;
        default:
          return false;  // strx forms and the like: libdw reads those
      }
      if (type == DW_LNCT_path) {
        if (text == nullptr) return false;
        e.path = text;
      } else if (type == DW_LNCT_directory_index) {
        e.dir = value;
      }
    }
    if (e.path == nullptr) return false;
    out.push_back(e);
  }
  return c.ok;
}

}  // namespace

std::optional<DwarfLines> DwarfLines::parse(Dwarf* dbg, Dwarf_Die* cudie) {
  Dwarf_Attribute attr;
  Dwarf_Word stmt_list = 0;
  if (dwarf_formudata(dwarf_attr(cudie, DW_AT_stmt_list, &attr), &stmt_list) != 0)
    return std::nullopt;
  Elf* elf = dwarf_getelf(dbg);
  Section line = section(elf, ".debug_line");
  if (line.data == nullptr || stmt_list >= line.size) return std::nullopt;

  Cursor c{line.data + stmt_list, line.data + line.size};
  std::uint64_t unit_length = c.fixed(4);
  int offset_size = 4;
  if (unit_length == 0xffffffff) {
    unit_length = c.fixed(8);
    offset_size = 8;
  }
  if (!c.ok || unit_length > static_cast<std::uint64_t>(c.end - c.p)) return std::nullopt;
  c.end = c.p + unit_length;
  DwarfLines t;
  t.version_ = static_cast<int>(c.fixed(2));
  // DWARF 2-4 line tables are left to libdw (their file numbering differs; not seen on the
  // distributions this is tuned for, which use DWARF 5).
  if (t.version_ != 5) return std::nullopt;
  t.address_size_ = static_cast<std::uint8_t>(c.fixed(1));
  c.fixed(1);  // segment selector size
  std::uint64_t header_length = c.fixed(static_cast<std::size_t>(offset_size));
  if (!c.ok || header_length > static_cast<std::uint64_t>(c.end - c.p)) return std::nullopt;
  const std::uint8_t* program = c.p + header_length;
  t.min_inst_length_ = static_cast<std::uint8_t>(c.fixed(1));
  std::uint8_t max_ops = static_cast<std::uint8_t>(c.fixed(1));
  t.default_is_stmt_ = c.fixed(1) != 0;
  t.line_base_ = static_cast<std::int8_t>(c.fixed(1));
  t.line_range_ = static_cast<std::uint8_t>(c.fixed(1));
  t.opcode_base_ = static_cast<std::uint8_t>(c.fixed(1));
  if (!c.ok || max_ops != 1 || t.line_range_ == 0 || t.opcode_base_ == 0 ||
      (t.address_size_ != 4 && t.address_size_ != 8)) {
    return std::nullopt;
  }
  for (int i = 1; i < t.opcode_base_; ++i)
    t.opcode_lengths_.push_back(static_cast<std::uint8_t>(c.fixed(1)));

  Section line_str = section(elf, ".debug_line_str");
  Section str = section(elf, ".debug_str");
  std::vector<LineEntry> dirs;
  std::vector<LineEntry> files;
  for (auto* table : {&dirs, &files}) {
    std::uint64_t nformats = c.fixed(1);
    std::vector<std::pair<std::uint64_t, std::uint64_t>> formats;
    for (std::uint64_t i = 0; i < nformats && c.ok; ++i) {
      std::uint64_t type = c.uleb();
      formats.emplace_back(type, c.uleb());
    }
    std::uint64_t count = c.uleb();
    if (!c.ok || count > unit_length) return std::nullopt;
    if (!read_entries(c, formats, count, offset_size, line_str, str, *table)) return std::nullopt;
  }
  // As libdw names them: an absolute path as is, else "<dir>/<name>" with the directory
  // entry as written (relative directories are not joined to the compilation directory).
  for (const auto& f : files) {
    if (f.path[0] == '/') {
      t.files_.emplace_back(f.path);
      continue;
    }
    if (f.dir >= dirs.size()) return std::nullopt;  // libdw rejects the whole table
    t.files_.push_back(std::string(dirs[f.dir].path) + "/" + f.path);
  }
  if (program > c.end) return std::nullopt;
  t.program_ = program;
  t.end_ = c.end;
  return t;
}

const std::string* DwarfLines::file(std::uint64_t index) const {
  return index < files_.size() ? &files_[index] : nullptr;
}

std::optional<DwarfLines::Row> DwarfLines::lookup(std::uint64_t addr) const {
  struct State {
    std::uint64_t address = 0;
    std::uint64_t file = 1;
    std::int64_t line = 1;
  };
  // A row's place in libdw's sorted table: address, then a normal row after an
  // end_sequence, then program order.
  struct Key {
    bool found = false;
    std::uint64_t address = 0;
    bool normal = false;
    std::uint64_t order = 0;
    std::uint64_t file = 0;
    std::int64_t line = 0;
    bool before(std::uint64_t a, bool n) const {
      return !found || address < a || (address == a && (n || !normal));
    }
  };
  Key best;  // the last row at or below addr: what the binary search lands on
  Key top;   // the last row of all, which libdw marks end_sequence whatever it was
  State s;
  std::uint64_t order = 0;
  auto emit = [&](bool end_sequence) {
    bool normal = !end_sequence;
    Key row{true, s.address, normal, order++, s.file, s.line};
    if (top.before(s.address, normal)) top = row;
    if (s.address <= addr && best.before(s.address, normal)) best = row;
  };
  Cursor c{program_, end_};
  const std::uint64_t min_len = min_inst_length_;
  while (c.ok && c.p < c.end) {
    std::uint8_t op = static_cast<std::uint8_t>(c.fixed(1));
    if (op >= opcode_base_) {
      unsigned adj = op - opcode_base_;
      s.address += (adj / line_range_) * min_len;
      s.line += line_base_ + static_cast<int>(adj % line_range_);
      emit(false);
      continue;
    }
    switch (op) {
      case 0: {  // extended
        std::uint64_t len = c.uleb();
        if (len == 0 || !c.has(static_cast<std::size_t>(std::min<std::uint64_t>(len, SIZE_MAX)))) {
          return std::nullopt;
        }
        const std::uint8_t* next = c.p + len;
        std::uint8_t sub = static_cast<std::uint8_t>(c.fixed(1));
        if (sub == DW_LNE_end_sequence) {
          emit(true);
          s = State{};
        } else if (sub == DW_LNE_set_address) {
          s.address = c.fixed(address_size_);
        } else if (sub == DW_LNE_define_file) {
          return std::nullopt;  // the file table changes: libdw's business
        }
        c.p = next;
        break;
      }
      case DW_LNS_copy:
        emit(false);
        break;
      case DW_LNS_advance_pc:
        s.address += c.uleb() * min_len;
        break;
      case DW_LNS_advance_line:
        s.line += c.sleb();
        break;
      case DW_LNS_set_file:
        s.file = c.uleb();
        break;
      case DW_LNS_const_add_pc:
        s.address += ((255u - opcode_base_) / line_range_) * min_len;
        break;
      case DW_LNS_fixed_advance_pc:
        s.address += c.fixed(2);
        break;
      default:  // column, stmt, basic block, prologue, epilogue, isa and unknown opcodes
        for (std::uint8_t i = 0; i < opcode_lengths_[op - 1u]; ++i) c.uleb();
        break;
    }
  }
  if (!c.ok || !best.found || !best.normal || best.order == top.order) return std::nullopt;
  const std::string* name = file(best.file);
  if (name == nullptr) return std::nullopt;
  return Row{*name, static_cast<int>(best.line)};
}

}  // namespace hangscan
