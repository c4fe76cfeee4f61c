#!/usr/bin/env python3
"""Generates src/python/offsets_table.cpp: one PyLayout row per CPython minor version 3.6-3.12.

Why: hangscan reads CPython's interpreter structures from another process, so it needs the byte
offset of every field it follows. Those offsets are computed here by the C compiler itself
(offsetof / sizeof) against the headers each pyenv build ships (internal headers with
Py_BUILD_CORE where the version has them; 3.6 has public headers only), never typed by hand.
3.13+ need no table: the target carries its own offsets in _Py_DebugOffsets.

Usage: tools/gen_python_offsets.py [--pyenv-root DIR] [--out src/python/offsets_table.cpp]
Re-run after installing a new patch release and commit the result if it changed.
"""
import argparse
import glob
import os
import subprocess
import sys
import tempfile

# Headers to include per minor version (after Python.h), and whether Py_BUILD_CORE is needed.
INCLUDES = {
    6: ["frameobject.h", "code.h"],
    7: ["frameobject.h", "code.h", "internal/pystate.h"],
    8: ["frameobject.h", "code.h", "internal/pycore_pystate.h"],
    9: ["frameobject.h", "code.h", "internal/pycore_interp.h", "internal/pycore_runtime.h"],
    10: ["frameobject.h", "code.h", "internal/pycore_interp.h", "internal/pycore_runtime.h"],
    11: ["frameobject.h", "internal/pycore_frame.h", "internal/pycore_code.h",
         "internal/pycore_interp.h", "internal/pycore_runtime.h"],
    12: ["frameobject.h", "internal/pycore_frame.h", "internal/pycore_code.h",
         "internal/pycore_interp.h", "internal/pycore_runtime.h"],
    # 3.13: only the fields _Py_DebugOffsets lacks (EXTRA below), for 3.13 and later.
    13: ["internal/pycore_dict.h", "internal/pycore_interp.h", "internal/pycore_runtime.h"],
}
for _m in range(11, 14):
    INCLUDES[_m].append("internal/pycore_dict.h")


# The header a row is attributed to in its comment (the one defining the thread/frame structs).
SOURCE_HEADER = {
    6: "pystate.h", 7: "internal/pystate.h", 8: "internal/pycore_pystate.h",
    9: "internal/pycore_interp.h", 10: "internal/pycore_interp.h",
    11: "internal/pycore_frame.h", 12: "internal/pycore_frame.h",
}

OLD_FRAME = {  # 3.6-3.10: PyFrameObject chain from tstate->frame
    "tstate_frame": "offsetof(PyThreadState, frame)",
    "cframe_current_frame": "-1",
    "cframe_previous": "-1",
    "frame_previous": "offsetof(PyFrameObject, f_back)",
    "frame_code": "offsetof(PyFrameObject, f_code)",
    "frame_instr": "offsetof(PyFrameObject, f_lasti)",
    "frame_localsplus": "offsetof(PyFrameObject, f_localsplus)",
    "frame_owner": "-1",
    "frame_is_entry": "-1",
    "code_adaptive": "-1",
    "code_qualname": "-1",
    "code_varnames": "offsetof(PyCodeObject, co_varnames)",
    "code_localspluskinds": "-1",
    "code_nlocals": "offsetof(PyCodeObject, co_nlocals)",
}
NEW_FRAME = {  # 3.11-3.12: _PyInterpreterFrame chain from tstate->cframe->current_frame
    "tstate_frame": "offsetof(PyThreadState, cframe)",
    "cframe_current_frame": "offsetof(_PyCFrame, current_frame)",
    "cframe_previous": "offsetof(_PyCFrame, previous)",
    "frame_previous": "offsetof(_PyInterpreterFrame, previous)",
    "frame_code": "offsetof(_PyInterpreterFrame, f_code)",
    "frame_instr": "offsetof(_PyInterpreterFrame, prev_instr)",
    "frame_localsplus": "offsetof(_PyInterpreterFrame, localsplus)",
    "frame_owner": "offsetof(_PyInterpreterFrame, owner)",
    "code_adaptive": "offsetof(PyCodeObject, co_code_adaptive)",
    "code_qualname": "offsetof(PyCodeObject, co_qualname)",
    "code_varnames": "offsetof(PyCodeObject, co_localsplusnames)",
    "code_localspluskinds": "offsetof(PyCodeObject, co_localspluskinds)",
    "code_nlocals": "offsetof(PyCodeObject, co_nlocalsplus)",
}

