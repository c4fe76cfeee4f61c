// torch tensors in --locals: shape, dtype, device and the first values, read from the
// tensor's C++ objects without calling into torch.
//
// Why: the tensor whose shape or device disagrees between ranks is a common cause of a hung
// collective. A torch.Tensor's Python object (THPVariable) points to a c10::TensorImpl whose
// private fields move between torch releases, so their offsets are generated per release from
// torch's headers (tools/gen_torch_offsets.py -> torch_offsets.cpp) and used only when the
// target's torch.version.__version__ names a generated row; any other torch keeps
// `<Tensor at 0x...>`. Every tensor read is checked: numel equals the product of the sizes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "python/layout.h"
#include "python/numpy_repr.h"
#include "python/objects.h"

namespace hangscan::python {

struct TorchLayout {
  const char* version = "";                // torch.version.__version__
  std::int64_t maybe_owned_impl = -1;      // THPVariable.cdata: TensorImpl* at this offset
  std::int64_t impl_storage = -1;          // TensorImpl.storage_ (StorageImpl*)
  std::int64_t impl_sizes_strides = -1;    // TensorImpl.sizes_and_strides_
  std::int64_t impl_storage_offset = -1;   // int64, in elements
  std::int64_t impl_numel = -1;            // int64
  std::int64_t impl_dtype = -1;            // caffe2::TypeMeta (uint16 index)
  std::int64_t impl_device = -1;           // c10::optional<c10::Device>
  std::int64_t sizes_strides_size = -1;    // SizesAndStrides.size_ (dimensions)
  std::int64_t sizes_strides_inline = -1;  // sizes then strides inline, or a pointer to them
  std::int64_t max_inline = 0;             // dimensions kept inline
  std::int64_t storage_data = -1;          // StorageImpl: the data pointer
  std::int64_t device_in_optional = -1;    // Device {int8 type, int8 index} in the optional
  std::map<int, Element> dtypes;           // by TypeMeta index
};

// The generated rows (torch_offsets.cpp).
const std::vector<TorchLayout>& torch_layouts();

// The row of a torch version ("1.13.0a0"), nullptr when none was generated.
const TorchLayout* torch_layout(const std::string& version);

// The row of the torch imported in interpreter `interp` (sys.modules["torch.version"]
// .__version__); nullptr when torch is not imported or has no row. `version` receives the
// version read, "" when none.
const TorchLayout* imported_torch(ObjectReader& objects, const PyOffsets& o, std::uint64_t interp,
                                  std::string* version);

// `torch.Tensor(shape=(3, 4), dtype=float32, device=cpu, data=[0.0, 0.125, ... 10 more])`;
// values only on the CPU, flat in C order (storage offset and strides applied), at most
// `items`. nullopt when the object does not read as a tensor of this layout.
std::optional<std::string> tensor_repr(ObjectReader& objects, std::uint64_t obj,
                                       const TorchLayout& torch, std::size_t items);

// The object's type is torch's tensor class or derives from it (torch._C._TensorBase, by the
// type chain: Tensor, Parameter, user subclasses).
bool is_torch_tensor(ObjectReader& objects, std::uint64_t obj);

}  // namespace hangscan::python
