#include "python/thread_names.h"

#include <fmt/format.h>

namespace hangscan::python {
namespace {

constexpr std::size_t kMaxActive = 4096;

// The unsigned value of an int that fits in 64 bits.
std::optional<std::uint64_t> u64_of(ObjectReader& objects, std::uint64_t obj) {
  auto v = objects.read_long(obj);
  if (!v || v->negative || v->ndigits > 3 || v->digits.size() != v->ndigits) return std::nullopt;
  unsigned __int128 x = 0;
  for (std::size_t i = v->ndigits; i-- > 0;) x = (x << 30) | v->digits[i];
  if (x > ~std::uint64_t{0}) return std::nullopt;
  return static_cast<std::uint64_t>(x);
}

}  // namespace

Result<std::map<std::uint64_t, std::string>> read_thread_names(ObjectReader& objects,
                                                               const PyLayout& layout,
                                                               std::uint64_t interp) {
  std::map<std::uint64_t, std::string> names;
  const PyOffsets& o = layout.off;
  auto fail = [](std::string reason) { return Error(Errc::not_found, std::move(reason)); };
  if (o.interp_modules < 0 || o.module_dict < 0) return fail("no sys.modules offset");
  auto modules = objects.read_word(interp + o.interp_modules);
  if (!modules || *modules == 0) return fail("sys.modules unreadable");
  auto module = objects.dict_get(*modules, "threading");
  if (!module) return fail("threading not imported");
  if (objects.type_name(*module).value_or("") != "module") return fail("threading is not a module");
  auto md = objects.read_word(*module + o.module_dict);
  auto active = md ? objects.dict_get(*md, "_active") : std::nullopt;
  if (!active || objects.type_name(*active).value_or("") != "dict")
    return fail("threading._active unreadable");
  auto items = objects.dict_items(*active, kMaxActive);
  if (!items) return fail("threading._active unreadable");
  for (const DictItem& it : *items) {
    auto ident = u64_of(objects, it.key);
    if (!ident) continue;
    auto name_obj = objects.attribute(it.value, "_name");
    if (!name_obj) continue;
    bool cut = false;
    auto name = objects.read_str(*name_obj, kMaxThreadName, &cut);
    if (name) names[*ident] = *name + (cut ? "..." : "");
  }
  if (names.empty()) return fail(fmt::format("no names among {} threads", items->size()));
  return names;
}

}  // namespace hangscan::python
