"""Re-draws docs/img/report-default.png: the top of `vmsim report` for the default run,
as headless chromium shows it (`make browser` installs it).

    python scripts/report_screenshot.py
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from vmsim import api, atomic, report

ROOT = Path(__file__).resolve().parent.parent
OUT = ROOT / "docs" / "img" / "report-default.png"


def main() -> int:
    chromium = shutil.which("chromium")
    if chromium is None:
        print("no chromium: make browser installs it", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        run.mkdir()
        atomic.write_text(run / "result.json", api.run().json_text)
        page = Path(tmp) / "report.html"
        report.write_report([run], page)
        shot = Path(tmp) / "shot.png"
        subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--hide-scrollbars",
                "--window-size=1200,1900",
                "--virtual-time-budget=20000",
                f"--screenshot={shot}",
                page.as_uri(),
            ],
            check=True,
            capture_output=True,
            stdin=subprocess.DEVNULL,
        )
        atomic.copy_file(shot, OUT)
    print(f"wrote {OUT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
