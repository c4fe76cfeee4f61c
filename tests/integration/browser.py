"""A headless Chromium driven through its own DevTools pipe (no network, no npm, no websocket).

Why: the HTML report must be checked where people look at it, in a real browser: what is
visible, what a click shows, that nothing is fetched and nothing fails. Debian's chromium speaks
the DevTools protocol over two file descriptors with --remote-debugging-pipe (commands on fd 3,
answers on fd 4, each message JSON ending in a NUL byte); this module is that protocol's client.

  with Browser(tmp_path) as b:
      page = b.open("file:///...")          # waits for the load event
      page.eval("document.title")            # a value, or AssertionError on an exception
      page.screenshot(path)                  # PNG
      b.requests / b.console_errors          # everything the page asked for / reported
"""

import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import time

import pytest

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--remote-debugging-pipe", "--window-size=1400,1000"]


def chromium():
    path = shutil.which("chromium")
    if path is None:
        pytest.skip("chromium is not installed (tools/deps.sh test installs it)")
    return path


def _above_4(fd):
    high = fcntl.fcntl(fd, fcntl.F_DUPFD, 10)
    os.close(fd)
    return high


class Browser:
    def __init__(self, tmpdir, timeout=30.0):
        self.timeout = timeout
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        # Above 4: a pipe end that is fd 3 or 4 here would be closed by the redirections below
        # right after they made it the browser's fd 3 or 4 (so it is, in a process with few files).
        to_chrome_r, from_chrome_w = (_above_4(fd) for fd in (to_chrome_r, from_chrome_w))
        argv = [chromium(), *FLAGS, f"--user-data-dir={tmpdir}/chromium-profile", "about:blank"]
        # fd 3: commands in, fd 4: answers out (what --remote-debugging-pipe expects).
        shell = f'exec "$@" 3<&{to_chrome_r} 4>&{from_chrome_w} {to_chrome_r}<&- {from_chrome_w}>&-'
        self.proc = subprocess.Popen(["bash", "-c", shell, "chromium", *argv],
                                     pass_fds=(to_chrome_r, from_chrome_w),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, start_new_session=True)
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._id = 0
        self.events = []
        self.requests = []
        self.console_errors = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        try:
            self.call("Browser.close")
        except Exception:  # noqa: BLE001 - the browser may be gone already
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()
        for fd in (self._to_chrome, self._from_chrome):
            try:
                os.close(fd)
            except OSError:
                pass

    def _read_message(self, deadline):
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError("chromium did not answer in time")
            ready, _, _ = select.select([self._from_chrome], [], [], left)
            if ready:
                chunk = os.read(self._from_chrome, 1 << 20)
                if not chunk:
                    raise AssertionError("chromium closed its DevTools pipe")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def _note(self, msg):
        self.events.append(msg)
        method = msg.get("method")
        params = msg.get("params", {})
        if method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])
        elif method == "Runtime.exceptionThrown":
            self.console_errors.append(params["exceptionDetails"].get("text", "exception"))
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.console_errors.append(" ".join(str(a.get("value")) for a in params.get("args", [])))
        elif method == "Log.entryAdded" and params["entry"].get("level") == "error":
            self.console_errors.append(params["entry"].get("text", ""))

    def call(self, method, params=None, session=None):
        self._id += 1
        msg = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while True:
            answer = self._read_message(deadline)
            if answer.get("id") == self._id:
                if "error" in answer:
                    raise AssertionError(f"{method}: {answer['error']}")
                return answer.get("result", {})
            self._note(answer)

    def wait_event(self, method, deadline, session=None):
        """The next `method` event (of `session`, when given: another page's load is not ours)."""
        def ours(e):
            return e.get("method") == method and (session is None or e.get("sessionId") == session)
        for i, e in enumerate(self.events):
            if ours(e):
                return self.events.pop(i)
        while True:
            msg = self._read_message(deadline)
            self._note(msg)
            if ours(msg):
                self.events.remove(msg)
                return msg

    def open(self, url):
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.call(f"{domain}.enable", session=session)
        # Only the load that follows our navigation: about:blank's own load may come late.
        self.events = [e for e in self.events if e.get("sessionId") != session]
        self.call("Page.navigate", {"url": url}, session=session)
        deadline = time.monotonic() + self.timeout
        while True:
            self.wait_event("Page.loadEventFired", deadline, session)
            if page.eval("location.href !== 'about:blank' && document.readyState === 'complete'"):
                break
        return page


class Page:
    def __init__(self, browser, session):
        self.browser = browser
        self.session = session

    def eval(self, expression):
        r = self.browser.call("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                   "awaitPromise": True}, session=self.session)
        if "exceptionDetails" in r:
            raise AssertionError(f"{expression}: {r['exceptionDetails']}")
        return r["result"].get("value")

    def screenshot(self, path):
        r = self.browser.call("Page.captureScreenshot", {"format": "png"}, session=self.session)
        with open(path, "wb") as f:
            f.write(base64.b64decode(r["data"]))
