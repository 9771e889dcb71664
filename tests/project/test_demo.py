"""``make demo`` tells a short story and keeps the long outputs in files it names."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DEMO = Path(__file__).resolve().parents[2] / "scripts" / "demo.py"


def test_the_demo_prints_a_short_story_and_names_the_files_holding_the_rest(
    tmp_path: Path,
) -> None:
    done = subprocess.run(
        [sys.executable, str(DEMO), str(tmp_path / "demo")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) < 40, done.stdout
    assert "-> 3 segments (length, length, stop)" in done.stdout  # cut off, then continued
    assert "findings, asked for as JSON in one more request: reviews/window_stats-findings_" in (
        done.stdout
    )
    assert "4 receipts: 4 OK, 0 FAIL" in done.stdout  # the review's three, the extraction's
    transcript = tmp_path / "demo" / "transcript"
    for name in ("1-run.json", "2-verify.txt", "3-show.md", "4-summary.md"):
        assert str(transcript / name) in done.stdout or name in {"2-verify.txt"}
        assert (transcript / name).stat().st_size > 0
    assert (tmp_path / "demo" / "review.sarif").is_file()
