"""`hangscan watch --format text|json|html`: the window's report through the watch writer
registry (watch/watch_writers.h), and `--html FILE` beside it (docs/watch.md, docs/html-report.md).

The ptrace recorder (`--ptrace`): no BPF is loaded, so no lock is needed.
"""
from __future__ import annotations

import json
from html.parser import HTMLParser

import hs_testlib as hs
from test_watch import pool  # noqa: F401  (fixture)

PY = "/usr/bin/python3"
CLOCK_NANOSLEEP = "230"


class PageScripts(HTMLParser):
    """The page's <script> elements: their attributes and text (the parser raises on nothing,
    so the test also checks that the elements it needs are whole)."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.scripts: list[tuple[dict, str]] = []
        self._open: dict | None = None
        self._text = ""

    def handle_starttag(self, tag, attrs):
        if tag == "script":
            self._open, self._text = dict(attrs), ""

    def handle_data(self, data):
        if self._open is not None:
            self._text += data

    def handle_endtag(self, tag):
        if tag == "script" and self._open is not None:
            self.scripts.append((self._open, self._text))
            self._open = None


def page_document(page: str) -> dict:
    """The watch document a page embeds (its hs-data element), after the page parsed whole."""
    assert page.lower().startswith("<!doctype html>") and page.rstrip().endswith("</html>"), page[:200]
    parser = PageScripts()
    parser.feed(page)
    parser.close()
    data = [text for attrs, text in parser.scripts if attrs.get("id") == "hs-data"]
    assert len(data) == 1 and len(parser.scripts) == 2, [a for a, _ in parser.scripts]  # data and code
    assert parser.scripts[0][0]["type"] == "application/json"
    return json.loads(data[0])


def test_watch_format_html_is_the_page_of_the_window_and_embeds_its_json(pool, tmp_path):  # noqa: F811
    job = pool.start([PY, str(hs.program_source("pool_hang.py")), hs.READY], timeout=60)
    workers = hs.children(job.pid)
    [stuck] = [k for k in workers if hs.thread_syscall(k, k) == CLOCK_NANOSLEEP]
    line = hs.hs_line("pool_hang.py", "work")
    want_reasons = [f"pid {stuck}, a worker of pid {job.pid}, is in work (pool_hang.py:{line}) while 3 other "
                    "workers are idle"]
    args = ["watch", "--ptrace", "--for", "2", "--pid", str(job.pid), "--subprocesses"]

    # --format html: the page on stdout; --html FILE in the same run writes the same page.
    page_file = tmp_path / "window.html"
    run = hs.run_hangscan([*args, "--format", "html", "--html", str(page_file)], parse_json=False, timeout=90)
    assert run.rc == 0, run.describe()
    assert run.stdout == page_file.read_text()
    doc = page_document(run.stdout)
    assert sorted(p["pid"] for p in doc["processes"]) == sorted([job.pid, *workers])
    assert doc["recorder"] == "ptrace"
    assert doc["suspect_reasons"] == want_reasons
    assert [(g["pids"], g["suspect"]) for g in doc["groups"]] == [([stuck], True)]

    # --format json with --html FILE: the page embeds exactly the JSON of the same run.
    run = hs.run_hangscan([*args, "--format", "json", "--html", str(page_file)], parse_json=True, timeout=90)
    assert run.rc == 0 and run.doc, run.describe()
    assert page_document(page_file.read_text()) == run.doc
    assert run.doc["suspect_reasons"] == want_reasons

    # --format text is the default's words.
    run = hs.run_hangscan([*args, "--format", "text"], parse_json=False, timeout=90)
    assert run.rc == 0, run.describe()
    assert f"pid {stuck}, a worker of pid {job.pid}, is in work (pool_hang.py:{line})" in run.stdout


def test_watch_format_is_checked_and_is_for_a_window_only(tmp_path):
    run = hs.run_hangscan(["watch", "--format", "svg", "--pid", "1"], parse_json=False)
    assert run.rc == 64, run.describe()
    assert "--format: svg not in {text,json,html}" in run.stderr, run.stderr
    run = hs.run_hangscan(["watch", "--stall", "3", "--output", str(tmp_path / "b"), "--pid", "1",
                           "--format", "html"], parse_json=False)
    assert run.rc == 64, run.describe()
    assert run.stderr.splitlines() == [
        "hangscan: --html and --format write the report of one window; not with --stall",
        "hint: the watchdog's bundles hold report.html and timeline.html (docs/html-report.md)"]
    assert not (tmp_path / "b").exists()
