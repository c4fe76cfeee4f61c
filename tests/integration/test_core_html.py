"""The HTML report of a core (issue 34): `hangscan core CORE --format html` in headless Chromium
(browser.py); the process's page says what the text report says of the crash: the core file,
the signal, the crash explained, the crashed thread. Makes a kernel core (kernel.core_pattern:
ctest's RESOURCE_LOCK core_pattern, as every test_core*.py)."""

import signal

import pytest

import browser
import core_testlib as ct
import hs_testlib as hs
from test_html_report import artifacts, page_data


@pytest.fixture(scope="module")
def cores():
    with ct.CoreDir() as d:
        yield d


def test_core_page_shows_the_signal_and_the_crashed_thread(cores, tmp_path):
    browser.chromium()
    core, pid = cores.crash([hs.program("crash_native"), "1", "null"], signal.SIGSEGV)
    run = hs.run_hangscan(["core", str(core), "--format", "html"])
    assert run.rc == 0, run.describe()
    html = tmp_path / "core.html"
    html.write_text(run.stdout)
    p = page_data(run.stdout)["processes"][0]
    assert p["annotations"][0].startswith("SIGSEGV at address 0x0: a null pointer dereference in read_null")
    with browser.Browser(tmp_path) as b:
        page = b.open(html.as_uri())
        page.eval("document.querySelector('#processes button.member').click()")
        shown = page.eval("document.getElementById('page').innerText").splitlines()
        assert p["host"] == "" and shown[0] == f"pid {pid}", shown[0]  # a core's process has no host
        assert shown[3:6] == [f"core: {core}", "signal: SIGSEGV (11) at 0x0, code 1",
                              f"crash: {p['annotations'][0]}"], shown[:8]
        crashed = [line for line in shown if line.startswith("Thread ") and ", CRASHED," in line]
        assert len(crashed) == 1 and crashed[0].startswith(f"Thread {p['crashed_tid']} "), crashed
        page.screenshot(artifacts() / "core_page.png")
    assert set(b.requests) <= {html.as_uri()}, b.requests
    assert b.console_errors == []
