"""`hangscan core` on bad input: truncated and corrupted copies of real cores, files that are
not cores, another architecture, compressed cores (zstd, lz4) whole and cut short.

Every case ends with an exit code (1 partial, 2 nothing useful), a one-line error with a
hint for each bad file, the good files still reported -- and never a crash or a hang.
"""

import random
import shutil
import signal
import subprocess

import pytest

import core_testlib as ct
import hs_testlib as hs

TIME_LIMIT = 30.0


@pytest.fixture(scope="module")
def good_core(tmp_path_factory):
    """A C++ core (uncaught exception) copied out of the pattern directory."""
    keep = tmp_path_factory.mktemp("good")
    with ct.CoreDir() as d:
        core, _ = d.crash([hs.program("crash_throw"), "1"], signal.SIGABRT)
        dst = keep / "core.good"
        shutil.copyfile(core, dst)
    return dst


def run_bad(paths, *extra):
    run = ct.hangscan_core(paths, *extra, timeout=TIME_LIMIT)
    assert run.rc >= 0, f"hangscan died of signal {-run.rc}:\n{run.describe()}"
    assert run.rc in (0, 1, 2), run.describe()
    return run


def error_lines(run):
    lines = [l for l in run.stderr.splitlines() if l.startswith("hangscan: ")]
    hints = [l for l in run.stderr.splitlines() if l.startswith("hint: ")]
    return lines, hints


def assert_one_error(run, words):
    lines, hints = error_lines(run)
    assert len(lines) == 1 and words in lines[0], run.describe()
    assert len(hints) == 1, run.describe()


def crashed_top_functions(run):
    p = ct.only_process(run.doc)
    return [f["function"] for f in ct.crashed_thread(p)["frames"]]


def test_good_core_reads(good_core):
    run = run_bad([good_core])
    assert run.rc == 0
    assert "abort" in crashed_top_functions(run)


@pytest.mark.parametrize("length,words", [
    (0, "empty file"),
    (10, "truncated inside the ELF header"),
    (100, "truncated inside the program headers"),
])
def test_truncated_headers(good_core, tmp_path, length, words):
    bad = ct.corrupt_copy(good_core, tmp_path / "core.cut", length=length)
    run = run_bad([bad])
    assert run.rc == 2
    assert_one_error(run, words)


