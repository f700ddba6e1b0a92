"""The report in a real browser: headless Chromium loads it from disk, with the network off.

Two launches: --dump-dom gives the page as Chromium parsed it (every section, the numbers
of the Parquet outputs); --screenshot shows that it renders, figures included.
`make test` installs Chromium (Debian package `chromium`) where it can; elsewhere this test
is skipped and says why.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pipeline.report.build import SECTIONS
from tests.helpers.outputs import Page, check_numbers, make_outputs

BROWSER = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(
    BROWSER is None,
    reason="no chromium on PATH: `make test` installs it with apt-get when run as root on Debian; "
    "otherwise install the `chromium` package to run this test",
)


def chromium(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    command = [
        str(BROWSER),
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        *args,
    ]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


def test_report_in_chromium(tmp_path: Path) -> None:
    from matplotlib import image

    from pipeline.report import build_report

    outputs = make_outputs(tmp_path)
    html_path = tmp_path / "report.html"
    build_report([str(outputs[n]) for n in ("model_a", "model_b", "cmp")], html_path=html_path)
    url = html_path.resolve().as_uri()

    dumped = chromium(tmp_path, "--dump-dom", url)
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    page = Page(dumped.stdout)
    assert page.sections == [slug for slug, _ in SECTIONS], "a section is missing from the rendered page"
    assert len(page.images) == 4 and page.external == []
    check_numbers(page, outputs)

    screenshot = tmp_path / "report.png"
    shot = chromium(tmp_path, "--window-size=1200,2000", f"--screenshot={screenshot}", url)
    assert shot.returncode == 0 and screenshot.exists(), shot.stderr[-2000:]
    pixels = image.imread(screenshot)
    colors = {tuple(p) for p in pixels.reshape(-1, pixels.shape[-1])[::97].round(2).tolist()}
    assert len(colors) > 20, "the screenshot is nearly blank: the page or its figures did not render"
