"""The HTML report's verdict lines link to the tree and the members (issue 34): each line is the
text report's line, made from the findings as data; clicking it opens the tree at the finding's
nodes, marks them and picks its members (a wait chain's root apart), in headless Chromium."""

from pathlib import Path

import browser
import hs_testlib as hs
from test_html_report import artifacts, page_data, targets, visible_texts  # noqa: F401  (targets: fixture)

PY = "/usr/bin/python3"


def summary(text):
    """The verdict lines of a text report: the lines after its title, up to the first blank."""
    lines = text.splitlines()[1:]
    return lines[:lines.index("")]


def test_ring_job_verdict_lines_open_the_tree_and_pick_the_members(targets, tmp_path):
    """The bundled 4-rank ring job (make demo): rank 2 never joins, ranks 1 -> 0 -> 3 wait on it."""
    browser.chromium()
    job = targets.start([PY, hs.program_source("ring_allreduce.py"), hs.READY, "--world", "4",
                         "--launcher", "subprocess"], ready="pipe", timeout=120)
    # One capture: the text report on stdout, the page in a file.
    html = tmp_path / "report.html"
    text = hs.run_hangscan(["dump", "--pid", str(job.pid), "--subprocesses", "--html", str(html)],
                           parse_json=False)
    assert text.rc in (0, 1), text.describe()
    doc = page_data(html.read_text())
    assert [v["text"] for v in doc["verdict"]] == summary(text.stdout)
    line = hs.hs_line("ring_allreduce.py", "odd")
    assert [v["text"] for v in doc["verdict"] if v["class"] == "waits"] == [
        f"waits: ranks 1 -> 0 -> 3 wait on rank 2, which sleeps (ring_allreduce.py:{line})"]
    suspect = doc["findings"][0]
    assert suspect["kind"] == "divergence" and suspect["ranks"] == [2]
    rank_of = {i: p.get("rank") for i, p in enumerate(doc["processes"])}
    with browser.Browser(tmp_path) as b:
        page = b.open(html.as_uri())
        lines = visible_texts(page, "#verdict li .line")
        assert lines[:len(doc["verdict"])] == [v["text"] for v in doc["verdict"]]
        assert visible_texts(page, "#tree .node.found") == []
        # The first SUSPECT line: the suspect's frames are open and marked, the deepest one's
        # label is the suspect's rank set, and the members are listed with links.
        page.eval("document.querySelector('#verdict li.suspect .line.link').click()")
        # (rank_main is called from a line of its own in each rank: the tree's node has no line.)
        found = visible_texts(page, "#tree .node.found .fn")
        assert [f["function"] for f in suspect["frames"]] == ["rank_main", "wait_for_checkpoint"]
        assert found == ["rank_main (ring_allreduce.py)", f"wait_for_checkpoint (ring_allreduce.py:{line})"], found
        assert visible_texts(page, "#tree .node.found .ranks")[-1] == "[2]"
        assert visible_texts(page, "#verdict .picked") == ["ranks [2]: rank 2"]
        assert visible_texts(page, "#processes tr.picked button") == ["rank 2"]
        page.eval("document.querySelector('#verdict .picked button.hop').click()")
        assert page.eval("document.querySelector('#page h2').textContent").startswith("rank 2 (pid ")
        # The wait chain line: its members in chain order, the root it waits on highlighted.
        page.eval("document.querySelector('#verdict li.waits .line.link').click()")
        chain = next(f for f in doc["findings"] if f["kind"] == "wait_chain")
        assert [rank_of[m] for m in chain["members"]] == [1, 0, 3] and [rank_of[chain["others"][0]]] == [2]
        assert visible_texts(page, "#verdict .picked") == ["ranks [0-1,3]: rank 1 -> rank 0 -> rank 3 wait on rank 2"]
        assert visible_texts(page, "#verdict .picked button.root") == ["rank 2"]
        assert visible_texts(page, "#processes tr.picked.root button") == ["rank 2"]
        assert visible_texts(page, "#processes tr.picked button") == ["rank 2", "rank 1", "rank 0", "rank 3"]
        assert visible_texts(page, "#tree .node.found-place") == []
        found = visible_texts(page, "#tree .node.found .ranks")
        assert found == ["[0-1,3]"], found
        page.screenshot(artifacts() / "ring_allreduce_wait_chain.png")
    assert set(b.requests) <= {html.as_uri()}, b.requests
    assert b.console_errors == []


