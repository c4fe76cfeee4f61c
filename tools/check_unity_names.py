#!/usr/bin/env python3
"""The unity build's one silent hazard, checked (docs/design.md, "Build layout").

A module's .cpp files are compiled in batches (HANGSCAN_UNITY): a function in one file's
anonymous namespace is then visible in the files after it. A second function of the same name in
another file of the module does not fail the build when the signatures differ: overload
resolution may pick the other file's. So a file-local function's name must be unique within its
module. Prints each clash and exits 1; exits 0 when there is none.

Usage: check_unity_names.py SOURCE_DIR
"""
import collections
import os
import re
import sys

FUNCTION = re.compile(r"^(?:static |inline |constexpr |template <[^>]*> )*"
                      r"[\w:<>,\*&\s]+?[\s\*&](\w+)\s*\((?!.*;\s*$)")


def functions(path):
    """(file-local names, all names) of the functions defined at file scope in `path`."""
    local, every = set(), set()
    anonymous = False
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if re.match(r"^namespace\s*\{", line):
                anonymous = True
            elif re.match(r"^\}\s*//\s*namespace\s*$", line):
                anonymous = False
            elif not line.startswith((" ", "\t", "#", "/", "}", "{")):
                m = FUNCTION.match(line)
                if m and m.group(1) not in ("if", "for", "while", "switch", "return"):
                    every.add(m.group(1))
                    if anonymous or line.startswith("static "):
                        local.add(m.group(1))
    return local, every


def main():
    root = sys.argv[1]
    clashes = []
    for top in ("src", "tools"):
        for d, _, files in sorted(os.walk(os.path.join(root, top))):
            names = {f: functions(os.path.join(d, f)) for f in sorted(files) if f.endswith(".cpp")}
            for f, (local, _) in names.items():
                for name in sorted(local):
                    others = [g for g, (_, every) in names.items() if g != f and name in every]
                    if others:
                        clashes.append(f"{os.path.relpath(d, root)}/{f}: {name}() is also defined in "
                                       f"{', '.join(others)}")
    for c in clashes:
        print(c)
    if clashes:
        print("hint: give the file-local function a name of its own within the module "
              "(unity batches, docs/design.md \"Build layout\")")
    return 1 if clashes else 0


if __name__ == "__main__":
    sys.exit(main())
