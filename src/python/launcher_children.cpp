#include "python/launcher_children.h"

#include <optional>
#include <string>

#include "python/objects.h"

namespace hangscan::python {

namespace {

constexpr std::size_t kMaxWorkers = 4096;  // local ranks of one launcher

// A small non-negative int object (a pid, a local rank): one 30-bit digit at most.
std::optional<int> small_int(ObjectReader& objects, std::uint64_t obj) {
  auto v = objects.read_long(obj);
  if (!v || v->negative || v->ndigits > 1 || v->digits.size() != v->ndigits) return std::nullopt;
  return v->ndigits == 0 ? 0 : static_cast<int>(v->digits.front());
}

// The SubprocessContext a frame's first local (`self`) is or holds, 0 when none.
std::uint64_t context_of(ObjectReader& objects, std::uint64_t self) {
  auto type = objects.type_name(self);
  if (!type) return 0;
  if (*type != "SubprocessContext") {
    if (*type != "LocalElasticAgent") return 0;
    auto held = objects.attribute(self, "_pcontext");
    if (!held || objects.type_name(*held) != "SubprocessContext") return 0;
    self = *held;
  }
  return self;
}

std::map<int, int> children_of(ObjectReader& objects, std::uint64_t context) {
  std::map<int, int> out;
  auto handlers = objects.attribute(context, "subprocess_handlers");
  if (!handlers || objects.type_name(*handlers) != "dict") return out;
  auto items = objects.dict_items(*handlers, kMaxWorkers);
  if (!items) return out;
  for (const DictItem& item : *items) {
    auto local_rank = small_int(objects, item.key);
    auto proc = objects.attribute(item.value, "proc");
    if (!local_rank || !proc || objects.type_name(*proc) != "Popen") continue;
    auto pid_obj = objects.attribute(*proc, "pid");
    auto pid = pid_obj ? small_int(objects, *pid_obj) : std::nullopt;
    if (pid && *pid > 0) out[*pid] = *local_rank;
  }
  return out;
}

}  // namespace

std::map<int, int> launcher_children(const PythonReader& reader, const RawPythonState& raw,
                                     MemoryReader& mem) {
  const PyOffsets& o = reader.layout().off;
  if (o.frame_localsplus < 0) return {};
  ObjectReader objects(mem, reader.layout());
  for (const RawPythonThread& t : raw.threads) {
    for (const RawPythonFrame& f : t.frames) {
      std::uint64_t first = 0;
      if (!mem.read_obj(f.frame_addr + o.frame_localsplus, first)) continue;
      first = objects.untag(first);
      if (first == 0) continue;
      std::uint64_t context = context_of(objects, first);
      if (context == 0) continue;
      if (auto children = children_of(objects, context); !children.empty()) return children;
    }
  }
  return {};
}

}  // namespace hangscan::python
