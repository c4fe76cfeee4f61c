"""The watch page of the 8-rank torch job (issue 34) in a real browser.

tests/programs/hang_gloo.py with 8 ranks (torch.distributed, gloo, CPU): rank 5 skips an all_reduce
and sleeps, the other seven wait in it. Beside it, tests/programs/busy spins; the test stops it
(SIGSTOP) 1.5 s into the window. `watch --html` (eBPF, run under flock /tmp/hs-bpf.lock) must give a
page with a strip per process, rank 5 named, and under each strip the on-CPU share over time: the
busy process's bars before it was stopped, none after, each bar as the JSON of the same run says.
Skips without torch or eBPF.
"""

import importlib.util
import json
import os
import signal
import subprocess
import time

import pytest

import browser
import hs_testlib as hs
from test_html_report import artifacts, targets  # noqa: F401 (fixture)
from test_watch import ebpf  # noqa: F401 (fixture: skips where eBPF cannot run)

PY = "/usr/bin/python3"
WORLD, ODD = 8, 5
WINDOW_S, STOP_AT_S = 4, 1.5


def watch_while_stopping(busy, args):
    """`hangscan watch ARGS`; `busy` is stopped STOP_AT_S after the window began (the line on
    stderr that says what it records). Returns the JSON and the stopped time from the timeline."""
    proc = subprocess.Popen([hs.hangscan_bin(), "watch", *map(str, args)], stdin=subprocess.DEVNULL,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        first = proc.stderr.readline().decode(errors="replace")
        assert first.startswith("hangscan: recording "), first
        time.sleep(STOP_AT_S)  # a point inside the window, not a readiness wait
        os.kill(busy.pid, signal.SIGSTOP)
        out, err = hs.communicate_within(proc, 60, "watch")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 0, err.decode(errors="replace")
    return json.loads(out)


def test_watch_page_of_the_8_rank_torch_job(ebpf, targets, tmp_path):  # noqa: F811
    browser.chromium()
    if importlib.util.find_spec("torch") is None and subprocess.run(
            [PY, "-c", "import torch"], capture_output=True).returncode != 0:
        pytest.skip("python3-torch is not installed (tools/deps.sh test installs it)")
    job = targets.start([PY, hs.program_source("hang_gloo.py"), hs.READY, "--launcher", "spawn",
                         "--world", WORLD, "--odd", ODD], ready="pipe", timeout=400)
    busy = targets.start([hs.program("busy"), hs.READY])
    page_file = tmp_path / "watch.html"
    doc = watch_while_stopping(busy, ["--for", WINDOW_S, "--json", "--pid", job.pid, "--subprocesses",
                                      "--pid", busy.pid, "--html", page_file])
    ranks = sorted(p["rank"] for p in doc["processes"] if p["role"] == "rank")
    assert ranks == list(range(WORLD)), doc["processes"]
    assert doc["suspects"] == [ODD], (doc["suspect_reasons"], [(g["ranks"], g["what"]) for g in doc["groups"]])
    [reason] = doc["suspect_reasons"]
    assert reason.startswith(f"rank {ODD} is not in "), reason
    bucket = doc["cpu_bucket_s"]
    assert bucket == pytest.approx(0.3)  # 4 periods of 19 Hz in whole 0.1-s slots
    for p in doc["processes"]:
        assert len(p["cpu_over_time"]) == -(-doc["window_s"] // bucket), p
    spun = next(p for p in doc["processes"] if p["pid"] == busy.pid)["cpu_over_time"]
    [stop] = [e["t_s"] for e in doc["timeline"] if e["pid"] == busy.pid and e["kind"] == "signal"]
    assert stop >= STOP_AT_S
    assert [s for i, s in enumerate(spun) if i * bucket > stop] == [0.0] * sum(1 for i in range(len(spun)) if i * bucket > stop)
    assert max(spun[:int(stop // bucket)]) > 0, spun
    with browser.Browser(tmp_path) as b:
        page = b.open(page_file.as_uri())
        assert page.eval("document.title") == f"hangscan watch: {len(doc['processes'])} processes, {doc['window_s']:.1f} s"
        verdict = page.eval("document.querySelector('.verdict').innerText").splitlines()
        assert verdict[0] == f"SUSPECT {reason}"
        names = page.eval("[...document.querySelectorAll('.strip-name')].map(e => e.textContent)")
        assert [n.split(" ")[:2] for n in names[:WORLD]] == [["rank", str(r)] for r in range(WORLD)]
        assert page.eval("document.querySelectorAll('.strip-row').length") == len(doc["processes"])
        # Under each strip, a bar per bucket: its height the share (full at one CPU), its title
        # the bucket's time and share.
        bars = page.eval("[...document.querySelectorAll('.strip-row')].map(r => [+r.dataset.pid,"
                         " [...r.querySelectorAll('.cpu-strip .cpu')].map(b => [parseFloat(b.style.height), b.title])])")
        expected = []
        for p in doc["processes"]:
            row = []
            for i, share in enumerate(p["cpu_over_time"]):
                start, end = i * bucket, min(doc["window_s"], (i + 1) * bucket)
                row.append([pytest.approx(min(share, 1) * 100, abs=0.051),
                            f"{start:.1f}-{end:.1f} s: {round(share * 100)}% CPU"])
            expected.append([p["pid"], row])
        assert bars == expected
        page.screenshot(artifacts() / "watch_torch.png")
    assert set(b.requests) <= {page_file.as_uri()}, b.requests
    assert b.console_errors == []
