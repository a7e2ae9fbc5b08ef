"""Headless Chromium for the benchmark scripts: a plain `--screenshot` of a static page, and a screenshot of a web
app after it has drawn (Chrome DevTools Protocol over `--remote-debugging-pipe`: no extra package, no port).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars"]


def chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def screenshot(browser: str, url: str, png: Path, size=(1100, 900)) -> float:
    """Seconds of one headless Chromium screenshot of a static page (fresh profile; browser start included)."""
    with tempfile.TemporaryDirectory(prefix="report_shot_", ignore_cleanup_errors=True) as profile:
        t0 = time.perf_counter()
        subprocess.run([browser, *FLAGS, f"--user-data-dir={profile}", f"--screenshot={png}",
                        f"--window-size={size[0]},{size[1]}", url], capture_output=True, timeout=180)
        return time.perf_counter() - t0


def app_screenshot(browser: str, url: str, png: Path, ready: str, size=(1400, 900), timeout: float = 90.0) -> bool:
    """Open `url`, wait until the JavaScript expression `ready` is true (then one more second for the drawing),
    save a screenshot; returns whether `ready` became true."""
    to_r, to_w = os.pipe()
    from_r, from_w = os.pipe()

    def child_fds():  # the DevTools pipe: the browser reads fd 3, writes fd 4
        a, b = os.dup(to_r), os.dup(from_w)
        os.dup2(a, 3)
        os.dup2(b, 4)

    with tempfile.TemporaryDirectory(prefix="app_shot_", ignore_cleanup_errors=True) as profile:
        proc = subprocess.Popen([browser, *FLAGS, f"--user-data-dir={profile}", "--remote-debugging-pipe",
                                 f"--window-size={size[0]},{size[1]}", "about:blank"], pass_fds=(3, 4),
                                preexec_fn=child_fds, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_r)
        os.close(from_w)
        pending, counter = b"", [0]

        def call(method, params=None, session=None):
            nonlocal pending
            counter[0] += 1
            message = {"id": counter[0], "method": method, "params": params or {}}
            if session:
                message["sessionId"] = session
            os.write(to_w, json.dumps(message).encode() + b"\0")
            while True:
                while b"\0" not in pending:
                    chunk = os.read(from_r, 1 << 16)
                    if not chunk:
                        raise RuntimeError("the browser closed the DevTools pipe")
                    pending += chunk
                raw, pending = pending.split(b"\0", 1)
                reply = json.loads(raw)
                if reply.get("id") == counter[0]:
                    if "error" in reply:
                        raise RuntimeError(f"{method}: {reply['error']}")
                    return reply["result"]

        ok = False
        try:
            target = call("Target.createTarget", {"url": url})["targetId"]
            session = call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
            end = time.monotonic() + timeout
            while not ok and time.monotonic() < end:
                found = call("Runtime.evaluate", {"expression": ready, "returnByValue": True}, session)
                ok = bool(found.get("result", {}).get("value"))
                time.sleep(0.5)
            time.sleep(1.0)
            data = call("Page.captureScreenshot", {"format": "png"}, session)["data"]
            Path(png).write_bytes(base64.b64decode(data))
        finally:
            try:
                call("Browser.close")
            except (RuntimeError, OSError):
                proc.kill()
            proc.wait(timeout=30)
            os.close(to_w)
            os.close(from_r)
        return ok
