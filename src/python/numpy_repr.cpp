#include "python/numpy_repr.h"

#include <fmt/format.h>

#include <array>
#include <cstring>
#include <vector>

#include "python/value_repr.h"

namespace hangscan::python {
namespace {

// PyArrayObject_fields (numpy/ndarraytypes.h), after PyObject_HEAD.
constexpr std::uint64_t kArrayData = 16;        // char *data
constexpr std::uint64_t kArrayNd = 24;          // int nd
constexpr std::uint64_t kArrayDimensions = 32;  // npy_intp *dimensions
constexpr std::uint64_t kArrayStrides = 40;     // npy_intp *strides
constexpr std::uint64_t kArrayDescr = 56;       // PyArray_Descr *descr
// PyArray_Descr: char kind, type, byteorder, (flags) at 24..27, int type_num at 28 (1.x and
// 2.x alike; elsize moved in 2.0, so it is taken from type_num).
constexpr std::uint64_t kDescrByteorder = 26;
constexpr std::uint64_t kDescrTypeNum = 28;
constexpr std::uint64_t kScalarValue = 16;  // Py<Type>ScalarObject.obval
constexpr int kMaxDims = 64;                // NPY_MAXDIMS of numpy 2 (32 before)

using Kind = ElementKind;

// By NPY_TYPES number (x86-64 Linux: long and long long are 64 bits).
constexpr std::array<Element, 24> kTypes = {{
    {"bool", 1, Kind::boolean},        {"int8", 1, Kind::signed_int},
    {"uint8", 1, Kind::unsigned_int},  {"int16", 2, Kind::signed_int},
    {"uint16", 2, Kind::unsigned_int}, {"int32", 4, Kind::signed_int},
    {"uint32", 4, Kind::unsigned_int}, {"int64", 8, Kind::signed_int},
    {"uint64", 8, Kind::unsigned_int}, {"int64", 8, Kind::signed_int},
    {"uint64", 8, Kind::unsigned_int}, {"float32", 4, Kind::real},
    {"float64", 8, Kind::real},        {"float128", 16, Kind::none},
    {"complex64", 8, Kind::none},      {"complex128", 16, Kind::none},
    {"complex256", 32, Kind::none},    {"object", 8, Kind::none},
    {"bytes", 0, Kind::none},          {"str", 0, Kind::none},
    {"void", 0, Kind::none},           {"datetime64", 8, Kind::none},
    {"timedelta64", 8, Kind::none},    {"float16", 2, Kind::none},
}};

// Scalar type names (tp_name) and the element they hold.
std::optional<Element> scalar_element(const std::string& type) {
  static const std::array<std::pair<const char*, int>, 14> kScalars = {{
      {"numpy.bool_", 0},
      {"numpy.bool", 0},
      {"numpy.int8", 1},
      {"numpy.uint8", 2},
      {"numpy.int16", 3},
      {"numpy.uint16", 4},
      {"numpy.int32", 5},
      {"numpy.uint32", 6},
      {"numpy.int64", 7},
      {"numpy.uint64", 8},
      {"numpy.longlong", 9},
      {"numpy.ulonglong", 10},
      {"numpy.float32", 11},
      {"numpy.float64", 12},
  }};
  for (const auto& [name, num] : kScalars)
    if (type == name) return kTypes[static_cast<std::size_t>(num)];
  return std::nullopt;
}

}  // namespace

std::optional<std::string> element_text(ObjectReader& objects, std::uint64_t addr,
                                        const Element& e) {
  unsigned char raw[8] = {};
  if (e.kind == Kind::none || e.size > sizeof(raw) || !objects.read_raw(addr, raw, e.size))
    return std::nullopt;
  switch (e.kind) {
    case Kind::boolean:
      return raw[0] != 0 ? "True" : "False";
    case Kind::signed_int: {
      std::int64_t v = 0;
      // NOLINTNEXTLINE(bugprone-signed-char-misuse): a 1-byte integer, sign-extended on purpose
      if (e.size == 1) v = static_cast<std::int8_t>(raw[0]);
      if (e.size == 2) v = static_cast<std::int16_t>(raw[0] | raw[1] << 8);
      if (e.size == 4) {
        std::int32_t x = 0;
        std::memcpy(&x, raw, 4);
        v = x;
      }
      if (e.size == 8) std::memcpy(&v, raw, 8);
      return std::to_string(v);
    }
    case Kind::unsigned_int: {
      std::uint64_t v = 0;
      std::memcpy(&v, raw, e.size);  // little-endian: the low bytes
      return std::to_string(v);
    }
    case Kind::real: {
      if (e.size == 4) {
        float f = 0;
        std::memcpy(&f, raw, 4);
        return float32_repr(f);
      }
      double d = 0;
      std::memcpy(&d, raw, 8);
      return float_repr(d);
    }
    case Kind::none:
      break;
  }
  return std::nullopt;
}

std::string shape_text(const std::vector<std::int64_t>& dims) {
  std::string out = "(";
  for (std::size_t i = 0; i < dims.size(); ++i) out += (i ? ", " : "") + std::to_string(dims[i]);
  return out + (dims.size() == 1 ? ",)" : ")");
}

std::optional<std::uint64_t> element_count(const std::vector<std::int64_t>& dims) {
  std::uint64_t total = 1;
  for (std::int64_t d : dims) {
    if (d < 0 || (d != 0 && total > (std::uint64_t{1} << 62) / static_cast<std::uint64_t>(d)))
      return std::nullopt;
    total *= static_cast<std::uint64_t>(d);
  }
  return total;
}

std::optional<std::string> strided_values(ObjectReader& objects, std::uint64_t data,
                                          const std::vector<std::int64_t>& dims,
                                          const std::vector<std::int64_t>& strides,
                                          const Element& e, std::size_t items) {
  auto total = element_count(dims);
  if (!total || strides.size() != dims.size()) return std::nullopt;
  std::string values = "[";
  std::uint64_t shown = std::min<std::uint64_t>(*total, items);
  for (std::uint64_t i = 0; i < shown; ++i) {
    // Flat index i in C order -> byte offset through the strides (views, transposes).
    std::int64_t offset = 0;
    std::uint64_t rest = i;
    for (std::size_t k = dims.size(); k-- > 0;) {
      auto d = static_cast<std::uint64_t>(dims[k]);
      offset += static_cast<std::int64_t>(rest % d) * strides[k];
      rest /= d;
    }
    auto text = element_text(objects, data + static_cast<std::uint64_t>(offset), e);
    if (!text) return std::nullopt;
    values += (i ? ", " : "") + *text;
  }
  if (*total > shown) values += fmt::format(", ... {} more", *total - shown);
  return values + "]";
}

namespace {

std::optional<std::string> array_repr(ObjectReader& objects, std::uint64_t obj, std::size_t items) {
  std::uint64_t nd_word = 0;
  std::uint64_t data = 0;
  std::uint64_t dims_at = 0;
  std::uint64_t strides_at = 0;
  std::uint64_t descr = 0;
  if (!objects.read_raw(obj + kArrayData, &data, 8) ||
      !objects.read_raw(obj + kArrayNd, &nd_word, 8) ||
      !objects.read_raw(obj + kArrayDimensions, &dims_at, 8) ||
      !objects.read_raw(obj + kArrayStrides, &strides_at, 8) ||
      !objects.read_raw(obj + kArrayDescr, &descr, 8))
    return std::nullopt;
  auto nd = static_cast<std::int32_t>(nd_word & 0xffffffffu);
  if (nd < 0 || nd > kMaxDims || descr == 0) return std::nullopt;
  std::vector<std::int64_t> dims(static_cast<std::size_t>(nd));
  std::vector<std::int64_t> strides(dims.size());
  if (nd > 0 && (!objects.read_raw(dims_at, dims.data(), dims.size() * 8) ||
                 !objects.read_raw(strides_at, strides.data(), strides.size() * 8)))
    return std::nullopt;
  if (!element_count(dims)) return std::nullopt;
  char order = 0;
  std::int32_t type_num = -1;
  if (!objects.read_raw(descr + kDescrByteorder, &order, 1) ||
      !objects.read_raw(descr + kDescrTypeNum, &type_num, 4) || type_num < 0 ||
      static_cast<std::size_t>(type_num) >= kTypes.size())
    return std::nullopt;  // a user-defined dtype: not read
  const Element& e = kTypes[static_cast<std::size_t>(type_num)];
  std::string out = fmt::format("numpy.ndarray(shape={}, dtype={}", shape_text(dims), e.dtype);
  if (e.kind == Kind::none || order == '>' || data == 0) return out + ")";
  auto values = strided_values(objects, data, dims, strides, e, items);
  return out + ", data=" + values.value_or("<unreadable>") + ")";
}

}  // namespace

std::optional<std::string> numpy_repr(ObjectReader& objects, std::uint64_t obj,
                                      const std::string& type, std::size_t items) {
  if (type == "numpy.ndarray") return array_repr(objects, obj, items);
  auto e = scalar_element(type);
  if (!e) return std::nullopt;
  auto text = element_text(objects, obj + kScalarValue, *e);
  if (!text) return std::nullopt;
  return fmt::format("{}({})", type, *text);
}

}  // namespace hangscan::python