COMMON = {
    "tstate_next": "offsetof(PyThreadState, next)",
    "tstate_interp": "offsetof(PyThreadState, interp)",
    "tstate_thread_id": "offsetof(PyThreadState, thread_id)",
    "interp_next": "offsetof(PyInterpreterState, next)",
    "code_filename": "offsetof(PyCodeObject, co_filename)",
    "code_name": "offsetof(PyCodeObject, co_name)",
    "code_firstlineno": "offsetof(PyCodeObject, co_firstlineno)",
    "unicode_length": "offsetof(PyASCIIObject, length)",
    "unicode_state": "offsetof(PyASCIIObject, state)",
    "unicode_ascii_size": "sizeof(PyASCIIObject)",
    "unicode_compact_size": "sizeof(PyCompactUnicodeObject)",
    "bytes_size": "offsetof(PyVarObject, ob_size)",
    "bytes_data": "offsetof(PyBytesObject, ob_sval)",
    "tuple_size": "offsetof(PyVarObject, ob_size)",
    "tuple_items": "offsetof(PyTupleObject, ob_item)",
    "list_size": "offsetof(PyVarObject, ob_size)",
    "list_items": "offsetof(PyListObject, ob_item)",
    "float_value": "offsetof(PyFloatObject, ob_fval)",
    "type_name": "offsetof(PyTypeObject, tp_name)",
    "object_type": "offsetof(PyObject, ob_type)",
}


# Fields for thread names, container values and interpreter state (3.6-3.13). For 3.13+ these
# are the ones _Py_DebugOffsets lacks; 3.13's values are used for later versions too.
def extra_fields(minor):
    f = {
        "type_basicsize": "offsetof(PyTypeObject, tp_basicsize)",
        "type_dictoffset": "offsetof(PyTypeObject, tp_dictoffset)",
        "type_flags": "offsetof(PyTypeObject, tp_flags)",
        "heaptype_cached_keys": "offsetof(PyHeapTypeObject, ht_cached_keys)",
        "dict_keys": "offsetof(PyDictObject, ma_keys)",
        "dict_values": "offsetof(PyDictObject, ma_values)",
        "set_used": "offsetof(PySetObject, used)",
        "set_mask": "offsetof(PySetObject, mask)",
        "set_table": "offsetof(PySetObject, table)",
        # PyModuleObject (Objects/moduleobject.c before 3.12) starts md_dict right after
        # PyObject_HEAD in every version.
        "module_dict": "sizeof(PyObject)",
    }
    if minor <= 10:
        # struct _dictkeysobject lives in Objects/dict-common.h (not installed) in 3.6-3.10:
        # dk_refcnt, dk_size, dk_lookup, dk_usable, dk_nentries, dk_indices (all 8 bytes).
        f.update({"keys_size": "8", "keys_kind": "-1", "keys_nentries": "32",
                  "keys_indices": "40", "values_items": "0"})
    else:
        f.update({"keys_size": "offsetof(PyDictKeysObject, dk_log2_size)",
                  "keys_kind": "offsetof(PyDictKeysObject, dk_kind)",
                  "keys_nentries": "offsetof(PyDictKeysObject, dk_nentries)",
                  "keys_indices": "offsetof(PyDictKeysObject, dk_indices)",
                  "values_items": "offsetof(PyDictValues, values)"})
    f["interp_modules"] = ("offsetof(PyInterpreterState, modules)" if minor <= 11
                           else "offsetof(PyInterpreterState, imports.modules)")
    f["runtime_finalizing"] = ("-1" if minor == 6 else
                               "offsetof(_PyRuntimeState, finalizing)" if minor <= 8 else
                               "offsetof(_PyRuntimeState, _finalizing)")
    f["runtime_gc_collecting"] = ("offsetof(_PyRuntimeState, gc.collecting)"
                                  if minor in (7, 8) else "-1")
    f["interp_gc_collecting"] = ("offsetof(PyInterpreterState, gc.collecting)"
                                 if minor >= 9 else "-1")
    return f


