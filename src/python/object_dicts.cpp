// ObjectReader: dicts, instance attributes and ints (see objects.h).
//
// Dict tables: 3.6-3.10 keep dk_size and 24-byte entries {hash, key, value} after an index
// array of 1, 2, 4 or 8 bytes per slot (by size); 3.11+ keep log2 sizes and, for str-only keys
// (dk_kind != 0), 16-byte entries {key, value}. A split table keeps its values apart, indexed
// like the entries. Every size read from the target is checked before it is used.
#include <fmt/format.h>

#include <algorithm>
#include <cstring>

#include "python/objects.h"

namespace hangscan::python {
namespace {

constexpr std::int64_t kManagedDictOffset = -3 * 8;    // 3.11+: dict (or tagged values) pointer
constexpr std::int64_t kManagedValuesOffset = -4 * 8;  // 3.11: values pointer
constexpr std::uint64_t kManagedDictFlag = 1u << 4;    // Py_TPFLAGS_MANAGED_DICT
constexpr std::uint64_t kInlineValuesFlag = 1u << 2;   // Py_TPFLAGS_INLINE_VALUES (3.13+)
constexpr std::int64_t kValuesValidOffset = 3;         // PyDictValues.valid (3.13+)
constexpr unsigned kMaxLog2Size = 30;
constexpr std::size_t kChunk = 256;  // entries read at a time
constexpr int kDigitBits = 30;

// Where the entries of one keys object are and what they look like.
struct KeysShape {
  std::uint64_t entries = 0;
  std::size_t entry_size = 24;
  std::size_t key_at = 8;          // offset of the key in an entry
  std::size_t value_at = 16;       // offset of the value in an entry
  std::uint64_t nentries = 0;      // entries to scan (capped)
  std::uint64_t used_entries = 0;  // dk_nentries as the table says
};

std::size_t index_bytes(std::uint64_t size) {
  return size <= 0xff ? 1 : size <= 0xffff ? 2 : size <= 0xffffffffULL ? 4 : 8;
}

std::optional<KeysShape> keys_shape(MemoryReader& mem, const PyOffsets& o, std::uint64_t keys) {
  if (keys == 0 || o.keys_size < 0 || o.keys_nentries < 0 || o.keys_indices < 0)
    return std::nullopt;
  KeysShape k;
  std::uint64_t size = 0;
  std::uint64_t indices_len = 0;
  if (o.keys_kind < 0) {
    std::int64_t s = 0;
    if (!mem.read_obj(keys + o.keys_size, s) || s < 8 || s > (std::int64_t{1} << kMaxLog2Size) ||
        (s & (s - 1)) != 0)
      return std::nullopt;
    size = static_cast<std::uint64_t>(s);
    indices_len = size * index_bytes(size);
  } else {
    std::uint8_t log2[2] = {};
    std::uint8_t kind = 0;
    if (!mem.read_exact(keys + o.keys_size, log2, 2) || !mem.read_obj(keys + o.keys_kind, kind) ||
        log2[0] > kMaxLog2Size || log2[1] < log2[0] || log2[1] > log2[0] + 3 || kind > 2)
      return std::nullopt;
    size = std::uint64_t{1} << log2[0];
    indices_len = std::uint64_t{1} << log2[1];
    if (kind != 0) {
      k.entry_size = 16;
      k.key_at = 0;
      k.value_at = 8;
    }
  }
  std::int64_t n = 0;
  if (!mem.read_obj(keys + o.keys_nentries, n) || n < 0 || static_cast<std::uint64_t>(n) > size)
    return std::nullopt;
  k.used_entries = static_cast<std::uint64_t>(n);
  k.nentries = std::min<std::uint64_t>(k.used_entries, kMaxDictEntries);
  k.entries = keys + static_cast<std::uint64_t>(o.keys_indices) + indices_len;
  return k;
}

// Reads entries [first, first + count) of `k` into `raw`.
bool read_entries(MemoryReader& mem, const KeysShape& k, std::uint64_t first, std::size_t count,
                  std::vector<std::uint8_t>& raw) {
  raw.resize(count * k.entry_size);
  return mem.read_exact(k.entries + first * k.entry_size, raw.data(), raw.size());
}

std::uint64_t word_at(const std::vector<std::uint8_t>& raw, std::size_t off) {
  std::uint64_t v = 0;
  std::memcpy(&v, raw.data() + off, 8);
  return v;
}

// Live items of `k`; values from `values` (an array indexed like the entries) when non-zero.
std::optional<std::vector<DictItem>> scan(MemoryReader& mem, const KeysShape& k,
                                          std::uint64_t values, std::size_t max) {
  std::vector<DictItem> out;
  std::vector<std::uint8_t> raw;
  std::vector<std::uint64_t> vals;
  for (std::uint64_t first = 0; first < k.nentries && out.size() < max; first += kChunk) {
    std::size_t count =
        static_cast<std::size_t>(std::min<std::uint64_t>(kChunk, k.nentries - first));
    if (!read_entries(mem, k, first, count, raw)) return std::nullopt;
    if (values != 0) {
      vals.resize(count);
      if (!mem.read_exact(values + first * 8, vals.data(), count * 8)) return std::nullopt;
    }
    for (std::size_t i = 0; i < count && out.size() < max; ++i) {
      DictItem item;
      item.key = word_at(raw, i * k.entry_size + k.key_at);
      item.value = values != 0 ? vals[i] : word_at(raw, i * k.entry_size + k.value_at);
      if (item.key != 0 && item.value != 0) out.push_back(item);
    }
  }
  return out;
}

}  // namespace

std::uint64_t ObjectReader::type_of(std::uint64_t obj) {
  std::uint64_t type = 0;
  if (obj == 0 || !mem_.read_obj(obj + layout_.off.object_type, type)) return 0;
  return type;
}

std::optional<std::vector<DictItem>> ObjectReader::dict_items(std::uint64_t dict, std::size_t max,
                                                              std::size_t* total) {
  const PyOffsets& o = layout_.off;
  if (dict == 0 || o.dict_keys < 0 || o.dict_values < 0) return std::nullopt;
  std::uint64_t keys = 0;
  std::uint64_t values = 0;
  std::int64_t used = 0;
  if (!mem_.read_obj(dict + o.dict_keys, keys) || !mem_.read_obj(dict + o.dict_values, values) ||
      !mem_.read_obj(dict + layout_.off.object_head, used) || used < 0)  // ma_used
    return std::nullopt;
  if (total != nullptr) *total = static_cast<std::size_t>(used);
  if (used == 0) return std::vector<DictItem>{};
  if (values != 0)
    return split_items(keys, values + static_cast<std::uint64_t>(o.values_items), max);
  auto k = keys_shape(mem_, o, keys);
  // More live items than entries ever used: not a dict (or one torn mid-update).
  if (!k || static_cast<std::uint64_t>(used) > k->used_entries) return std::nullopt;
  return scan(mem_, *k, 0, max);
}

std::optional<std::vector<std::uint64_t>> ObjectReader::set_items(std::uint64_t set,
                                                                  std::size_t max,
                                                                  std::size_t* total) {
  const PyOffsets& o = layout_.off;
  if (o.set_table < 0) return std::nullopt;
  auto used = read_word(set + o.set_used);
  auto mask = read_word(set + o.set_mask);
  auto table = read_word(set + o.set_table);
  if (!used || !mask || !table || *mask >= (1u << 24) || *used > *mask + 1 || *table == 0)
    return std::nullopt;
  if (total != nullptr) *total = static_cast<std::size_t>(*used);
  std::vector<std::uint64_t> keys;
  if (*used == 0) return keys;
  std::vector<std::uint64_t> raw(static_cast<std::size_t>(*mask + 1) * 2);  // {key, hash}
  if (!read_words(*table, raw)) return std::nullopt;
  for (std::size_t i = 0; i + 1 < raw.size() && keys.size() < max; i += 2) {
    // A free slot has no key; a deleted one keeps the dummy key with hash -1.
    if (raw[i] == 0 || static_cast<std::int64_t>(raw[i + 1]) == -1) continue;
    keys.push_back(raw[i]);
  }
  return keys;
}

std::optional<std::vector<DictItem>> ObjectReader::split_items(std::uint64_t keys,
                                                               std::uint64_t values,
                                                               std::size_t max) {
  auto k = keys_shape(mem_, layout_.off, keys);
  if (!k || values == 0) return std::nullopt;
  return scan(mem_, *k, values, max);
}

bool ObjectReader::str_equals(std::uint64_t obj, std::string_view s) {
  std::int64_t length = 0;
  if (obj == 0 || !mem_.read_obj(obj + layout_.off.unicode_length, length) ||
      length != static_cast<std::int64_t>(s.size()))
    return false;
  auto got = read_str(obj, s.size() + 1);
  return got && *got == s;
}

std::optional<std::uint64_t> ObjectReader::value_of(
    const std::optional<std::vector<DictItem>>& items, std::string_view key) {
  if (!items) return std::nullopt;
  for (const DictItem& it : *items) {
    if (str_equals(it.key, key)) return it.value;
  }
  return std::nullopt;
}

std::optional<std::uint64_t> ObjectReader::dict_get(std::uint64_t dict, std::string_view key) {
  return value_of(dict_items(dict, kMaxDictEntries), key);
}

std::optional<std::uint64_t> ObjectReader::attribute(std::uint64_t obj, std::string_view name) {
  const PyOffsets& o = layout_.off;
  std::uint64_t type = type_of(obj);
  std::uint64_t flags = 0;
  if (type == 0 || !mem_.read_obj(type + o.type_flags, flags)) return std::nullopt;
  auto in_values = [&](std::uint64_t values) -> std::optional<std::uint64_t> {
    std::uint64_t keys = 0;
    if (!mem_.read_obj(type + o.heaptype_cached_keys, keys)) return std::nullopt;
    return value_of(
        split_items(keys, values + static_cast<std::uint64_t>(o.values_items), kMaxDictEntries),
        name);
  };
  std::uint64_t word = 0;
  bool managed = (flags & kManagedDictFlag) != 0;
  switch (layout_.instance_dict) {
    case InstanceDict::dict_offset:
      break;
    case InstanceDict::managed_311:
      if (!managed) break;
      if (mem_.read_obj(obj + kManagedDictOffset, word) && word != 0) return dict_get(word, name);
      if (mem_.read_obj(obj + kManagedValuesOffset, word) && word != 0) return in_values(word);
      return std::nullopt;
    case InstanceDict::managed_312:
      if (!managed) break;
      if (!mem_.read_obj(obj + kManagedDictOffset, word) || word == 0) return std::nullopt;
      if ((word & 1) != 0) return in_values(word + 1);
      return dict_get(word, name);
    case InstanceDict::inline_313: {
      if (!managed) break;
      if (mem_.read_obj(obj + kManagedDictOffset, word) && word != 0) return dict_get(word, name);
      std::int64_t basic = 0;
      std::uint8_t valid = 0;
      if ((flags & kInlineValuesFlag) == 0 || !mem_.read_obj(type + o.type_basicsize, basic) ||
          basic <= 0)
        return std::nullopt;
      std::uint64_t values = obj + static_cast<std::uint64_t>(basic);
      if (!mem_.read_obj(values + kValuesValidOffset, valid) || valid == 0) return std::nullopt;
      return in_values(values);
    }
  }
  std::int64_t dictoffset = 0;
  if (!mem_.read_obj(type + o.type_dictoffset, dictoffset) || dictoffset <= 0 ||
      !mem_.read_obj(obj + static_cast<std::uint64_t>(dictoffset), word) || word == 0)
    return std::nullopt;
  return dict_get(word, name);
}

std::optional<LongValue> ObjectReader::read_long(std::uint64_t obj) {
  const PyOffsets& o = layout_.off;
  LongValue v;
  if (layout_.long_tagged) {
    std::uint64_t tag = 0;
    if (!mem_.read_obj(obj + o.long_size, tag)) return std::nullopt;
    if ((tag & 3) == 1) return v;  // zero
    v.negative = (tag & 3) == 2;
    v.ndigits = static_cast<std::size_t>(tag >> 3);
  } else {
    std::int64_t size = 0;
    if (!mem_.read_obj(obj + o.long_size, size)) return std::nullopt;
    v.negative = size < 0;
    v.ndigits = static_cast<std::size_t>(size < 0 ? -size : size);
  }
  if (v.ndigits > (std::size_t{1} << 40)) return std::nullopt;
  v.digits.resize(std::min(v.ndigits, kMaxLongDigits));
  if (!mem_.read_exact(obj + o.long_digits, v.digits.data(), v.digits.size() * 4))
    return std::nullopt;
  for (auto& d : v.digits) d &= (1u << kDigitBits) - 1;
  return v;
}

std::optional<std::string> long_to_decimal(const LongValue& v, std::size_t max_chars) {
  if (v.digits.size() < v.ndigits) return std::nullopt;
  if (v.ndigits * kDigitBits / 3 > max_chars * 2) return std::nullopt;  // far too long
  // Base 2^30 to base 10^9 by repeated multiply-add (schoolbook, as CPython's long_to_decimal).
  constexpr std::uint32_t kBase = 1000000000;
  std::vector<std::uint32_t> out;  // base 10^9, least significant first
  for (std::size_t i = v.digits.size(); i-- > 0;) {
    std::uint64_t carry = v.digits[i];
    for (auto& d : out) {
      std::uint64_t z = (static_cast<std::uint64_t>(d) << kDigitBits) + carry;
      d = static_cast<std::uint32_t>(z % kBase);
      carry = z / kBase;
    }
    while (carry != 0) {
      out.push_back(static_cast<std::uint32_t>(carry % kBase));
      carry /= kBase;
    }
  }
  std::string s = v.negative && !out.empty() ? "-" : "";
  if (out.empty()) return "0";
  s += fmt::format("{}", out.back());
  for (std::size_t i = out.size() - 1; i-- > 0;) s += fmt::format("{:09}", out[i]);
  if (s.size() > max_chars) return std::nullopt;
  return s;
}

}  // namespace hangscan::python
