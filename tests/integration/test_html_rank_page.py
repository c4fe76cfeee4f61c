"""A rank's page in the HTML report (issue 34) says what the text report says of each thread:
since when it waits, its wchan, its kernel frames, the process's memory; and the search finds a
frame by its file's whole path. Headless Chromium (browser.py) on a dump of py_hang.py."""

import time
from pathlib import Path

import browser
import hs_testlib as hs
from test_html_report import artifacts, dump_to, targets, visible_texts  # noqa: F401  (targets: fixture)

PY = "/usr/bin/python3"


def mib(n):
    return f"{n / 1048576:.1f} MiB"


def test_rank_page_has_since_when_wchan_kernel_frames_and_memory(targets, tmp_path):
    browser.chromium()
    source = hs.program_source("py_hang.py")
    target = targets.start([PY, source, hs.READY], ready="pipe")
    doc, html = dump_to(tmp_path / "out", "--pid", target.pid)
    p = doc["processes"][0]
    main = next(t for t in p["threads"] if t["tid"] == p["pid"])
    assert main["blocked_s"] is not None and main["kernel_frames"] and main["wchan"]
    since = time.strftime("%H:%M:%S", time.gmtime(p["captured_at"] - main["blocked_s"]))
    with browser.Browser(tmp_path) as b:
        page = b.open(html.as_uri())
        page.eval("document.querySelector('#processes button.member').click()")
        shown = page.eval("document.getElementById('page').innerText").splitlines()
        head = next(line for line in shown if line.startswith(f"Thread {main['tid']} "))
        assert f", blocked {main['blocked_s']:.1f} s (since {since} UTC), wchan {main['wchan']}" in head, head
        assert f"state {main['state']}, {main['syscall']}, " in head, head
        # Its kernel frames under their heading, in order, after its Python frames.
        box = page.eval(f"[...document.querySelectorAll('#page .thread')].find(b => "
                        f"b.querySelector('h3').textContent.startsWith('Thread {main['tid']} ')).innerText")
        lines = box.splitlines()
        at = lines.index("kernel:")
        assert lines[at + 1:at + 1 + len(main["kernel_frames"])] == [f["function"] for f in main["kernel_frames"]]
        m = p["memory"]
        assert f"rss {mib(m['rss_bytes'])}, peak {mib(m['peak_rss_bytes'])}" in shown[1], shown[1]
        # The search finds frames by their file's whole path, not only its last name.
        page.eval(f"const s = document.getElementById('search'); s.value = {str(Path(source).parent)!r} + '/';"
                  "s.dispatchEvent(new Event('input'))")
        in_file = page.eval("[...document.querySelectorAll('#tree .node .fn')]"
                            ".filter(e => e.textContent.includes('(py_hang.py:')).length")
        assert in_file > 0
        assert page.eval("document.getElementById('hits').textContent") == f"{in_file} frames match"
        page.screenshot(artifacts() / "rank_page.png")
    assert set(b.requests) <= {html.as_uri()}, b.requests
    assert b.console_errors == []


def test_command_line_with_markup_and_a_byte_that_is_no_utf8(targets, tmp_path):
    """A command line is the target's: markup and quotes are text, a byte that is no UTF-8 is
    shown as U+FFFD (the page was not written at all before: exit 2)."""
    browser.chromium()
    arg = "<script>window.__pwned=5</script>\"'\udcff end"  # \udcff: the byte 0xff in argv
    target = targets.start([PY, hs.program_source("py_hostile_html.py"), hs.READY, arg], ready="pipe")
    doc, html = dump_to(tmp_path / "out", "--pid", target.pid)
    shown_arg = "<script>window.__pwned=5</script>\"'\ufffd end"
    assert doc["processes"][0]["cmdline"][-1] == shown_arg
    with browser.Browser(tmp_path) as b:
        page = b.open(html.as_uri())
        page.eval("document.querySelector('#processes button.member').click()")
        shown = page.eval("document.getElementById('page').innerText").splitlines()
        assert shown[2].endswith(" " + shown_arg), shown[2]
        assert page.eval("window.__pwned === undefined")
        assert page.eval("document.querySelectorAll('script').length") == 2  # data and code
    assert set(b.requests) <= {html.as_uri()}, b.requests
    assert b.console_errors == []