EXTRA = [
    "interp_modules", "runtime_finalizing", "runtime_gc_collecting", "interp_gc_collecting",
    "dict_keys", "dict_values", "keys_size", "keys_kind", "keys_nentries", "keys_indices",
    "values_items", "type_basicsize", "type_dictoffset", "type_flags", "heaptype_cached_keys",
    "set_used", "set_mask", "set_table", "module_dict",
]


def fields_for(minor):
    if minor >= 13:
        return extra_fields(minor)
    f = dict(COMMON)
    f.update(extra_fields(minor))
    f.update(OLD_FRAME if minor <= 10 else NEW_FRAME)
    if minor == 11:
        f["frame_is_entry"] = "offsetof(_PyInterpreterFrame, is_entry)"
    elif minor == 12:
        f["frame_is_entry"] = "-1"
        f["frame_code"] = "offsetof(_PyInterpreterFrame, f_code)"
    f["code_linetable"] = ("offsetof(PyCodeObject, co_lnotab)" if minor <= 9
                           else "offsetof(PyCodeObject, co_linetable)")
    f["interp_threads_head"] = ("offsetof(PyInterpreterState, tstate_head)" if minor <= 10
                                else "offsetof(PyInterpreterState, threads.head)")
    f["tstate_native_thread_id"] = ("-1" if minor <= 10
                                    else "offsetof(PyThreadState, native_thread_id)")
    f["runtime_interpreters_head"] = ("-1" if minor == 6
                                      else "offsetof(_PyRuntimeState, interpreters.head)")
    # Where the GIL state lives: inside _PyRuntime (3.7-3.11) or behind interp->ceval.gil (3.12).
    if minor == 6:
        f["runtime_gil"] = "-1"
        f["interp_gil_ptr"] = "-1"
        f["gil_locked"] = "-1"
        f["gil_last_holder"] = "-1"
    else:
        f["runtime_gil"] = "-1" if minor >= 12 else "offsetof(_PyRuntimeState, ceval.gil)"
        f["interp_gil_ptr"] = "offsetof(PyInterpreterState, ceval.gil)" if minor >= 12 else "-1"
        f["gil_locked"] = "offsetof(struct _gil_runtime_state, locked)"
        f["gil_last_holder"] = "offsetof(struct _gil_runtime_state, last_holder)"
    if minor >= 12:
        f["long_size"] = "offsetof(PyLongObject, long_value.lv_tag)"
        f["long_digits"] = "offsetof(PyLongObject, long_value.ob_digit)"
    else:
        f["long_size"] = "offsetof(PyVarObject, ob_size)"
        f["long_digits"] = "offsetof(PyLongObject, ob_digit)"
    return f


# Order of the PyLayout offset members (must match src/python/layout.h).
ORDER = [
    "runtime_interpreters_head", "runtime_gil", "interp_next", "interp_threads_head",
    "interp_gil_ptr", "gil_locked", "gil_last_holder", "tstate_next", "tstate_interp",
    "tstate_frame", "tstate_thread_id", "tstate_native_thread_id", "cframe_current_frame",
    "cframe_previous", "frame_previous", "frame_code", "frame_instr", "frame_localsplus", "frame_owner",
    "frame_is_entry", "code_filename", "code_name", "code_qualname", "code_firstlineno",
    "code_linetable", "code_adaptive", "code_varnames", "code_localspluskinds", "code_nlocals",
    "object_type", "type_name", "unicode_length", "unicode_state", "unicode_ascii_size",
    "unicode_compact_size", "bytes_size", "bytes_data", "tuple_size", "tuple_items", "list_size",
    "list_items", "float_value", "long_size", "long_digits",
] + EXTRA


