// torch tensors and numpy arrays rendered from fabricated objects: exact text, and refusals
// when the memory does not read as what the layout says.
#include <gtest/gtest.h>

#include "fake_python.h"
#include "python/numpy_repr.h"
#include "python/torch_repr.h"

namespace hangscan::python {
namespace {

using testing::FakePython;

struct FakeTensor {
  std::uint64_t obj = 0;
  std::uint64_t impl = 0;
};

// A THPVariable whose TensorImpl (per the generated 1.13 row) has `dims`, contiguous strides,
// int64 elements 0, 1, 2, ... and device (type, index).
FakeTensor tensor(FakePython& py, const TorchLayout& t, const std::vector<std::int64_t>& dims,
                  std::int8_t device_type = 0, std::int8_t device_index = -1) {
  FakeTensor f;
  f.obj = py.alloc(48);
  f.impl = py.alloc(256);
  py.put_u64(f.obj + 16 + static_cast<std::uint64_t>(t.maybe_owned_impl), f.impl);
  std::uint64_t ss = f.impl + static_cast<std::uint64_t>(t.impl_sizes_strides);
  py.put_u64(ss + static_cast<std::uint64_t>(t.sizes_strides_size), dims.size());
  std::int64_t numel = 1;
  for (auto d : dims) numel *= d;
  std::int64_t stride = 1;
  std::uint64_t inl = ss + static_cast<std::uint64_t>(t.sizes_strides_inline);
  for (std::size_t k = dims.size(); k-- > 0;) {
    py.put_as<std::int64_t>(inl + 8 * k, dims[k]);
    py.put_as<std::int64_t>(inl + 8 * (static_cast<std::uint64_t>(t.max_inline) + k), stride);
    stride *= dims[k];
  }
  py.put_as<std::int64_t>(f.impl + static_cast<std::uint64_t>(t.impl_numel), numel);
  py.put_as<std::uint16_t>(f.impl + static_cast<std::uint64_t>(t.impl_dtype), 4);  // Long
  std::uint64_t dev = f.impl + static_cast<std::uint64_t>(t.impl_device + t.device_in_optional);
  py.put_as<std::int8_t>(dev, device_type);
  py.put_as<std::int8_t>(dev + 1, device_index);
  std::uint64_t storage = py.alloc(64);
  std::uint64_t data = py.alloc(8 * static_cast<std::size_t>(numel) + 8);
  for (std::int64_t i = 0; i < numel; ++i)
    py.put_as<std::int64_t>(data + 8 * static_cast<std::uint64_t>(i), i * 10);
  py.put_u64(storage + static_cast<std::uint64_t>(t.storage_data), data);
  py.put_u64(f.impl + static_cast<std::uint64_t>(t.impl_storage), storage);
  return f;
}

TEST(TensorRepr, ReadsShapeDtypeDeviceAndValues) {
  const TorchLayout* t = torch_layout("1.13.0a0");
  ASSERT_NE(t, nullptr);
  FakePython py(*builtin_layout(3, 11));
  FakeTensor cpu = tensor(py, *t, {2, 3});
  FakeTensor cuda = tensor(py, *t, {4}, 1, 0);
  FakeTensor bad = tensor(py, *t, {2, 3});
  py.put_as<std::int64_t>(bad.impl + static_cast<std::uint64_t>(t->impl_numel), 7);  // != 2*3
  FakeTensor deep = tensor(py, *t, {2, 3});
  py.put_u64(deep.impl + static_cast<std::uint64_t>(t->impl_sizes_strides), 70);  // > 64 dims
  auto mem = py.memory();
  ObjectReader objects(*mem, py.layout());
  EXPECT_EQ(tensor_repr(objects, cpu.obj, *t, 10),
            "torch.Tensor(shape=(2, 3), dtype=int64, device=cpu, data=[0, 10, 20, 30, 40, 50])");
  EXPECT_EQ(tensor_repr(objects, cpu.obj, *t, 4),
            "torch.Tensor(shape=(2, 3), dtype=int64, device=cpu, data=[0, 10, 20, 30, ... 2 "
            "more])");
  // Device memory is not in the process: no values.
  EXPECT_EQ(tensor_repr(objects, cuda.obj, *t, 10),
            "torch.Tensor(shape=(4,), dtype=int64, device=cuda:0)");
  EXPECT_EQ(tensor_repr(objects, bad.obj, *t, 10), std::nullopt);
  EXPECT_EQ(tensor_repr(objects, deep.obj, *t, 10), std::nullopt);
}

TEST(NumpyRepr, StridedValuesInCOrder) {
  FakePython py(*builtin_layout(3, 11));
  std::uint64_t data = py.alloc(64);
  for (std::int32_t i = 0; i < 6; ++i) py.put_as<std::int32_t>(data + 4 * i, i);
  auto mem = py.memory();
  ObjectReader objects(*mem, py.layout());
  Element int32{"int32", 4, ElementKind::signed_int};
  // A 2x3 array and its transpose (3x2, byte strides 4 and 12).
  EXPECT_EQ(strided_values(objects, data, {2, 3}, {12, 4}, int32, 10), "[0, 1, 2, 3, 4, 5]");
  EXPECT_EQ(strided_values(objects, data, {3, 2}, {4, 12}, int32, 10), "[0, 3, 1, 4, 2, 5]");
  EXPECT_EQ(strided_values(objects, data, {3, 2}, {4, 12}, int32, 2), "[0, 3, ... 4 more]");
  EXPECT_EQ(strided_values(objects, data + (1 << 30), {2}, {4}, int32, 10), std::nullopt);
  EXPECT_EQ(element_count({-1, 2}), std::nullopt);
  EXPECT_EQ(shape_text({}), "()");
  EXPECT_EQ(shape_text({7}), "(7,)");
}

}  // namespace
}  // namespace hangscan::python
