"""Screenshot one result of an unzipped Snakemake report, shown inline as a reader clicking it sees it.

A manual check (not collected by pytest), e.g. that the report renders the claims table inline:
    snakemake --config grid=smoke results_dir=/tmp/smoke --report /tmp/smoke/report.zip
    (cd /tmp/smoke && unzip -o report.zip)
    python tests/report_screenshot.py /tmp/smoke/report claims.html /tmp/claims.png
Needs Debian's chromium (apt-get install chromium).

usage: python tests/report_screenshot.py REPORT_DIR RESULT_NAME OUT.png [WIDTHxHEIGHT]
(REPORT_DIR: the unzipped report/ folder with report.html; RESULT_NAME: e.g. claims.html)
"""

import json
import subprocess
import sys
from pathlib import Path

report, name, out = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
size = sys.argv[4] if len(sys.argv) > 4 else "1600,1000"
page = (report / "report.html").read_text()
inject = f"""<script>
window.addEventListener('load', () => setTimeout(() => {{
  const key = Object.keys(results).find(k => k.endsWith('/' + {json.dumps(name)}) || k === {json.dumps(name)});
  const r = results[key];
  app.setView({{navbarMode: 'resultinfo', content: 'html', contentPath: r.data_uri, resultPath: key}});
}}, 1000));
</script></body>"""
shot = report / f".shot_{name}.html"
i = page.rfind("</body>")
shot.write_text(page[:i] + inject + page[i + len("</body>") :] if i >= 0 else page + inject)
subprocess.run(
    [
        "chromium",
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--virtual-time-budget=8000",
        f"--window-size={size.replace('x', ',')}",
        f"--screenshot={out}",
        shot.as_uri(),
    ],
    check=True,
    capture_output=True,
)
shot.unlink()
print(out)
