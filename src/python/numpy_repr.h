// numpy arrays and scalars in --locals, read from their C structs without calling numpy.
//
// Why: the value that explains a hang is often an array (the batch whose shape a collective
// disagrees on, the step counter held in a numpy.int64). numpy's object layouts are part of
// its C ABI, unchanged from 1.7 through 2.x where hangscan reads them: PyArrayObject_fields
// (data, nd, dimensions, strides, descr after PyObject_HEAD) and PyArray_Descr (byteorder,
// type_num); a scalar keeps its value (`obval`) right after PyObject_HEAD. Only numeric and
// bool types with native byte order are read; others keep `<numpy.X at 0x...>` or show shape
// and dtype without data.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "python/objects.h"

namespace hangscan::python {

// `numpy.ndarray(shape=(2, 3), dtype=float64, data=[0.5, 1.0, ... 4 more])` (data flat, in C
// order, at most `items` elements) or `numpy.float32(0.1)`; nullopt when `type` is no numpy
// type this reads (the caller shows `<type at 0x...>`).
std::optional<std::string> numpy_repr(ObjectReader& objects, std::uint64_t obj,
                                      const std::string& type, std::size_t items);

}  // namespace hangscan::python
