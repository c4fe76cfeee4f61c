#!/usr/bin/env python3
"""A Python target whose names are markup: a function, a file, a thread name and a local that
would run script or load an image if a report put them into HTML as markup.

Why: the HTML report (issue 34) must show every target string as text. Each payload sets
window.__pwned when it runs, so a test can tell.

usage: py_hostile_html.py READY_FD
"""

import os
import sys
import threading
import time

FILE = '"><img src=x onerror="window.__pwned=1">.py'
FUNC = "<script>window.__pwned=2</script>"
THREAD = "</script><script>window.__pwned=3</script>"
LOCAL = "</script><script>window.__pwned=4</script>\u2028'\"&amp;"

SRC = "def wait(ready, payload):\n    os.write(ready, b'ready\\n')\n    time.sleep(3600)\n"


def main():
    ready = int(sys.argv[1])
    ns = {"os": os, "time": time}
    exec(compile(SRC, FILE, "exec"), ns)
    wait = ns["wait"]
    wait.__code__ = wait.__code__.replace(co_name=FUNC, co_qualname=FUNC)
    threading.current_thread().name = THREAD
    wait(ready, LOCAL)


if __name__ == "__main__":
    main()
