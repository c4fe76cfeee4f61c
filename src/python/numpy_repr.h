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
#include <vector>

#include "python/objects.h"

namespace hangscan::python {

// The kind of one array element, as stored natively (little-endian x86-64).
enum class ElementKind { boolean, signed_int, unsigned_int, real, none };

// How one element is read; kind none: shape and dtype only (no exact rendering here).
struct Element {
  const char* dtype;  // as the library names it ("float32")
  std::size_t size;
  ElementKind kind;
};

// One element's text, as str() of the numpy scalar (or Python number) prints it; nullopt for
// kind none or when unreadable.
std::optional<std::string> element_text(ObjectReader& objects, std::uint64_t addr,
                                        const Element& e);

// "(2, 3)", "(3,)", "()".
std::string shape_text(const std::vector<std::int64_t>& dims);

// "[0.5, 1.0, ... 4 more]": the first `items` elements in C order of an array at `data` with
// `dims` and byte `strides`; nullopt when one is unreadable.
std::optional<std::string> strided_values(ObjectReader& objects, std::uint64_t data,
                                          const std::vector<std::int64_t>& dims,
                                          const std::vector<std::int64_t>& strides,
                                          const Element& e, std::size_t items);

// Elements of an array with `dims`, nullopt when a dimension is negative or the product
// overflows.
std::optional<std::uint64_t> element_count(const std::vector<std::int64_t>& dims);

// `numpy.ndarray(shape=(2, 3), dtype=float64, data=[0.5, 1.0, ... 4 more])` (data flat, in C
// order, at most `items` elements) or `numpy.float32(0.1)`; nullopt when `type` is no numpy
// type this reads (the caller shows `<type at 0x...>`).
std::optional<std::string> numpy_repr(ObjectReader& objects, std::uint64_t obj,
                                      const std::string& type, std::size_t items);

}  // namespace hangscan::python
