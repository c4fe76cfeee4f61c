"""`make install`'s files work on their own: hangscan --version, man hangscan, completion, dump.

Why here and how: `cmake --install` of this build into a private DESTDIR (what `make install`
and the Debian package install; seconds), then only the installed files are used. The .deb
itself, installed with apt into a new Debian root whose packages come from the registry alone
(which proves its dependencies are complete), is checked by `tools/fresh-machine.sh --package`
in CI (.ci/run): that needs a registry and a minute or two, too much for every `make test`.
Also: `doctor --agent-path`, the check that an agent binary is this version.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

import hs_testlib

PREFIX = "/usr"


@pytest.fixture(scope="module")
def installed():
    """The installed tree (DESTDIR) of this build."""
    with tempfile.TemporaryDirectory(prefix="hs-install-") as dest:
        env = dict(os.environ, DESTDIR=dest)
        run = subprocess.run(["cmake", "--install", str(hs_testlib.build_dir()), "--prefix", PREFIX],
                             env=env, capture_output=True, text=True, timeout=120)
        assert run.returncode == 0, run.stdout + run.stderr
        yield Path(dest)


def installed_bin(root: Path) -> str:
    return str(root / "usr/bin/hangscan")


def project_version() -> str:
    text = (hs_testlib.source_dir() / "CMakeLists.txt").read_text()
    return re.search(r"project\(hangscan VERSION ([0-9.]+)", text).group(1)


def built_commit() -> str:
    """The commit the build was configured at (build/generated/version.cpp)."""
    text = (hs_testlib.build_dir() / "generated/version.cpp").read_text()
    return re.search(r'hangscan_commit\(\) \{ return "([^"]*)"', text).group(1)


def test_installed_files(installed):
    assert sorted(str(p.relative_to(installed)) for p in installed.rglob("*") if p.is_file()
                  and "share/doc" not in str(p)) == [
        "usr/bin/hangscan",
        "usr/share/bash-completion/completions/hangscan",
        "usr/share/man/man1/hangscan.1",
    ]
    assert os.access(installed_bin(installed), os.X_OK)
    assert (installed / "usr/share/doc/hangscan/README.md").is_file()


def test_version_names_version_and_commit(installed):
    run = subprocess.run([installed_bin(installed), "--version"], capture_output=True, text=True,
                         timeout=30)
    assert run.returncode == 0, run.stderr
    commit = built_commit()
    assert run.stdout == f"hangscan {project_version()} (commit {commit})\n"
    src = hs_testlib.source_dir()
    if (src / ".git").exists() and shutil.which("git"):
        # The commit is this checkout's: HEAD when the build is current, else one before it.
        assert re.fullmatch(r"[0-9a-f]{12}", commit), commit
        ancestor = subprocess.run(["git", "-C", str(src), "merge-base", "--is-ancestor", commit, "HEAD"],
                                  capture_output=True, timeout=30)
        assert ancestor.returncode == 0, f"{commit} is not a commit of {src}"


def man_page(installed: Path) -> str:
    env = dict(os.environ, MANPATH=str(installed / "usr/share/man"), MANWIDTH="200", LC_ALL="C.UTF-8")
    run = subprocess.run(["man", "-P", "cat", "hangscan"], capture_output=True, text=True, env=env,
                         timeout=60)
    assert run.returncode == 0, run.stderr
    # man may hyphenate or use Unicode hyphens; compare on plain ASCII.
    return run.stdout.replace("\u2010", "-").replace("\u2212", "-")


def help_options(hangscan: str, sub: str) -> set[str]:
    run = subprocess.run([hangscan] + ([sub] if sub else []) + ["--help"], capture_output=True,
                         text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    opts = set()
    for line in run.stdout.splitlines():
        m = re.match(r"  (-\S+)", line)
        if m:
            opts.update(o for o in m.group(1).split(",") if o)
    return opts


@pytest.mark.skipif(shutil.which("man") is None, reason="man (package man-db) is not installed")
def test_man_page_covers_every_subcommand_option_and_exit_code(installed):
    page = man_page(installed)
    for section in ("NAME", "SYNOPSIS", "SUBCOMMANDS", "EXIT STATUS", "FILES"):
        assert re.search(rf"^{section}$", page, re.M), section
    for sub in ("dump", "core", "gcore", "doctor", "agent", "pdsh", "k8s"):
        assert re.search(rf"^ +hangscan {sub}\b", page, re.M), f"synopsis of {sub}"
    missing = {}
    for sub in ("", "dump", "core", "gcore", "doctor", "agent", "pdsh", "k8s"):
        for opt in help_options(installed_bin(installed), sub):
            if not re.search(rf"(^|[\s,(\[]){re.escape(opt)}(?![\w-])", page, re.M):
                missing.setdefault(sub or "(top level)", []).append(opt)
    assert not missing, f"options in --help but not in hangscan(1): {missing}"
    status = page[page.index("EXIT STATUS"):page.index("FILES")]
    assert [int(c) for c in re.findall(r"^ {7}(\d+)\s", status, re.M)] == [0, 1, 2, 64]
    for written in ("report.txt", ".partial", "core.HOST.PID"):
        assert written in page


def complete(installed: Path, *words: str) -> list[str]:
    script = (f"source {installed}/usr/share/bash-completion/completions/hangscan\n"
              f"COMP_WORDS=({' '.join(repr(w) for w in (installed_bin(installed),) + words)})\n"
              f"COMP_CWORD={len(words)}\n_hangscan\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
    run = subprocess.run(["bash", "--norc", "--noprofile", "-c", script], capture_output=True,
                         text=True, timeout=30)
    assert run.returncode == 0, run.stderr
    return run.stdout.split()


def test_bash_completion(installed):
    assert complete(installed, "d") == ["dump", "doctor"]
    assert complete(installed, "dump", "--for") == ["--format"]
    assert complete(installed, "dump", "--format", "") == ["text", "json", "dot", "svg", "folded", "html"]
    assert complete(installed, "gcore", "--max") == ["--max-size"]
    assert complete(installed, "doctor", "--agent") == ["--agent-path"]
    assert complete(installed, "--slurm") == ["--slurm-job"]
    assert complete(installed, "k8s", "--cont") == ["--container"]


def test_dump_from_installed_binary(installed, targets):
    t = targets.start([hs_testlib.program("deadlock")])
    run = hs_testlib.dump(t.pid, binary=installed_bin(installed))
    assert run.rc == 0, run.describe()
    proc = hs_testlib.process_of(run.doc, t.pid)
    line = hs_testlib.hs_line("deadlock.c", "lock_second")
    for name in ("hs-lock-a", "hs-lock-b"):
        frames = hs_testlib.frames_of(hs_testlib.thread_named(proc, name))
        i = hs_testlib.find_frame(frames, "lock_second")
        stack = hs_testlib.format_stack(hs_testlib.thread_named(proc, name))
        assert i >= 0, stack
        assert frames[i]["line"] == line and frames[i]["file"].endswith("deadlock.c"), stack


def doctor_agent(hangscan: str, agent: str) -> tuple[int, str]:
    """`doctor --agent-path AGENT`: exit code, and its agent line as "LEVEL finding [fix: ...]"."""
    run = hs_testlib.run_hangscan(["doctor", "--agent-path", agent], binary=hangscan)
    lines = [l for l in run.stdout.splitlines() if " agent: " in l]
    assert len(lines) == 1, run.describe()
    level, finding = lines[0].split(" agent: ", 1)
    return run.rc, f"{level.strip()} {finding}"


def test_doctor_agent_path_same_version(installed, hangscan):
    rc, line = doctor_agent(hangscan, installed_bin(installed))
    assert line == (f"ok {installed_bin(installed)} is hangscan {project_version()} "
                    f"(commit {built_commit()}), the same as this front end")


def test_doctor_agent_path_other_version_is_a_clear_error(hangscan, tmp_path):
    fake = tmp_path / "hangscan"
    fake.write_text("#!/bin/sh\necho 'hangscan 0.0.9 (commit 0123456789ab)'\n")
    fake.chmod(0o755)
    rc, line = doctor_agent(hangscan, str(fake))
    assert rc == 1
    assert line == (f"FAIL {fake} is hangscan 0.0.9 (commit 0123456789ab), this front end is "
                    f"hangscan {project_version()} (commit {built_commit()}): the fan-out refuses its "
                    "answers fix: install the same hangscan package on every node, or point "
                    "--agent-path to a copy of this version on a shared file system (docs/slurm.md)")


def test_doctor_agent_path_not_hangscan_or_missing(hangscan, tmp_path):
    silent = tmp_path / "silent"
    silent.write_text("#!/bin/sh\nexit 0\n")
    silent.chmod(0o755)
    rc, line = doctor_agent(hangscan, str(silent))
    assert rc == 1 and f"FAIL {silent} does not say it is hangscan ('--version' printed '')" in line, line
    rc, line = doctor_agent(hangscan, str(tmp_path / "nothing"))
    assert rc == 1 and f"{tmp_path}/nothing cannot be run here: No such file or directory" in line, line
    rc, line = doctor_agent(hangscan, "bin/hangscan")
    assert rc == 1 and "'bin/hangscan' is not an absolute path" in line, line


FAKE_AGENT = r'''#!/usr/bin/python3
# An agent of "another version": the real agent's answer with agent_version 0.1.0 -> 0.0.9
# (same length), framed again with the matching hash, so only the version tells it apart.
import subprocess, sys
out = subprocess.run([%(real)r] + sys.argv[1:], stdout=subprocess.PIPE, text=True).stdout
lines = out.splitlines()
data = [l[len("HSAGENT1 d "):] for l in lines if l.startswith("HSAGENT1 d ")]
doc = "".join(data).replace('"agent_version":"%(version)s"', '"agent_version":"%(fake)s"', 1)
h = 0xcbf29ce484222325
for c in doc.encode():
    h = ((h ^ c) * 0x100000001b3) & 0xFFFFFFFFFFFFFFFF
pos = 0
for l in lines:
    if l.startswith("HSAGENT1 d "):
        n = len(l) - len("HSAGENT1 d ")
        print("HSAGENT1 d " + doc[pos:pos + n]); pos += n
    elif l.startswith("HSAGENT1 end "):
        node = l.split()[2]
        print(f"HSAGENT1 end {node} {len(doc)} {h:016x}")
    else:
        print(l)
'''


@pytest.mark.skipif(shutil.which("pdsh") is None, reason="pdsh is not installed")
def test_fanout_refuses_an_agent_of_another_version(installed, hangscan, targets, tmp_path):
    t = targets.start([hs_testlib.program("deadlock")])
    # A POSIX ERE escape (Python's re.escape writes \-, which POSIX regex rejects).
    match = "^" + re.sub(r"([.^$*+?()\[\]{}|\\])", r"\\\1", hs_testlib.program("deadlock")) + " "
    fake_version = "9" * len(project_version())   # same length: the frame stays the same size
    fake = tmp_path / "agent-9"
    fake.write_text(FAKE_AGENT % {"real": installed_bin(installed), "version": project_version(),
                                  "fake": fake_version})
    fake.chmod(0o755)
    args = ["pdsh", "-R", "exec", "-w", "n1", "--match", match, "--timeout", "60", "--json"]

    same = hs_testlib.run_hangscan(args + ["--agent-path", installed_bin(installed)], binary=hangscan)
    assert same.rc == 0, same.describe()
    assert [p["pid"] for p in same.doc["processes"]] == [t.pid]

    other = hs_testlib.run_hangscan(args + ["--agent-path", str(fake)], binary=hangscan)
    assert other.rc == 2, other.describe()
    assert other.doc["processes"] == []
    assert other.doc["unreachable"] == [{
        "host": "n1",
        "reason": f"the agent there is hangscan {fake_version} (commit {built_commit()}), this front end is "
                  f"hangscan {project_version()} (commit {built_commit()}): answer not used (install the same "
                  "hangscan on every node, or pass --agent-path to a copy of this version; 'hangscan doctor "
                  "--agent-path PATH' on the node checks it)"}]
