"""The HTML report (issue 34) in a real browser: Debian's headless Chromium, driven through its
DevTools pipe (browser.py), opens the file a dump wrote and a test reads what a person would see.

Screenshots go to BUILD/test-artifacts/html/ for a person to look at.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

import browser
import hs_testlib as hs
from test_watch import ebpf  # noqa: F401  (fixture: skips where eBPF cannot run)

PY = "/usr/bin/python3"


@pytest.fixture
def targets():
    with hs.TargetPool() as pool:
        yield pool


def artifacts():
    path = hs.build_dir() / "test-artifacts" / "html"
    path.mkdir(parents=True, exist_ok=True)
    return path


def page_data(page):
    """The document a page embeds (hangscan-html/1), put back into hangscan/1's shape: stacks as
    frame lists, threads and processes with their shapes' members (as report.js does)."""
    start = page.index('<script type="application/json" id="hs-data">')
    data = page[page.index(">", start) + 1:page.index("</script>", start)]
    assert "<" not in data  # every "<" of the data is escaped: nothing can close the element
    doc = json.loads(data)
    assert doc["schema"] == "hangscan-html/1"
    stacks = [[doc["frames"][i] for i in ids] for ids in doc["stacks"]]
    for g in doc["groups"]:
        g["frames"] = stacks[g["frames"]]
    processes = []
    for row in doc["processes"]:
        record = {k: v for k, v in zip(doc["process_columns"], row) if v is not None}
        p = {**doc["process_shapes"][record["shape"]], **record}
        threads = []
        for tid, shape, *rest in record["threads"]:
            t = {**doc["thread_shapes"][shape], "tid": tid, "blocked_s": (rest + [None])[0]}
            for k in ("frames", "native_frames", "kernel_frames"):
                t[k] = stacks[t[k]] if k in t else []
            threads.append(t)
        p["threads"] = threads
        processes.append(p)
    doc["processes"] = processes
    return doc


def dump_to(out, *args):
    """`dump ... --format html` into out/report.html; the document the page embeds, parsed."""
    run = hs.run_hangscan(["dump", *[str(a) for a in args], "--format", "html"])
    assert run.rc in (0, 1), run.describe()
    out.mkdir()
    html = out / "report.html"
    html.write_text(run.stdout)
    return page_data(run.stdout), html


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
        assert doc["verdict"][0]["text"].startswith("SUSPECT rank 2 is not in all_reduce with ranks 0-1,3: ")
        assert doc["verdict"][0]["text"] in verdict
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


def test_html_file_beside_the_text_report(targets, tmp_path):
    """--html FILE: the text on stdout as without it, the page in FILE (a link planted there is
    replaced, never followed)."""
    job = targets.start([PY, hs.program_source("ring_allreduce.py"), hs.READY, "--world", "4",
                         "--launcher", "subprocess"], ready="pipe", timeout=120)
    victim = tmp_path / "victim"
    victim.write_text("victim\n")
    out = tmp_path / "out"
    out.mkdir()
    os.symlink(victim, out / "page.html")
    run = hs.run_hangscan(["dump", "--pid", str(job.pid), "--subprocesses", "--html", str(out / "page.html")])
    assert run.rc in (0, 1), run.describe()
    assert run.stdout.splitlines()[1].startswith("SUSPECT rank 2 "), run.stdout[:500]
    assert victim.read_text() == "victim\n"
    assert not os.path.islink(out / "page.html")
    doc = page_data((out / "page.html").read_text())
    assert doc["suspects"] == [2]
    assert sorted(p["rank"] for p in doc["processes"] if p["role"] == "rank") == [0, 1, 2, 3]
    text = hs.run_hangscan(["dump", "--pid", str(job.pid), "--subprocesses"])
    assert text.stdout.splitlines()[:2] == run.stdout.splitlines()[:2]


def test_html_file_in_a_directory_of_another_user_is_refused(targets, tmp_path):
    target = targets.start([PY, hs.program_source("py_hostile_html.py"), hs.READY], ready="pipe")
    out = tmp_path / "theirs"
    out.mkdir()
    os.chown(out, hs.NOBODY, hs.NOBODY)
    run = hs.run_hangscan(["dump", "--pid", str(target.pid), "--html", str(out / "r.html")], parse_json=False)
    assert run.rc == 2, run.describe()
    assert run.stderr.splitlines()[0].startswith(f"hangscan: refusing --html {out}: "), run.stderr
    assert run.stderr.splitlines()[1].startswith("hint: "), run.stderr
    assert os.listdir(out) == []
    hs.assert_runs_on(target.pid)


