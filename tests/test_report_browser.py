"""`vmsim report` pages opened in a real browser: Debian's chromium, headless
(`make browser` installs it; without it these tests skip, saying why).

Chromium runs the page offline with a virtual-time budget, dumps the DOM after the
scripts ran, prints the page's console messages on stderr (--enable-logging), and
takes a screenshot. Every figure must have been drawn by plotly.js (an SVG with
marks in it), the tables' text must be there, the console must be silent, and the
screenshot must not be blank.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from vmsim import report

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="no chromium (make browser installs Debian's package)"
)
#: Simulated milliseconds the page may run its scripts before the DOM is dumped.
VIRTUAL_TIME_MS = 20_000
_CONSOLE = re.compile(r":CONSOLE[:(]\d+\)?\] (.*)")


def chromium(page: Path, *args: str, size: str = "1200,2400") -> subprocess.CompletedProcess:
    """Runs headless chromium on ``page`` with ``args`` (--dump-dom, --screenshot=…)."""
    assert CHROMIUM is not None
    return subprocess.run(
        [
            CHROMIUM,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--hide-scrollbars",
            "--enable-logging=stderr",
            "--v=0",
            f"--window-size={size}",
            f"--virtual-time-budget={VIRTUAL_TIME_MS}",
            *args,
            page.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        errors="replace",
        timeout=180,
        stdin=subprocess.DEVNULL,
    )


def console_messages(stderr: str) -> list[str]:
    """The page's console messages in chromium's log."""
    return [m.group(1) for m in _CONSOLE.finditer(stderr)]


def rendered(dom: str) -> tuple[list[str], list[int]]:
    """Each plot div's data-rendered state, and the marks (paths, rects, images) in the
    SVG plotly.js drew into it."""
    states, marks = [], []
    for part in re.split(r'<div class="plot[^"]*" id="plot-\d+"', dom)[1:]:
        state = re.match(r'[^>]*data-rendered="([^"]*)"', part)
        states.append(state.group(1) if state else "missing")
        svgs = re.findall(r'<svg class="main-svg".*?</svg>', part, re.S)
        marks.append(sum(len(re.findall(r"<(?:path|rect|image)\b", s)) for s in svgs))
    return states, marks


def nonblank_fraction(png: Path) -> float:
    """The fraction of a screenshot's pixels that are not white."""
    import matplotlib.image as mpimg
    import numpy as np

    img = mpimg.imread(png)[..., :3]
    return float(np.mean(np.any(img < 0.95, axis=-1)))


@pytest.fixture(scope="module")
def run_page(tmp_path_factory, small_scenario, cli) -> Path:
    """The report of the small scenario's run."""
    d = tmp_path_factory.mktemp("browser")
    p = cli("run", small_scenario, "--output-dir", d / "run")
    assert p.returncode == 0, p.stderr
    report.write_report([d / "run"], d / "report.html")
    return d / "report.html"


def test_the_console_check_sees_an_error(tmp_path):
    # The check below is only worth something if a broken page is caught.
    page = tmp_path / "broken.html"
    page.write_text("<html><body><script>console.error('x'); nosuchfunction();</script>")
    p = chromium(page, "--dump-dom")
    msgs = console_messages(p.stderr)
    assert any("nosuchfunction is not defined" in m for m in msgs), p.stderr[-2000:]


def test_every_figure_of_a_run_is_drawn_and_the_console_is_silent(run_page):
    p = chromium(run_page, "--dump-dom")
    assert p.returncode == 0, p.stderr[-2000:]
    dom = p.stdout
    assert 'data-rendered="all"' in dom.split("<body", 1)[1][:200]
    states, marks = rendered(dom)
    figures = run_page.read_text().count('data-figure="fig-')
    assert figures == 4 and len(states) == figures
    assert states == ["yes"] * figures, states
    assert all(n > 10 for n in marks), marks
    for text in ("extfrag_events", "Amean", "/proc/buddyinfo at the end", "nr_free_pages"):
        assert text in dom
    assert console_messages(p.stderr) == []


def colour_pixels(png: Path, hex_colour: str, tolerance: float = 0.06) -> int:
    """The pixels of a screenshot within ``tolerance`` of a colour (``#rrggbb``)."""
    import matplotlib.image as mpimg
    import numpy as np

    img = mpimg.imread(png)[..., :3]
    rgb = np.array([int(hex_colour[i : i + 2], 16) / 255 for i in (1, 3, 5)])
    return int(np.sum(np.all(np.abs(img - rgb) < tolerance, axis=-1)))


def test_a_screenshot_of_the_report_is_not_blank(run_page, tmp_path):
    shot = tmp_path / "shot.png"
    p = chromium(run_page, f"--screenshot={shot}", size="1200,1800")
    assert p.returncode == 0 and shot.is_file(), p.stderr[-2000:]
    assert nonblank_fraction(shot) > 0.02
    # The watermarks' lines are drawn in their colours.
    for colour in report.WM_COLOURS.values():
        assert colour_pixels(shot, colour) > 200, colour


def test_the_report_prints_on_several_pages(run_page, tmp_path):
    pdf = tmp_path / "report.pdf"
    p = chromium(run_page, "--no-pdf-header-footer", f"--print-to-pdf={pdf}")
    assert p.returncode == 0 and pdf.is_file(), p.stderr[-2000:]
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF")
    # Four figures of 420-560 px kept whole (break-inside: avoid) need four A4/Letter pages.
    assert len(re.findall(rb"/Type /Page\b", data)) >= 4


def test_a_blank_page_reads_as_blank(tmp_path):
    page = tmp_path / "blank.html"
    page.write_text("<html><body></body></html>")
    shot = tmp_path / "blank.png"
    chromium(page, f"--screenshot={shot}", size="800,600")
    assert nonblank_fraction(shot) < 0.001
    assert colour_pixels(shot, report.WM_COLOURS["min"]) == 0


def test_a_reproduction_page_is_drawn(tmp_path, cli):
    d = tmp_path / "repro"
    p = cli("reproduce", "throttle", "--runs", "2", "--scale", "0.05", "--output-dir", d)
    assert p.returncode == 0, p.stderr
    b = chromium(d / "report.html", "--dump-dom")
    states, marks = rendered(b.stdout)
    assert states and states == ["yes"] * len(states), states
    assert all(n > 10 for n in marks), marks
    assert "Claims of the seed and their verdicts" in b.stdout
    assert console_messages(b.stderr) == []
