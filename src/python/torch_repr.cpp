#include "python/torch_repr.h"

#include <fmt/format.h>

namespace hangscan::python {
namespace {

// PyTypeObject.tp_name and tp_base: the same in every CPython 3.x on 64-bit targets.
constexpr std::uint64_t kTypeName = 24;
constexpr std::uint64_t kTypeBase = 256;
constexpr std::size_t kMaxBases = 16;
constexpr std::uint64_t kMaxDims = 64;
constexpr std::string_view kTensorBase = "torch._C._TensorBase";

// c10::DeviceType names of the devices torch prints (c10/core/DeviceType.h).
std::optional<std::string> device_name(std::int8_t type, std::int8_t index) {
  static const char* const kNames[] = {"cpu", "cuda", "mkldnn", "opengl", "opencl", "ideep",
                                       "hip", "fpga", "ort",    "xla",    "vulkan", "metal",
                                       "xpu", "mps",  "meta",   "hpu",    "ve",     "lazy"};
  if (type < 0 || static_cast<std::size_t>(type) >= std::size(kNames)) return std::nullopt;
  std::string out = kNames[type];
  if (index >= 0) out += fmt::format(":{}", index);
  return out;
}

std::optional<std::int64_t> read_i64(ObjectReader& objects, std::uint64_t addr) {
  std::int64_t v = 0;
  if (!objects.read_raw(addr, &v, sizeof(v))) return std::nullopt;
  return v;
}

}  // namespace

const TorchLayout* torch_layout(const std::string& version) {
  for (const auto& row : torch_layouts())
    if (version == row.version) return &row;
  return nullptr;
}

const TorchLayout* imported_torch(ObjectReader& objects, const PyOffsets& o, std::uint64_t interp,
                                  std::string* version) {
  version->clear();
  if (o.interp_modules < 0 || o.module_dict < 0) return nullptr;
  auto modules = objects.read_word(interp + static_cast<std::uint64_t>(o.interp_modules));
  auto module =
      modules && *modules != 0 ? objects.dict_get(*modules, "torch.version") : std::nullopt;
  auto md = module ? objects.read_word(*module + static_cast<std::uint64_t>(o.module_dict))
                   : std::nullopt;
  auto str = md && *md != 0 ? objects.dict_get(*md, "__version__") : std::nullopt;
  if (!str || objects.type_name(*str).value_or("") != "str") return nullptr;
  *version = objects.read_str(*str, 64).value_or("");
  return torch_layout(*version);
}

bool is_torch_tensor(ObjectReader& objects, std::uint64_t obj) {
  std::uint64_t type = objects.type_of(obj);
  for (std::size_t i = 0; i < kMaxBases && type != 0; ++i) {
    auto name = objects.read_word(type + kTypeName);
    char buf[kTensorBase.size() + 1] = {};
    if (!name || !objects.read_raw(*name, buf, sizeof(buf))) return false;
    if (std::string_view(buf, kTensorBase.size()) == kTensorBase && buf[kTensorBase.size()] == 0)
      return true;
    type = objects.read_word(type + kTypeBase).value_or(0);
  }
  return false;
}

std::optional<std::string> tensor_repr(ObjectReader& objects, std::uint64_t obj,
                                       const TorchLayout& t, std::size_t items) {
  auto impl = objects.read_word(obj + 16 + static_cast<std::uint64_t>(t.maybe_owned_impl));
  if (!impl || *impl == 0) return std::nullopt;
  std::uint64_t ss = *impl + static_cast<std::uint64_t>(t.impl_sizes_strides);
  auto nd = objects.read_word(ss + static_cast<std::uint64_t>(t.sizes_strides_size));
  if (!nd || *nd > kMaxDims) return std::nullopt;
  std::uint64_t at = ss + static_cast<std::uint64_t>(t.sizes_strides_inline);
  if (*nd > static_cast<std::uint64_t>(t.max_inline)) {  // out of line: a pointer to both
    auto p = objects.read_word(at);
    if (!p) return std::nullopt;
    at = *p;
  }
  std::vector<std::int64_t> dims(*nd);
  std::vector<std::int64_t> strides(*nd);
  std::uint64_t strides_at = at + 8 * (*nd > static_cast<std::uint64_t>(t.max_inline)
                                           ? *nd
                                           : static_cast<std::uint64_t>(t.max_inline));
  if (*nd > 0 && (!objects.read_raw(at, dims.data(), 8 * *nd) ||
                  !objects.read_raw(strides_at, strides.data(), 8 * *nd)))
    return std::nullopt;
  auto numel = read_i64(objects, *impl + static_cast<std::uint64_t>(t.impl_numel));
  auto count = element_count(dims);
  if (!numel || !count || static_cast<std::uint64_t>(*numel) != *count) return std::nullopt;
  std::uint16_t type_index = 0;
  std::int8_t device[2] = {};
  if (!objects.read_raw(*impl + static_cast<std::uint64_t>(t.impl_dtype), &type_index, 2) ||
      !objects.read_raw(*impl + static_cast<std::uint64_t>(t.impl_device + t.device_in_optional),
                        device, 2))
    return std::nullopt;
  auto dtype = t.dtypes.find(type_index);
  auto dev = device_name(device[0], device[1]);
  if (dtype == t.dtypes.end() || !dev) return std::nullopt;
  const Element& e = dtype->second;
  std::string out =
      fmt::format("torch.Tensor(shape={}, dtype={}, device={}", shape_text(dims), e.dtype, *dev);
  if (device[0] != 0 || e.kind == ElementKind::none) return out + ")";  // values: CPU only
  auto storage = objects.read_word(*impl + static_cast<std::uint64_t>(t.impl_storage));
  auto data = storage && *storage != 0
                  ? objects.read_word(*storage + static_cast<std::uint64_t>(t.storage_data))
                  : std::nullopt;
  auto offset = read_i64(objects, *impl + static_cast<std::uint64_t>(t.impl_storage_offset));
  if (!data || !offset || *offset < 0) return out + ", data=<unreadable>)";
  for (auto& s : strides) s *= static_cast<std::int64_t>(e.size);  // elements -> bytes
  auto values = strided_values(objects, *data + static_cast<std::uint64_t>(*offset) * e.size, dims,
                               strides, e, items);
  return out + ", data=" + values.value_or("<unreadable>") + ")";
}

}  // namespace hangscan::python
