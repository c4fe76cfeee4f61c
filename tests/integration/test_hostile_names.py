"""Names from a target are data: escaped in text, exact in JSON (issue 36, "Names are escaped").

A real Python target (tests/programs/py_hostile_names.py) blocks in a function whose name, file
name, thread names (kernel and threading) and command line hold ESC, BEL, CR and newlines, the
bytes that retitle or clear a terminal and forge a "SUSPECT rank 9 is FAKE" line. The text
report shows them visibly (\\x1b, \\x07, \\r, \\n: util/escape.h) and has no control byte but
its line ends; JSON carries the exact strings; the folded and DOT outputs keep one line per
stack / statement; an error naming the target's zombie child is escaped too.
"""

import os
import re

import pytest

import hs_testlib as hs

PYTHON = "/usr/bin/python3.11"
PROGRAM = hs.program_source("py_hostile_names.py")
ARG = "arg\x1b]0;T\x07\nSUSPECT rank 9 is FAKE"

FUNCTION = "\x1b]0;HACKED\x07\x1b[2J\r\nSUSPECT rank 9 is FAKE (fn)"
FILE = "\x1b]0;X\x07evil\nSUSPECT rank 9 is FAKE"
THREAD = "worker\x1b[31m\nSUSPECT rank 8 is FAKE"
COMM = "\x1b[2J\x07\nSUSPECT 9"

pytestmark = pytest.mark.skipif(not os.path.exists(PYTHON), reason="Debian's python3.11 is missing")


def visible(s):
    """The escaped form of the ASCII names above (util/escape.h's rule for these bytes)."""
    return (s.replace("\x1b", "\\x1b").replace("\x07", "\\x07").replace("\r", "\\r")
            .replace("\n", "\\n"))


def assert_no_control_bytes(text):
    bad = sorted({hex(ord(c)) for c in text if (ord(c) < 0x20 and c != "\n") or ord(c) == 0x7f})
    assert not bad, f"raw control bytes {bad} in:\n{text!r}"


@pytest.fixture(scope="module")
def target(module_targets):
    return module_targets.start([PYTHON, str(PROGRAM), hs.READY, ARG], timeout=60)


def worker_tid(target):
    return next(t for t in hs.tids(target.pid) if t != target.pid)


def test_text_shows_names_escaped(target):
    run = hs.dump(target.pid, as_json=False)
    assert run.rc == 0, run.describe()
    assert_no_control_bytes(run.stdout)
    lines = run.stdout.splitlines()
    assert not [l for l in lines if l.startswith("SUSPECT")], run.stdout
    assert lines[0].startswith(f"Process {target.pid}: {PYTHON} {PROGRAM} "), lines[0]
    assert f" {visible(ARG)}" in lines[0], lines[0]
    innermost = lines.index(next(l for l in lines if l.startswith(f"Thread {target.pid} "))) + 1
    assert lines[innermost] == f"    {visible(FUNCTION)} ({visible(FILE)}:2)"
    worker = next(l for l in lines if l.startswith(f"Thread {worker_tid(target)} "))
    assert worker.startswith(
        f'Thread {worker_tid(target)} "{visible(COMM)}" (Python "{visible(THREAD)}", '), worker


def test_json_keeps_names_exact(target):
    run = hs.dump(target.pid)
    assert run.rc == 0, run.describe()
    proc = hs.process_of(run.doc, target.pid)
    assert proc["cmdline"][-1] == ARG
    main = hs.thread_by_tid(proc, target.pid)
    first = main["frames"][0]
    assert (first["function"], first["file"], first["line"]) == (FUNCTION, FILE, 2)
    worker = hs.thread_by_tid(proc, worker_tid(target))
    assert (worker["name"], worker["python_name"]) == (COMM, THREAD)


def test_folded_and_dot_keep_their_lines(target):
    folded = hs.dump(target.pid, "--format", "folded", as_json=False)
    assert folded.rc == 0, folded.describe()
    assert_no_control_bytes(folded.stdout)
    lines = folded.stdout.splitlines()
    assert len(lines) == 1 and re.fullmatch(r".* 1", lines[0]), folded.stdout
    assert lines[0].endswith(visible(FUNCTION).replace(";", ":") + " 1"), lines[0]
    dot = hs.dump(target.pid, "--format", "dot", as_json=False)
    assert dot.rc == 0, dot.describe()
    assert_no_control_bytes(dot.stdout)
    assert visible(FUNCTION).replace("\\", "\\\\") in dot.stdout


def test_error_about_a_zombie_escapes_its_name(target):
    children = hs.read_text(f"/proc/{target.pid}/task/{target.pid}/children").split()
    assert len(children) == 1, children
    zombie = int(children[0])
    assert hs.process_state(zombie) == "Z"
    run = hs.dump(zombie, as_json=False)
    assert run.rc == 2, run.describe()
    assert_no_control_bytes(run.stderr)
    assert f"pid {zombie} ({visible(COMM)}) is a zombie" in run.stderr, run.stderr