def test_truncated_inside_notes(good_core, tmp_path):
    """Cut inside the first thread's note: nothing to show. Cut half-way through the notes: the
    threads whose notes are whole, and the report says the rest is missing (exit 1)."""
    off, size = ct.elf_note_offset(good_core)
    bad = ct.corrupt_copy(good_core, tmp_path / "core.cut", length=off + 100)
    run = run_bad([bad])
    assert run.rc == 2
    assert_one_error(run, "truncated before the end of its notes")
    half = ct.corrupt_copy(good_core, tmp_path / "core.half", length=off + size // 2)
    run = run_bad([half])
    assert run.rc == 1, run.describe()
    p = ct.only_process(run.doc)
    assert 1 <= len(p["threads"]) <= 2
    assert any("core truncated inside its notes" in d["message"] for d in p["diagnostics"])


@pytest.mark.parametrize("fraction", [0.25, 0.5, 0.9])
def test_truncated_memory_is_partial(good_core, tmp_path, fraction):
    """Notes intact, memory cut: threads and signal are still reported, exit 1, and the
    report says the core is truncated."""
    length = int(good_core.stat().st_size * fraction)
    bad = ct.corrupt_copy(good_core, tmp_path / "core.cut", length=length)
    run = run_bad([bad])
    assert run.rc == 1, run.describe()
    p = ct.only_process(run.doc)
    assert p["signal"]["name"] == "SIGABRT"
    assert any("core truncated" in d["message"] for d in p["diagnostics"]), p["diagnostics"]
    assert len(p["threads"]) == 2


def test_not_elf(tmp_path):
    bad = tmp_path / "core.txt"
    bad.write_text("this is not a core\n" * 100)
    run = run_bad([bad])
    assert run.rc == 2
    assert_one_error(run, "not an ELF file")


def test_elf_but_not_core():
    run = run_bad([hs.program("crash_native")])
    assert run.rc == 2
    assert_one_error(run, "ELF file but not a core")
    assert "--exe" in run.stderr


def test_other_architecture(good_core, tmp_path):
    bad = ct.corrupt_copy(good_core, tmp_path / "core.arm", edits={18: (183).to_bytes(2, "little")})
    run = run_bad([bad])
    assert run.rc == 2
    assert_one_error(run, "core of another architecture (aarch64")


def test_absurd_note_sizes(good_core, tmp_path):
    """The first note claims 4 GiB of name: no threads can be read, an error, no crash."""
    off, _ = ct.elf_note_offset(good_core)
    bad = ct.corrupt_copy(good_core, tmp_path / "core.notes", edits={off: b"\xff\xff\xff\xff"})
    run = run_bad([bad])
    assert run.rc == 2
    assert_one_error(run, "no thread (NT_PRSTATUS) notes")


def test_random_note_corruption_never_crashes(good_core, tmp_path):
    off, size = ct.elf_note_offset(good_core)
    rng = random.Random(1234)
    for i in range(25):
        edits = {}
        for _ in range(rng.randint(1, 16)):
            pos = off + rng.randrange(size)
            edits[pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 8)))
        bad = ct.corrupt_copy(good_core, tmp_path / f"core.rand{i}", edits=edits)
        run = run_bad([bad])
        if run.rc == 2:
            lines, hints = error_lines(run)
            assert lines, run.describe()


def test_bad_cores_do_not_hide_good_ones(good_core, tmp_path):
    cut = ct.corrupt_copy(good_core, tmp_path / "core.cut", length=10)
    text = tmp_path / "core.txt"
    text.write_text("nope\n")
    run = run_bad([cut, good_core, text])
    assert run.rc == 1, run.describe()
    lines, hints = error_lines(run)
    assert len(lines) == 2 and len(hints) == 2, run.describe()
    assert [p["core"] for p in run.doc["processes"]] == [str(good_core)]


def compress(tool, src, dst):
    exe = shutil.which(tool)
    if exe is None:
        pytest.skip(f"{tool} not installed (Debian package {tool})")
    args = [exe, "-q", "-f", str(src), "-o", str(dst)] if tool == "zstd" else \
        [exe, "-q", "-f", str(src), str(dst)]
    subprocess.run(args, check=True, timeout=120)
    return dst


@pytest.mark.parametrize("tool", ["zstd", "lz4"])
def test_compressed_core(good_core, tmp_path, tool):
    packed = compress(tool, good_core, tmp_path / f"core.{tool}")
    plain = run_bad([good_core])
    run = run_bad([packed])
    assert run.rc == 0, run.describe()
    assert crashed_top_functions(run) == crashed_top_functions(plain)
    assert ct.only_process(run.doc)["annotations"] == ct.only_process(plain.doc)["annotations"]


@pytest.mark.parametrize("tool", ["zstd", "lz4"])
def test_compressed_core_cut_short(good_core, tmp_path, tool):
    packed = compress(tool, good_core, tmp_path / f"core.{tool}")
    cut = ct.corrupt_copy(packed, tmp_path / f"core.cut.{tool}", length=packed.stat().st_size // 2)
    run = run_bad([cut])
    assert run.rc == 2
    assert_one_error(run, f"corrupt {tool} stream")


def test_gzip_core_says_how_to_unpack(good_core, tmp_path):
    gz = tmp_path / "core.gz"
    with open(gz, "wb") as out:
        subprocess.run(["gzip", "-c", str(good_core)], stdout=out, check=True, timeout=120)
    run = run_bad([gz])
    assert run.rc == 2
    assert_one_error(run, "gzip-compressed core")
    assert "gzip -dk" in run.stderr
