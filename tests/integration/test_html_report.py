"""The HTML report (issue 34) in a real browser: Debian's headless Chromium, driven through its
DevTools pipe (browser.py), opens the file a dump wrote and a test reads what a person would see.

Screenshots go to BUILD/test-artifacts/html/ for a person to look at.
"""

import json
import os
from pathlib import Path

import pytest

import browser
import hs_testlib as hs

PY = "/usr/bin/python3"


@pytest.fixture
def targets():
    with hs.TargetPool() as pool:
        yield pool


def artifacts():
    path = hs.build_dir() / "test-artifacts" / "html"
    path.mkdir(parents=True, exist_ok=True)
    return path


def dump_to(out, *args):
    """`dump ... --format html` into out/report.html; the document the page embeds, parsed."""
    run = hs.run_hangscan(["dump", *[str(a) for a in args], "--format", "html"])
    assert run.rc in (0, 1), run.describe()
    out.mkdir()
    html = out / "report.html"
    html.write_text(run.stdout)
    start = run.stdout.index('<script type="application/json" id="hs-data">')
    data = run.stdout[run.stdout.index(">", start) + 1:run.stdout.index("</script>", start)]
    assert "<" not in data  # every "<" of the data is escaped: nothing can close the element
    return json.loads(data), html


def visible_texts(page, selector):
    return page.eval(f"[...document.querySelectorAll({json.dumps(selector)})]"
                     ".filter(e => e.offsetParent !== null).map(e => e.textContent)")


def test_ring_job_report_shows_the_verdict_the_suspects_path_and_its_frames(targets, tmp_path):
    browser.chromium()
    job = targets.start([PY, hs.program_source("ring_allreduce.py"), hs.READY, "--world", "4",
                         "--launcher", "subprocess"], ready="pipe", timeout=120)
    doc, html = dump_to(tmp_path / "out", "--pid", job.pid, "--subprocesses")
    assert doc["suspects"] == [2]
    odd = next(p for p in doc["processes"] if p["rank"] == 2)
    main = next(t for t in odd["threads"] if t["tid"] == odd["pid"])
    python = [f for f in main["frames"] if f["kind"] == "python"]
    with browser.Browser(tmp_path) as b:
        page = b.open(html.as_uri())
        verdict = page.eval("document.getElementById('verdict').innerText").splitlines()
        assert f"SUSPECT {doc['suspect_reasons'][0]}" in verdict
        # The odd rank's path is open and marked down to where it diverges.
        marked = visible_texts(page, "#tree .node.suspect-path .fn")
        inner = python[0]
        assert marked[-1] == f"{inner['function']} ({Path(inner['file']).name}:{inner['line']})"
        assert visible_texts(page, "#tree .mark") == ["<- suspect"]
        assert "[2]" in visible_texts(page, "#tree .node.suspect-path .ranks")
        # Clicking the suspect shows its threads with Python frames at their file:line.
        page.eval("document.querySelector('#verdict button.member').click()")
        shown = page.eval("document.getElementById('page').innerText").splitlines()
        assert shown[0] == f"rank 2 (pid {odd['pid']}, {odd['host']})"
        for f in python:
            assert f"{f['function']} ({Path(f['file']).name}:{f['line']})" in shown, shown
        # Search finds a frame and opens its branch.
        page.eval("const s = document.getElementById('search'); s.value = 'all_reduce';"
                  "s.dispatchEvent(new Event('input'))")
        assert page.eval("document.getElementById('hits').textContent") == "1 frames match"
        assert visible_texts(page, "#tree .node.hit .fn")[0].startswith("all_reduce (")
        page.screenshot(artifacts() / "ring_allreduce.png")
    assert set(b.requests) <= {html.as_uri()}, b.requests
    assert b.console_errors == []


def test_hostile_names_are_text_never_markup(targets, tmp_path):
    browser.chromium()
    target = targets.start([PY, hs.program_source("py_hostile_html.py"), hs.READY], ready="pipe")
    doc, html = dump_to(tmp_path / "out", "--pid", target.pid, "--locals")
    names = {f["function"] for t in doc["processes"][0]["threads"] for f in t["frames"]}
    assert "<script>window.__pwned=2</script>" in names
    with browser.Browser(tmp_path) as b:
        page = b.open(html.as_uri())
        page.eval(f"document.querySelector('#processes button.member').click()")
        shown = page.eval("document.getElementById('page').innerText")
        tree = page.eval("document.getElementById('tree').innerText")
        assert page.eval("window.__pwned === undefined")
        assert page.eval("document.querySelectorAll('img, iframe').length") == 0
        assert page.eval("document.querySelectorAll('script').length") == 2  # data and code
        assert '<script>window.__pwned=2</script> ("><img src=x onerror="window.__pwned=1">.py:3)' in shown
        assert '"</script><script>window.__pwned=3</script>"' in shown
        assert "payload = " in shown and "window.__pwned=4" in shown
        assert "<script>window.__pwned=2</script>" in tree
        page.screenshot(artifacts() / "hostile_names.png")
    assert set(b.requests) <= {html.as_uri()}, b.requests
    assert b.console_errors == []
