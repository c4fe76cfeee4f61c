#!/usr/bin/env python3
"""The HTML report at scale (issue 34): size of the page of 10,000 ranks x 8 threads in 200
distinct stacks, and how long headless Chromium takes until it is interactive.

Usage: tests/bench/bench_html.py [--ranks N] [--runs K]   (after building hs_bench and chromium
installed). hs_bench writes the page (tests/bench/synth_job.h's page job); Chromium opens it
from file:// through its DevTools pipe (tests/integration/browser.py). "Interactive" is the
first animation frame after the load event, in the page's own clock (performance.now(), from
the start of the navigation): by then the page's script has built the verdict, the tree and
the process table and the browser has laid them out.
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "integration"))

import browser  # noqa: E402

FIRST_FRAME = "new Promise(r => requestAnimationFrame(() => r(performance.now())))"
# Milliseconds from typing a search to the next frame (tree and process table redone).
SEARCH = ("new Promise(r => {{ const t0 = performance.now(); const s = document.getElementById('search');"
          " s.value = '{}'; s.dispatchEvent(new Event('input'));"
          " requestAnimationFrame(() => r(performance.now() - t0)); }})")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--ranks", type=int, default=10000)
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--build", default=os.environ.get("HS_BUILD_DIR", str(HERE.parent.parent / "build")))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="hs-bench-html-") as tmp:
        html = Path(tmp) / "page.html"
        made = subprocess.run([f"{args.build}/tests/bench/hs_bench", "--html", str(html),
                               "--html-ranks", str(args.ranks)], check=True, capture_output=True,
                              text=True)
        print(made.stdout.strip().splitlines()[-1])
        interactive, loaded, walls, searches = [], [], [], []
        for _ in range(args.runs):
            with browser.Browser(Path(tmp), timeout=60) as b:
                t0 = time.monotonic()
                page = b.open(html.as_uri())
                interactive.append(page.eval(FIRST_FRAME) / 1000)
                walls.append(time.monotonic() - t0)
                loaded.append(page.eval("performance.getEntriesByType('navigation')[0].loadEventEnd") / 1000)
                rows = page.eval("document.querySelectorAll('#processes tr.proc').length")
                assert rows == min(200, args.ranks), rows
                searches.append(page.eval(SEARCH.format(f"rank {args.ranks - 1}")))
                assert page.eval("[...document.querySelectorAll('#processes tr.proc button')]"
                                 ".map(e => e.textContent)") == [f"rank {args.ranks - 1}"]
                assert b.console_errors == [], b.console_errors
        print(f"| html in Chromium | {args.ranks} ranks, {html.stat().st_size / 1e6:.2f} MB | "
              f"load event {statistics.median(loaded):.3f} s, interactive (first frame after load) "
              f"median {statistics.median(interactive):.3f} s (min {min(interactive):.3f}, max "
              f"{max(interactive):.3f}); wall with the DevTools round trips "
              f"{statistics.median(walls):.3f} s; a search {statistics.median(searches):.0f} ms | "
              f"{args.runs} runs |")


if __name__ == "__main__":
    main()