def synthetic_page(tmp_path, ranks):
    """The benchmark job's page (tests/bench/synth_job.h: ranks x 8 threads, 200 distinct
    stacks, every 50th rank odd), written by hs_bench."""
    bench = hs.build_dir() / "tests" / "bench" / "hs_bench"
    if not bench.exists():
        pytest.skip("hs_bench is not built (make test builds it)")
    html = tmp_path / f"page-{ranks}.html"
    subprocess.run([str(bench), "--html", str(html), "--html-ranks", str(ranks)], check=True,
                   capture_output=True, timeout=120)
    return html


def test_hundred_ranks_page_is_small_and_complete(tmp_path):
    browser.chromium()
    html = synthetic_page(tmp_path, 100)
    assert html.stat().st_size < 300_000, html.stat().st_size
    doc = page_data(html.read_text())
    assert len(doc["processes"]) == 100
    assert doc["suspects"] == [7, 57]
    with browser.Browser(tmp_path) as b:
        page = b.open(html.as_uri())
        assert page.eval("document.title") == "hangscan: 100 processes, 3 groups"
        assert page.eval("document.querySelectorAll('#processes tr.proc').length") == 100
        assert visible_texts(page, "#tree .mark") == ["<- suspect", "<- suspect"]
        # Verdict lines link to the tree: rank 7's frames marked (where it parted, the first
        # frame after, its deepest), the majority's place apart; a timing line its group's end.
        page.eval("document.querySelector('#verdict li.suspect .line.link').click()")
        assert visible_texts(page, "#tree .node.found .fn") == [
            "step_23 (layer_2.py:33)", "odd1_24 (layer_101.py:44)", "odd1_29 (layer_101.py:49)"]
        assert visible_texts(page, "#tree .node.found .ranks") == ["[0-99]", "[7]", "[7]"]
        assert visible_texts(page, "#tree .node.found-place .fn") == ["step_29 (layer_1.py:39)"]
        assert visible_texts(page, "#verdict .picked") == ["ranks [7]: rank 7"]
        page.eval("document.querySelector('#verdict li.timing .line.link').click()")
        assert visible_texts(page, "#tree .node.found .fn") == ["step_29 (layer_1.py:39)"]
        assert visible_texts(page, "#tree .node.found .ranks") == ["[0-6,8-56,58-99]"]
        assert len(visible_texts(page, "#processes tr.picked")) == 98
        page.eval("const s = document.getElementById('search'); s.value = 'odd2_';"
                  "s.dispatchEvent(new Event('input'))")
        assert visible_texts(page, "#processes tr.proc button") == ["rank 57"]
        page.eval("document.querySelector('#processes tr.proc button.member').click()")
        shown = page.eval("document.getElementById('page').innerText").splitlines()
        assert shown[0] == "rank 57 (pid 20057, node00007)"
        assert sum(1 for line in shown if line.startswith("Thread ")) == 8
        assert "odd2_29 (layer_102.py:49)" in shown
    assert set(b.requests) <= {html.as_uri()}, b.requests
    assert b.console_errors == []


def flame_nodes(members):
    """The flame graph's nodes as watch.js merges the members' on-CPU stacks (outermost first)."""
    names = set()
    for p in members:
        for st in p["top_stacks"]:
            path = ()
            for f in reversed(st["frames"]):
                where = f" ({Path(f['file']).name}{':' + str(f['line']) if f['line'] else ''})" if f["file"] else ""
                path += (f"{f['function'] or '??'}{where}",)
                names.add(path)
    return len(names) + (1 if names else 0)  # and the root


def test_watch_page_has_a_strip_per_process_and_a_flame_graph_per_group(targets, tmp_path):
    """`watch --html FILE` (the ptrace recorder: no BPF needed): the verdict, one strip per
    process with a bar per wait, one flame graph per group, all counted from the JSON of the
    same run."""
    browser.chromium()
    busy = targets.start([hs.program("busy"), hs.READY])
    job = targets.start([PY, hs.program_source("pool_hang.py"), hs.READY], ready="pipe", timeout=60)
    page_file = tmp_path / "watch.html"
    run = hs.run_hangscan(["watch", "--ptrace", "--for", "2", "--json", "--pid", str(job.pid),
                           "--subprocesses", "--pid", str(busy.pid), "--html", str(page_file)], timeout=90)
    assert run.rc == 0 and run.doc, run.describe()
    doc = run.doc
    html = page_file.read_text()
    assert "<" not in html[html.index('id="hs-data">') + 13:html.index("</script>")]
    groups = doc["groups"] or [{"pids": [p["pid"] for p in doc["processes"]]}]
    with browser.Browser(tmp_path) as b:
        page = b.open(page_file.as_uri())
        verdict = page.eval("document.querySelector('.verdict').innerText").splitlines()
        assert [f"SUSPECT {r}" for r in doc["suspect_reasons"]] == verdict[:len(doc["suspect_reasons"])]
        assert doc["suspect_reasons"], doc
        assert page.eval("document.querySelectorAll('.strip-row').length") == len(doc["processes"])
        assert page.eval("[...document.querySelectorAll('.strip-row')].map(r => +r.dataset.pid)") == \
            [p["pid"] for p in doc["processes"]]
        assert page.eval("document.querySelectorAll('.strip .wait').length") == \
            sum(len(p["waits"]) for p in doc["processes"])
        assert page.eval("document.querySelectorAll('.flame').length") == len(groups)
        busy_doc = next(p for p in doc["processes"] if p["pid"] == busy.pid)
        assert busy_doc["samples"] > 0, busy_doc
        expected = sum(flame_nodes([p for p in doc["processes"] if p["pid"] in g["pids"]]) for g in groups)
        assert page.eval("document.querySelectorAll('.flame-node').length") == expected
        labels = page.eval("[...document.querySelectorAll('.flame-label')].map(e => e.textContent)")
        assert any(label.startswith("spin_forever (busy.c:") for label in labels), labels
        page.screenshot(artifacts() / "watch_pool.png")
    assert set(b.requests) <= {page_file.as_uri()}, b.requests
    assert b.console_errors == []


