#include "unwind/scope_chain.h"

#include <dwarf.h>

namespace hangscan {
namespace {

constexpr int kMaxDepth = 256;  // real trees are a few dozen deep; more is damage or a cycle

bool has_code_range(Dwarf_Die* die) {
  return dwarf_hasattr(die, DW_AT_low_pc) || dwarf_hasattr(die, DW_AT_ranges) ||
         dwarf_hasattr(die, DW_AT_entry_pc);
}

// Tags that may hold definitions with code without having code ranges of their own.
bool is_container(int tag) {
  switch (tag) {
    case DW_TAG_namespace:
    case DW_TAG_class_type:
    case DW_TAG_structure_type:
    case DW_TAG_union_type:
    case DW_TAG_module:
      return true;
    default:
      return false;
  }
}

// Appends the chain below `parent` to `chain`; true when a DIE holding `addr` was found.
bool descend(Dwarf_Die* parent, std::uint64_t addr, std::vector<Dwarf_Die>& chain, int depth) {
  if (depth > kMaxDepth) return false;
  Dwarf_Die child;
  if (dwarf_child(parent, &child) != 0) return false;
  do {
    int tag = dwarf_tag(&child);
    bool code =
        tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine || tag == DW_TAG_lexical_block;
    if (code && has_code_range(&child)) {
      if (dwarf_haspc(&child, addr) > 0) {
        chain.push_back(child);
        descend(&child, addr, chain, depth + 1);
        return true;
      }
    } else if (tag == DW_TAG_lexical_block || is_container(tag)) {
      // A block without ranges (its code moved into its children), or a namespace / type
      // holding definitions: look inside without adding a frame.
      if (descend(&child, addr, chain, depth + 1)) return true;
    } else if (tag == DW_TAG_imported_unit) {
      Dwarf_Attribute attr;
      Dwarf_Die unit;
      if (dwarf_formref_die(dwarf_attr(&child, DW_AT_import, &attr), &unit) != nullptr &&
          descend(&unit, addr, chain, depth + 1)) {
        return true;
      }
    }
  } while (dwarf_siblingof(&child, &child) == 0);
  return false;
}

}  // namespace

std::vector<Dwarf_Die> scope_chain(Dwarf_Die* cudie, std::uint64_t addr) {
  std::vector<Dwarf_Die> chain;
  if (cudie != nullptr) descend(cudie, addr, chain, 0);
  return chain;
}

}  // namespace hangscan
