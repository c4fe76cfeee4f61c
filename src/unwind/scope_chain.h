// scope_chain: the DWARF DIEs whose code holds an address, from the out-of-line function in.
//
// Why our own walk: an inline chain is the path through the concrete DIE tree down to the
// address (subprogram -> inlined_subroutine -> ... -> the innermost inlined_subroutine, with
// lexical blocks between), and that is all a stack needs. libdw's dwarf_getscopes() answers
// something else past an inlined instance (the scopes of the callee's abstract definition),
// and in LTO units whose abstract origins lie in other CUs (Debian's python3.11) it finds no
// scope at all, so eu-stack -i prints such frames without their inline callers; gdb and
// binutils' addr2line -i print the whole chain, and so does this.
#pragma once

#include <elfutils/libdw.h>

#include <cstdint>
#include <vector>

namespace hangscan {

// The DW_TAG_subprogram / inlined_subroutine / lexical_block DIEs of `cudie` that contain
// `addr` (an address of the CU's own DWARF), outermost first; empty when none does. Looks
// through namespaces, types and imported units (dwz) for nested definitions; bounded depth.
std::vector<Dwarf_Die> scope_chain(Dwarf_Die* cudie, std::uint64_t addr);

}  // namespace hangscan
