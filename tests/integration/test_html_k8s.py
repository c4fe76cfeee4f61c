"""`hangscan k8s ... --html` (issue 34) in a real browser.

The job of test_k8s.py (its fixture: three podman containers as the Running pods of a job, each
one rank of tests/programs/py_k8s_rank.py with rank 1 elsewhere, a fourth pod Pending, kubectl
the stand-in tests/k8s/kubectl): the page must show the merged verdict, the Pending pod as
unreachable, every rank with its pod as host (each is pid 1 in its own pod), and rank 1's page
with its Python frames at their file:line. Skips where podman, runc, mmdebstrap or root are
missing, as test_k8s.py does.
"""

import browser
from test_html_report import artifacts, page_data, visible_texts
from test_k8s import MARKS, ODD, WORLD, check_job_report, job, k8s  # noqa: F401 (fixture)


def test_k8s_page_shows_every_pod_and_the_suspect(job, tmp_path):  # noqa: F811
    browser.chromium()
    page_file = tmp_path / "k8s.html"
    run = k8s(job, "job-name=train-42", "--match", "py_k8s_rank", "--json", "--html", str(page_file))
    assert run.rc == 1, run.describe()  # partial: the Pending pod gave nothing
    check_job_report(run.doc)
    doc = page_data(page_file.read_text())
    assert doc["unreachable"] == run.doc["unreachable"]
    with browser.Browser(tmp_path) as b:
        page = b.open(page_file.as_uri())
        assert page.eval("document.title") == \
            f"hangscan: {WORLD - 1} processes, {len(run.doc['groups'])} groups"
        verdict = page.eval("document.getElementById('verdict').innerText").splitlines()
        for reason in run.doc["suspect_reasons"]:
            assert f"SUSPECT {reason}" in verdict, verdict
        assert f"unreachable: train-{WORLD - 1} (pod phase Pending)" in verdict, verdict
        rows = page.eval("[...document.querySelectorAll('#processes tr.proc')].map(tr =>"
                         " [...tr.querySelectorAll('td')].map(td => td.textContent))")
        assert sorted(r[:3] for r in rows) == [[f"rank {r}", "1", f"train-{r}"] for r in range(WORLD - 1)]
        assert visible_texts(page, "#verdict button.member") == [f"rank {ODD} (pid 1)"]
        page.eval("document.querySelector('#verdict button.member').click()")
        shown = page.eval("document.getElementById('page').innerText").splitlines()
        assert shown[0] == f"rank {ODD} (pid 1, train-{ODD})"
        for func, mark in (("load_checkpoint", "load_checkpoint"), ("train", "train_odd"),
                           ("<module>", "module")):
            assert f"{func} (py_k8s_rank.py:{MARKS[mark]})" in shown, shown
        page.screenshot(artifacts() / "k8s.png")
    assert set(b.requests) <= {page_file.as_uri()}, b.requests
    assert b.console_errors == []