def test_watch_page_shows_hostile_names_as_text(ebpf, targets, tmp_path):  # noqa: F811
    """eBPF (run under flock /tmp/hs-bpf.lock): a wait carries the sleeping thread's frames."""
    browser.chromium()
    target = targets.start([PY, hs.program_source("py_hostile_html.py"), hs.READY], ready="pipe")
    page_file = tmp_path / "watch.html"
    run = hs.run_hangscan(["watch", "--for", "1", "--json", "--pid", str(target.pid),
                           "--html", str(page_file)], timeout=90)
    assert run.rc == 0 and run.doc, run.describe()
    [proc] = run.doc["processes"]
    hostile = [w for w in proc["waits"] if any(f["function"] == "<script>window.__pwned=2</script>" for f in w["frames"])]
    assert hostile, proc["waits"]
    with browser.Browser(tmp_path) as b:
        page = b.open(page_file.as_uri())
        assert page.eval("window.__pwned === undefined")
        assert page.eval("document.querySelectorAll('img, iframe').length") == 0
        assert page.eval("document.querySelectorAll('script').length") == 2  # data and code
        titles = page.eval("[...document.querySelectorAll('.strip .wait')].map(e => e.title)")
        assert any('in <script>window.__pwned=2</script> ("><img src=x onerror="window.__pwned=1">.py:3)' in t
                   for t in titles), titles
    assert set(b.requests) <= {page_file.as_uri()}, b.requests
    assert b.console_errors == []


def test_watchdog_bundle_holds_both_pages(targets, tmp_path):
    """`watch --stall`: the bundle has report.html (the capture) and timeline.html (the window)
    beside the text and JSON, and both open clean."""
    browser.chromium()
    target = targets.start([PY, hs.program_source("py_hostile_html.py"), hs.READY], ready="pipe")
    out = tmp_path / "bundles"
    run = hs.run_hangscan(["watch", "--ptrace", "--stall", "2", "--once", "--output", str(out),
                           "--pid", str(target.pid)], parse_json=False, timeout=60)
    assert run.rc == 0, run.describe()
    [bundle] = list(out.iterdir())
    assert sorted(os.listdir(bundle)) == ["report.html", "report.json", "report.txt",
                                          "timeline.html", "timeline.json", "timeline.txt"]
    report = json.loads((bundle / "report.json").read_text())
    timeline = json.loads((bundle / "timeline.json").read_text())
    with browser.Browser(tmp_path) as b:
        page = b.open((bundle / "report.html").as_uri())
        assert page.eval("document.title") == f"hangscan: {len(report['processes'])} processes, {len(report['groups'])} groups"
        assert page.eval("window.__pwned === undefined")
        page = b.open((bundle / "timeline.html").as_uri())
        assert page.eval("document.querySelectorAll('.strip-row').length") == len(timeline["processes"]) == 1
        assert page.eval("window.__pwned === undefined")
    assert set(b.requests) <= {(bundle / n).as_uri() for n in ("report.html", "timeline.html")}, b.requests
    assert b.console_errors == []


def test_watch_html_is_for_a_window_only(tmp_path):
    run = hs.run_hangscan(["watch", "--stall", "3", "--output", str(tmp_path / "b"), "--pid", str(os.getpid()),
                           "--html", str(tmp_path / "w.html")], parse_json=False)
    assert run.rc == 64, run.describe()
    assert run.stderr.splitlines() == [
        "hangscan: --html and --format write the report of one window; not with --stall",
        "hint: the watchdog's bundles hold report.html and timeline.html (docs/html-report.md)"]
    assert not (tmp_path / "b").exists() and not (tmp_path / "w.html").exists()
