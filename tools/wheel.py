#!/usr/bin/env python3
"""`make wheel`: make dist's tarball as a Python wheel, for `pip install` into a training env.

usage: tools/wheel.py DIST_TARBALL OUT_DIR

Writes OUT_DIR/hangscan-VERSION-py3-none-manylinux_2_17_x86_64.whl holding the tarball's tree
under hangscan/dist/ (launcher, binary, its libraries with glibc's loader, man page, docs) and a
console script `hangscan` that execs the launcher with the same arguments. Why manylinux_2_17:
the binary starts through its own glibc, so it needs no glibc of the node; 2_17 is the lowest tag
current pips know, and says "any x86-64 glibc Linux". Why a wheel at all: an ML engineer's
nodes share the training environment, so `pip install hangscan-*.whl` puts hangscan on every
node's PATH (no package index is needed: the file is installed as it is).
"""
import base64
import hashlib
import io
import stat
import sys
import tarfile
import zipfile
from pathlib import Path

TAG = "py3-none-manylinux_2_17_x86_64"

INIT = '''"""hangscan, installed from a wheel: the self-contained binary of `make dist` in dist/."""
import os
import sys


def main():
    launcher = os.path.join(os.path.dirname(os.path.abspath(__file__)), "dist", "bin", "hangscan")
    os.execv(launcher, [launcher] + sys.argv[1:])
'''


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def add(zf: zipfile.ZipFile, records: list, name: str, data: bytes, mode: int = 0o644) -> None:
    info = zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0))
    info.external_attr = (stat.S_IFREG | mode) << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    zf.writestr(info, data)
    records.append(record_line(name, data))


def main() -> int:
    if len(sys.argv) != 3:
        print("usage: tools/wheel.py DIST_TARBALL OUT_DIR", file=sys.stderr)
        return 64
    tarball, out = Path(sys.argv[1]), Path(sys.argv[2])
    top = tarball.name.split("-x86_64-linux.tar.gz")[0]  # hangscan-VERSION
    version = top.split("-", 1)[1]
    info_dir = f"hangscan-{version}.dist-info"
    out.mkdir(parents=True, exist_ok=True)
    wheel = out / f"hangscan-{version}-{TAG}.whl"
    tmp = wheel.with_suffix(".tmp")
    records: list = []
    with zipfile.ZipFile(tmp, "w") as zf, tarfile.open(tarball) as tf:
        add(zf, records, "hangscan/__init__.py", INIT.encode())
        for member in tf.getmembers():
            if not member.isfile() or not member.name.startswith(top + "/"):
                continue
            name = "hangscan/dist/" + member.name[len(top) + 1:]
            data = tf.extractfile(member).read()
            add(zf, records, name, data, 0o755 if member.mode & 0o111 else 0o644)
        add(zf, records, f"{info_dir}/METADATA", (
            "Metadata-Version: 2.1\nName: hangscan\nVersion: " + version + "\n"
            "Summary: where every thread and rank of a hung or crashed job is, and which are odd\n"
            "Requires-Python: >=3\n").encode())
        add(zf, records, f"{info_dir}/WHEEL", (
            "Wheel-Version: 1.0\nGenerator: hangscan tools/wheel.py\nRoot-Is-Purelib: false\n"
            f"Tag: {TAG}\n").encode())
        add(zf, records, f"{info_dir}/entry_points.txt",
            b"[console_scripts]\nhangscan = hangscan:main\n")
        records.append(f"{info_dir}/RECORD,,")
        zf.writestr(zipfile.ZipInfo(f"{info_dir}/RECORD", date_time=(2020, 1, 1, 0, 0, 0)),
                    "\n".join(records) + "\n")
    tmp.replace(wheel)
    print(wheel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
