#!/usr/bin/env python3
"""Writes src/python/torch_offsets.cpp: where a torch.Tensor keeps its shape, dtype, device and
data, for the installed torch.

A torch.Tensor (THPVariable) holds a c10::MaybeOwned<at::TensorBase> whose value is the
TensorImpl pointer; TensorImpl's fields are private C++ members whose offsets change between
torch releases. They are asked of the compiler: a small C++ program includes torch's own
headers (libtorch-dev, /usr/include/c10, ATen) with private members made visible, prints
offsetof() of each field, finds the two it cannot name (MaybeOwned's value, the Device inside
c10::optional) in objects it builds, and prints each ScalarType's TypeMeta index and element
size. The row is keyed by torch.version.__version__ of the same installation: hangscan reads
tensors only of a torch whose version has a row. Nothing is typed by hand.

Usage: tools/gen_torch_offsets.py [--python /usr/bin/python3] [--out src/python/torch_offsets.cpp]
Needs: g++, libtorch-dev (headers, libc10) matching the python's torch.
"""
import argparse
import os
import shutil
import subprocess
import sys
import tempfile

PROBE = r"""
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>
#define private public
#define protected public
#include <c10/core/TensorImpl.h>
#include <c10/core/StorageImpl.h>
#include <c10/util/MaybeOwned.h>
#include <ATen/core/TensorBase.h>
#undef private
#undef protected
int main() {
  using MO = c10::MaybeOwned<at::TensorBase>;
  at::TensorBase base;
  MO mo = MO::borrowed(base);
  const void* impl = base.unsafeGetTensorImpl();
  unsigned char raw[sizeof(MO)];
  std::memcpy(raw, &mo, sizeof(MO));
  for (size_t i = 0; i + 8 <= sizeof(MO); i += 8)
    if (std::memcmp(raw + i, &impl, 8) == 0) std::printf("maybe_owned_impl %zu\n", i);
  std::printf("impl_storage %zu\n", offsetof(c10::TensorImpl, storage_));
  std::printf("impl_sizes_strides %zu\n", offsetof(c10::TensorImpl, sizes_and_strides_));
  std::printf("impl_storage_offset %zu\n", offsetof(c10::TensorImpl, storage_offset_));
  std::printf("impl_numel %zu\n", offsetof(c10::TensorImpl, numel_));
  std::printf("impl_dtype %zu\n", offsetof(c10::TensorImpl, data_type_));
  std::printf("impl_device %zu\n", offsetof(c10::TensorImpl, device_opt_));
  std::printf("sizes_strides_size %zu\n", offsetof(c10::impl::SizesAndStrides, size_));
  std::printf("sizes_strides_inline %zu\n", offsetof(c10::impl::SizesAndStrides, inlineStorage_));
  std::printf("max_inline %d\n", C10_SIZES_AND_STRIDES_MAX_INLINE_SIZE);
  std::printf("storage_data %zu\n", offsetof(c10::Storage, storage_impl_) == 0 ?
      offsetof(c10::StorageImpl, data_ptr_) + offsetof(c10::DataPtr, ptr_) +
      offsetof(c10::detail::UniqueVoidPtr, data_) : (size_t)-1);
  c10::optional<c10::Device> d(c10::Device(c10::DeviceType::CUDA, 3));
  unsigned char dev[sizeof(d)];
  std::memcpy(dev, &d, sizeof(d));
  for (size_t i = 0; i + 1 < sizeof(d); ++i)
    if (dev[i] == (unsigned char)c10::DeviceType::CUDA && dev[i + 1] == 3) {
      std::printf("device_in_optional %zu\n", i);
      break;
    }
  for (int s = 0; s <= (int)c10::ScalarType::BFloat16; ++s)
    std::printf("scalar %u %s %zu\n",
                caffe2::TypeMeta::fromScalarType((c10::ScalarType)s).index_,
                c10::toString((c10::ScalarType)s), c10::elementSize((c10::ScalarType)s));
}
"""

# torch's printed dtype names (str(torch.float32) without "torch.") by ScalarType name, and
# the element kind hangscan renders exactly.
DTYPES = {"Byte": ("uint8", "unsigned_int"), "Char": ("int8", "signed_int"),
          "Short": ("int16", "signed_int"), "Int": ("int32", "signed_int"),
          "Long": ("int64", "signed_int"), "Half": ("float16", "none"),
          "Float": ("float32", "real"), "Double": ("float64", "real"),
          "ComplexHalf": ("complex32", "none"), "ComplexFloat": ("complex64", "none"),
          "ComplexDouble": ("complex128", "none"), "Bool": ("bool", "boolean"),
          "QInt8": ("qint8", "none"), "QUInt8": ("quint8", "none"),
          "QInt32": ("qint32", "none"), "BFloat16": ("bfloat16", "none")}


def probe():
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "probe.cpp")
        exe = os.path.join(tmp, "probe")
        with open(src, "w") as fh:
            fh.write(PROBE)
        subprocess.run(["g++", "-std=c++17", "-O0", "-Wno-invalid-offsetof", "-I/usr/include", src, "-o", exe, "-lc10"],
                       check=True)
        out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    fields, scalars = {}, []
    for line in out.splitlines():
        parts = line.split()
        if parts[0] == "scalar":
            scalars.append((int(parts[1]), parts[2], int(parts[3])))
        else:
            fields[parts[0]] = int(parts[1])
    return fields, scalars


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--python", default="/usr/bin/python3")
    ap.add_argument("--out", default="src/python/torch_offsets.cpp")
    args = ap.parse_args()
    version = subprocess.run([args.python, "-c", "import torch.version as v; print(v.__version__)"],
                             check=True, capture_output=True, text=True).stdout.strip()
    fields, scalars = probe()
    need = ["maybe_owned_impl", "impl_storage", "impl_sizes_strides", "impl_storage_offset",
            "impl_numel", "impl_dtype", "impl_device", "sizes_strides_size",
            "sizes_strides_inline", "max_inline", "storage_data", "device_in_optional"]
    missing = [n for n in need if n not in fields]
    if missing:
        sys.exit("gen_torch_offsets: not found: " + ", ".join(missing))
    rows = ["      // torch %s (headers of libtorch-dev, %s)" % (version, args.python),
            "      TorchLayout{.version = \"%s\"," % version]
    rows += ["                  .%s = %d," % (n, fields[n]) for n in need]
    rows.append("                  .dtypes = {")
    for index, name, size in sorted(scalars):
        dtype, kind = DTYPES[name]
        rows.append("                      {%d, {\"%s\", %d, ElementKind::%s}}," %
                    (index, dtype, size, kind))
    rows.append("                  }},")
    text = """// Generated by tools/gen_torch_offsets.py from torch's own headers. Do not edit.
#include "python/torch_repr.h"

namespace hangscan::python {

const std::vector<TorchLayout>& torch_layouts() {
  static const std::vector<TorchLayout> kRows = {
%s
  };
  return kRows;
}

}  // namespace hangscan::python
""" % "\n".join(rows)
    with open(args.out, "w") as fh:
        fh.write(text)
    if shutil.which("clang-format"):   # the tree is clang-formatted (.clang-format at the root)
        subprocess.run(["clang-format", "-i", args.out], check=True)
    print("wrote %s for torch %s" % (args.out, version))


if __name__ == "__main__":
    main()