def compute(prefix, minor):
    incdir = os.path.join(prefix, "include")
    hdr_dir = glob.glob(os.path.join(incdir, "python3.%d*" % minor))
    if not hdr_dir:
        raise RuntimeError("no include dir under " + incdir)
    hdr_dir = hdr_dir[0]
    fields = fields_for(minor)
    names = EXTRA if minor >= 13 else ORDER
    lines = ["#define Py_BUILD_CORE 1", "#include <Python.h>"]
    lines += ['#include "%s"' % h for h in INCLUDES[minor]]
    lines += ["#include <stdio.h>", "#include <stddef.h>", "int main(void) {"]
    for name in names:
        lines.append('  printf("%s %%ld\\n", (long)(%s));' % (name, fields[name]))
    lines += ["  return 0;", "}"]
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "o.c")
        exe = os.path.join(tmp, "o")
        with open(src, "w") as fh:
            fh.write("\n".join(lines) + "\n")
        cmd = ["cc", "-w", "-I", hdr_dir, "-I", os.path.join(hdr_dir, "internal"), src,
               "-o", exe]
        res = subprocess.run(cmd, capture_output=True, text=True)
        if res.returncode != 0:
            raise RuntimeError("compiling offsets for 3.%d failed:\n%s" % (minor, res.stderr))
        out = subprocess.run([exe], check=True, capture_output=True, text=True).stdout
    values = dict(line.split() for line in out.splitlines())
    return hdr_dir, {k: int(v) for k, v in values.items()}


def patch_version(prefix):
    return os.path.basename(prefix.rstrip("/"))


def emit(rows, extra):
    out = [
        "// GENERATED by tools/gen_python_offsets.py -- do not edit by hand; re-run the tool.",
        "//",
        "// Why: CPython 3.6-3.12 carry no description of their own layout, so every offset",
        "// hangscan follows is computed by the compiler (offsetof/sizeof) from the headers of",
        "// the build named in each row's comment. 3.13+ describe themselves (_Py_DebugOffsets)",
        "// except for a few fields, which come from the 3.13 headers (debug_offsets_extra).",
        '#include "python/layout.h"',
        "",
        "namespace hangscan::python {",
        "",
        "const std::vector<PyLayout>& builtin_layouts() {",
        "  static const std::vector<PyLayout> kRows = {",
    ]
    for minor, version, hdr, vals in rows:
        out.append("      // %s from %s/%s" % (version, hdr, SOURCE_HEADER[minor]))
        model = ("FrameModel::frame_object" if minor <= 10 else
                 "FrameModel::interp_frame_311" if minor == 11 else "FrameModel::interp_frame_312")
        table = ("LineTable::lnotab" if minor <= 9 else
                 "LineTable::linetable310" if minor == 10 else "LineTable::location311")
        items = [".%s = %d" % (k, vals[k]) for k in ORDER]
        body = ",\n                ".join(", ".join(items[i:i + 3]) for i in range(0, len(items), 3))
        out.append("      PyLayout{3, %d, \"%s %s\",\n               %s, %s, %d, false, %s, %d,"
                   % (minor, version, hdr, model, table, 2 if minor >= 10 else 1,
                      "true" if minor >= 12 else "false", 3 if minor >= 12 else -1))
        out.append("               {%s}}," % body)
    out += ["  };", "  return kRows;", "}", ""]
    out += ["const PyOffsets* debug_offsets_extra() {"]
    if extra is None:
        out += ["  return nullptr;", "}"]
    else:
        version, hdr, vals = extra
        items = [".%s = %d" % (k, vals[k]) for k in EXTRA]
        body = ",\n      ".join(", ".join(items[i:i + 3]) for i in range(0, len(items), 3))
        out += ["  // %s from %s" % (version, hdr),
                "  static const PyOffsets kExtra = {",
                "      %s};" % body, "  return &kExtra;", "}"]
    out += ["", "}  // namespace hangscan::python", ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    root = os.environ.get("PYENV_ROOT") or os.path.expanduser("~/.pyenv")
    ap.add_argument("--pyenv-root", default=root)
    here = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    ap.add_argument("--out", default=os.path.join(here, "src/python/offsets_table.cpp"))
    args = ap.parse_args()
    rows = []
    extra = None
    for minor in range(6, 14):
        prefixes = sorted(glob.glob(os.path.join(args.pyenv_root, "versions", "3.%d.*" % minor)))
        if not prefixes:
            print("3.%d: no pyenv build, row skipped" % minor, file=sys.stderr)
            continue
        prefix = prefixes[-1]
        hdr, vals = compute(prefix, minor)
        if minor >= 13:
            extra = (patch_version(prefix), hdr, vals)
        else:
            rows.append((minor, patch_version(prefix), hdr, vals))
        print("3.%d: %s" % (minor, hdr), file=sys.stderr)
    with open(args.out, "w") as fh:
        fh.write(emit(rows, extra))
    return 0


if __name__ == "__main__":
    sys.exit(main())
