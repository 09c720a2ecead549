"""Measure HTML pages as headless Chromium lays them out: scrollWidth and scrollHeight at a
given window width (every table page <= 1000 px wide at 1000 px, claims pages under
8,000 px tall).

Used by tests/workflow/test_report_layout.py (skipped where no Chromium is installed: Debian's
``apt-get install chromium``) and by hand:
    python tests/report_layout.py 1000 results/tables/*.html results/claims/*.html
prints "width height widest-table path" per page. No browser automation package is needed: a copy of each
page gets a script that writes its size into the document title, and ``chromium --dump-dom``
prints the document after its scripts ran.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PROBE = (
    "<script>window.addEventListener('load', () => { const t = [...document.querySelectorAll('table')]"
    ".map(e => e.scrollWidth); document.title = 'SIZE ' + document.documentElement.scrollWidth + ' ' + "
    "document.documentElement.scrollHeight + ' ' + Math.max(0, ...t); });</script>"
)


def chromium() -> str | None:
    """The Chromium executable on PATH, if any."""
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        found = shutil.which(name)
        if found:
            return found
    return None


def measure(page: Path, width: int = 1000, height: int = 800, timeout: float = 60) -> tuple[int, int, int]:
    """(scrollWidth, scrollHeight, widest table) of ``page`` in a ``width`` x ``height`` window:
    the widest table's own width, since a table too wide scrolls inside its box (the page does not)."""
    exe = chromium()
    if exe is None:
        raise RuntimeError("no chromium on PATH (Debian: apt-get install chromium)")
    text = page.read_text(encoding="utf-8")
    i = text.rfind("</body>")
    probed = text[:i] + PROBE + text[i:] if i >= 0 else text + PROBE
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / page.name
        copy.write_text(probed, encoding="utf-8")
        proc = subprocess.run(
            [
                exe,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                f"--user-data-dir={tmp}/profile",
                "--virtual-time-budget=3000",
                f"--window-size={width},{height}",
                "--dump-dom",
                copy.as_uri(),
            ],
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    found = re.search(r"<title>SIZE (\d+) (\d+) (\d+)</title>", proc.stdout)
    if not found:
        raise RuntimeError(f"{page}: chromium gave no size (rc {proc.returncode}): {proc.stderr[-500:]}")
    return int(found.group(1)), int(found.group(2)), int(found.group(3))


if __name__ == "__main__":
    px = int(sys.argv[1])
    for name in sys.argv[2:]:
        w, h, t = measure(Path(name), px)
        print(w, h, t, name, flush=True)
