"""The HTML report with the job's logs (`--logs`, issues 34 and 35) in a real browser.

Three real ranks (tests/programs/log_ranks.py) write their logs in Slurm's "%x-%j-%t.out" naming
and block; rank 2 in load_batch. The test then adds the lines a real job's logs would end with:
ranks 0, 1 and 3 (which has a log and no process) a gloo timeout (gloo's own text), rank 2 a line full of markup (</script>, a
<script> and an <img> with an onerror, quotes, a byte that is no UTF-8). The page must show each
rank's last line with its file:line and age in the process table, the suspect's beside it in
the verdict and on its page, the logs' findings marked in the verdict, and the last line of
rank 3, which has a log and no process; every line as text.
"""

import re
import time

import browser
import hs_testlib as hs
from test_html_report import artifacts, page_data, targets, visible_texts  # noqa: F401 (fixture)
from test_logs_join import ODD, start_ranks

HOSTILE = ('</script><script>window.__pwned=5</script><img src=x onerror="window.__pwned=6"> '
           "'quoted' & \"double\" ")


def stamp(t):
    return time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(t)) + ",000"


def test_page_shows_each_ranks_last_log_line_and_the_logs_findings(targets, tmp_path):  # noqa: F811
    browser.chromium()
    logs = tmp_path / "logs"
    logs.mkdir()
    pids = start_ranks(targets, logs)
    now = time.time()
    # Rank 3 has a log and no process (it is not captured): all the page has of it is its log.
    (logs / "train-5-3.out").write_text(f"{stamp(now - 50)} INFO rank 3: step 42 all_reduce\n")
    for r in (0, 1, 3):  # gloo/transport/tcp/unbound_buffer.cc, UnboundBuffer::waitRecv
        with open(logs / f"train-5-{r}.out", "a") as out:
            out.write(f"{stamp(now - 20)} ERROR rank {r}: RuntimeError: [../third_party/gloo/gloo/transport/"
                      "tcp/unbound_buffer.cc:84] Timed out waiting 30000ms for recv operation to complete\n")
    with open(logs / f"train-5-{ODD}.out", "ab") as out:
        out.write(f"{stamp(now - 25)} INFO rank {ODD}: {HOSTILE}".encode() + b"\xff\n")
    page_file = tmp_path / "page.html"
    run = hs.run_hangscan(["dump", *[a for p in pids for a in ("--pid", str(p))], "--logs", str(logs),
                           "--json", "--html", str(page_file)])
    assert run.rc == 0, run.describe()
    doc = run.doc
    assert doc["suspects"] == [ODD]
    last = {entry["rank"]: entry for entry in doc["last_logs"]}
    assert last[ODD]["text"].endswith(HOSTILE + "\ufffd"), last[ODD]
    assert (last[ODD]["line"], last[0]["line"], last[0]["kind"]) == (3, 3, "gloo_timeout")
    findings = [r for r in doc["suspect_reasons"] if r.startswith("logs: ")]
    assert findings, doc["suspect_reasons"]
    assert page_data(page_file.read_text())["last_logs"] == doc["last_logs"]

    def place(r):
        return f"train-5-{r}.out:3, {round(last[r]['before_capture_s'])} s before the capture"

    with browser.Browser(tmp_path) as b:
        page = b.open(page_file.as_uri())
        verdict = page.eval("document.getElementById('verdict').innerText").splitlines()
        for reason in doc["suspect_reasons"]:
            assert f"SUSPECT {reason}" in verdict, verdict
        assert visible_texts(page, "#verdict li.from-logs") == [f"SUSPECT {r}" for r in findings]
        beside = f"last log: {last[ODD]['text']} ({place(ODD)})"
        assert visible_texts(page, "#verdict .members .last-log") == [beside]
        assert visible_texts(page, "#verdict li.log-only") == [
            f"rank 3 (no process captured): last log: {last[3]['text']} (train-5-3.out:2, "
            f"{round(last[3]['before_capture_s'])} s before the capture)"]
        assert re.fullmatch(r"train-5-2.out:3, 2\d s before the capture", place(ODD)), place(ODD)
        # The process table: each rank's last line, then where and when it was written.
        rows = page.eval("[...document.querySelectorAll('#processes tr.proc')].map(tr =>"
                         " [tr.querySelector('button').textContent,"
                         "  [...tr.querySelectorAll('td.log div')].map(d => d.textContent)])")
        assert sorted(rows) == [[f"rank {r}", [last[r]["text"], place(r)]] for r in range(3)], rows
        assert page.eval("[...document.querySelectorAll('#processes th')].map(e => e.textContent)") == \
            ["member", "pid", "host", "state", "role", "last log"]
        # The suspect's page has it too.
        page.eval("document.querySelector('#verdict button.member').click()")
        shown = page.eval("document.getElementById('page').innerText").splitlines()
        assert shown[0].startswith(f"rank {ODD} (pid {pids[ODD]}, "), shown
        assert beside in shown, shown
        # Every line is text: nothing ran, no element came from a log.
        assert page.eval("window.__pwned === undefined")
        assert page.eval("document.querySelectorAll('img, iframe').length") == 0
        assert page.eval("document.querySelectorAll('script').length") == 2  # data and code
        page.screenshot(artifacts() / "logs.png")
    assert set(b.requests) <= {page_file.as_uri()}, b.requests
    assert b.console_errors == []