def test_golden_page_links_a_death_a_fan_in_and_keeps_marks_through_the_library_toggle(tmp_path):
    """The writers' golden page (tests/unit/report/golden_test.cpp's 8-rank job: rank 7 odd, rank
    6 killed by the OOM killer and never captured, ranks 0-4 waiting on rank 5): no process
    needed."""
    browser.chromium()
    html = Path(hs.source_dir()) / "tests" / "unit" / "fixtures" / "golden" / "report.html"
    with browser.Browser(tmp_path) as b:
        page = b.open(html.as_uri())
        links = visible_texts(page, "#verdict li .line.link")
        assert [line.split(" ")[0] for line in links] == ["SUSPECT", "SUSPECT", "timing:", "waits:"]
        # The death: no process of rank 6, the place where its peers wait marked apart.
        page.eval("document.querySelectorAll('#verdict li.suspect .line.link')[1].click()")
        assert visible_texts(page, "#tree .node.found") == []
        assert visible_texts(page, "#tree .node.found-place .fn") == ["all_reduce (distributed_c10d.py:1541)"]
        assert visible_texts(page, "#tree .node.found-place .ranks") == ["[0-5]"]
        assert visible_texts(page, "#verdict .picked") == ["ranks [6]: no process captured"]
        # The divergence stays marked when library frames are hidden (its frames are not).
        page.eval("document.querySelector('#verdict li.suspect .line.link').click()")
        assert visible_texts(page, "#tree .node.found .fn") == ["worker (hang_gloo.py)", "time.sleep"]
        page.eval("const h = document.getElementById('hide-library'); h.checked = true;"
                  "h.dispatchEvent(new Event('change'))")
        assert visible_texts(page, "#tree .node.found .fn") == ["worker (hang_gloo.py)", "time.sleep"]
        assert visible_texts(page, "#tree .node.found .ranks") == ["[0-5,7]", "[7]"]
        assert visible_texts(page, "#tree .node.found .count") == ["7 ranks", "1 rank"]  # issue 34: set and count
        # A fan-in: the members in order, the root apart; the groups' end is a libc frame, hidden:
        # its nearest shown ancestor is marked.
        page.eval("document.querySelector('#verdict li.waits .line.link').click()")
        assert visible_texts(page, "#verdict .picked") == [
            "ranks [0-4]: rank 0, rank 1, rank 2, rank 3, rank 4 wait on rank 5"]
        assert visible_texts(page, "#tree .node.found .fn") == ["all_reduce (distributed_c10d.py:1541)"]
        assert visible_texts(page, "#processes tr.picked.root button") == ["rank 5"]
    assert set(b.requests) <= {html.as_uri()}, b.requests
    assert b.console_errors == []


def test_deadlock_line_picks_its_process(targets, tmp_path):
    """tests/programs/py_rlock_cycle.py: threads "post" and "audit" of one process hold one RLock
    each and wait for the other's (test_waits_python_locks.py)."""
    browser.chromium()
    target = targets.start([PY, hs.program_source("py_rlock_cycle.py"), hs.READY, str(tmp_path / "fh.txt")])
    html = tmp_path / "report.html"
    text = hs.run_hangscan(["dump", "--pid", str(target.pid), "--html", str(html)], parse_json=False)
    assert text.rc == 0, text.describe()
    doc = page_data(html.read_text())
    [line] = [v["text"] for v in doc["verdict"] if v["class"] == "deadlock"]
    # A plain dump says its deadlock under the process's title: the same line.
    assert line.startswith("deadlock: thread ") and line in text.stdout.splitlines(), (line, text.stdout)
    [proc] = doc["processes"]
    with browser.Browser(tmp_path) as b:
        page = b.open(html.as_uri())
        assert visible_texts(page, "#verdict li.deadlock .line.link") == [line]
        page.eval("document.querySelector('#verdict li.deadlock .line.link').click()")
        assert visible_texts(page, "#verdict .picked") == [f"1 process: {proc['host']}:{target.pid}"]
        assert visible_texts(page, "#tree .node.found .ranks") == ["[1 process]"]
        assert visible_texts(page, "#processes tr.picked button") == [f"{proc['host']}:{target.pid}"]
    assert set(b.requests) <= {html.as_uri()}, b.requests
    assert b.console_errors == []
