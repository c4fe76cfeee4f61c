"""A Python program that crashes in native code called through ctypes: a NULL dereference.

Usage: python py_ctypes_crash.py READY

ctypes.memmove(buffer, 0, 8) calls libc's memmove through ctypes' ffi_call with a NULL
source: SIGSEGV at address 0x0 inside memmove, called from the Python frames below.
"READY" is an inherited fd number or a FIFO path (tests/programs/hs_ready.h's protocol);
"ready" is written just before the crash. Runs under CPython 3.6 and later.
"""
import ctypes
import os
import sys


def say_ready(where):
    fd = int(where) if where.isdigit() else os.open(where, os.O_WRONLY)
    os.write(fd, b"ready\n")
    os.close(fd)


def read_header(address):
    header = ctypes.create_string_buffer(8)
    ctypes.memmove(header, address, 8)  # HS-LINE: memmove
    return header.raw


def load_record(ready):
    say_ready(ready)
    return read_header(0)  # HS-LINE: load_record


if __name__ == "__main__":
    load_record(sys.argv[1])  # HS-LINE: main
