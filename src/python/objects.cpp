#include "python/objects.h"

#include "util/utf8.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>

namespace hangscan::python {
namespace {

constexpr std::uint64_t kTagBits = 3;  // _PyStackRef tag bits (3.14)

}  // namespace

std::uint64_t ObjectReader::untag(std::uint64_t bits) const {
  return layout_.stackref ? (bits & ~kTagBits) : bits;
}

std::optional<std::string> ObjectReader::read_str(std::uint64_t obj, std::size_t max_chars,
                                                  bool* truncated) {
  const PyOffsets& o = layout_.off;
  if (obj == 0) return std::nullopt;
  std::int64_t length = 0;
  std::uint32_t state = 0;
  if (!mem_.read_obj(obj + o.unicode_length, length) ||
      !mem_.read_obj(obj + o.unicode_state, state))
    return std::nullopt;
  // A str cannot be longer than the address space would allow; torn reads show as garbage.
  if (length < 0 || length > (std::int64_t{1} << 40)) return std::nullopt;
  unsigned kind = (state >> 2) & 7;
  bool compact = ((state >> 5) & 1) != 0;
  bool ascii = ((state >> 6) & 1) != 0;
  if (kind != 1 && kind != 2 && kind != 4) return std::nullopt;
  std::uint64_t data = 0;
  if (compact && ascii) {
    data = obj + o.unicode_ascii_size;
  } else if (compact) {
    data = obj + o.unicode_compact_size;
  } else if (!mem_.read_obj(obj + o.unicode_compact_size, data) || data == 0) {
    return std::nullopt;
  }
  std::size_t n = static_cast<std::size_t>(length);
  bool cut = n > max_chars;
  if (truncated != nullptr) *truncated = cut;
  n = std::min(n, max_chars);
  std::vector<std::uint8_t> raw(n * kind);
  if (!mem_.read_exact(data, raw.data(), raw.size())) return std::nullopt;
  std::string out;
  out.reserve(n);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t cp = 0;
    if (kind == 1) {
      cp = raw[i];
    } else if (kind == 2) {
      std::uint16_t v;
      std::memcpy(&v, &raw[i * 2], 2);
      cp = v;
    } else {
      std::memcpy(&cp, &raw[i * 4], 4);
    }
    append_utf8(out, cp);
  }
  return out;
}

std::optional<std::uint64_t> ObjectReader::var_size(std::uint64_t obj, std::int64_t size_offset) {
  std::int64_t size = 0;
  if (obj == 0 || !mem_.read_obj(obj + size_offset, size) || size < 0) return std::nullopt;
  return static_cast<std::uint64_t>(size);
}

std::optional<std::string> ObjectReader::read_bytes(std::uint64_t obj, std::size_t max_len) {
  auto size = var_size(obj, layout_.off.bytes_size);
  if (!size || *size > max_len) return std::nullopt;
  std::string out(static_cast<std::size_t>(*size), '\0');
  if (!mem_.read_exact(obj + layout_.off.bytes_data, out.data(), out.size())) return std::nullopt;
  return out;
}

std::optional<std::vector<std::uint64_t>> ObjectReader::tuple_items(std::uint64_t tuple,
                                                                    std::size_t max) {
  auto size = var_size(tuple, layout_.off.tuple_size);
  if (!size || *size > max) return std::nullopt;
  std::vector<std::uint64_t> items(static_cast<std::size_t>(*size));
  if (!mem_.read_exact(tuple + layout_.off.tuple_items, items.data(), items.size() * 8))
    return std::nullopt;
  return items;
}

std::optional<std::string> ObjectReader::type_name(std::uint64_t obj) {
  std::uint64_t type = 0;
  if (obj == 0 || !mem_.read_obj(obj + layout_.off.object_type, type) || type == 0)
    return std::nullopt;
  if (auto it = type_names_.find(type); it != type_names_.end()) return it->second;
  std::uint64_t name_ptr = 0;
  if (!mem_.read_obj(type + layout_.off.type_name, name_ptr) || name_ptr == 0) return std::nullopt;
  auto name = mem_.read_cstring(name_ptr, 128);
  if (!name || name->empty()) return std::nullopt;
  if (type_names_.size() < 4096) type_names_[type] = *name;
  return name;
}

std::optional<std::string> ObjectReader::read_bytes_prefix(std::uint64_t obj, std::size_t len) {
  auto size = var_size(obj, layout_.off.bytes_size);
  if (!size) return std::nullopt;
  std::string out(static_cast<std::size_t>(std::min<std::uint64_t>(*size, len)), '\0');
  if (!mem_.read_exact(obj + layout_.off.bytes_data, out.data(), out.size())) return std::nullopt;
  return out;
}

std::optional<std::uint64_t> ObjectReader::read_word(std::uint64_t addr) {
  std::uint64_t v = 0;
  if (!mem_.read_obj(addr, v)) return std::nullopt;
  return v;
}

bool ObjectReader::read_words(std::uint64_t addr, std::vector<std::uint64_t>& out) {
  return mem_.read_exact(addr, out.data(), out.size() * 8);
}

std::optional<double> ObjectReader::read_double(std::uint64_t addr) {
  double d = 0;
  if (!mem_.read_obj(addr, d)) return std::nullopt;
  return d;
}

}  // namespace hangscan::python
