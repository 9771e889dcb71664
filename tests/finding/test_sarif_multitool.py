"""Microsoft's SARIF Multitool, with its SARIF and GitHub rule sets, over the SARIF the tool
writes: no error and no warning, so GitHub's code scanning takes it as is (issue #33).

The Multitool is an npm package (`make sarif-multitool` installs it into .venv; .ci/run does,
and sets REQUIRE_SARIF_MULTITOOL so that CI never skips these tests).
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.support.findings import PROSE_END, answer_of, block, item, review_answering

ROOT = Path(__file__).resolve().parents[2]
MULTITOOL = (
    ROOT / ".venv" / "sarif-multitool" / "node_modules" / "@microsoft" / "sarif-multitool-linux"
) / "Sarif.Multitool"


@pytest.fixture
def multitool() -> Path:
    if MULTITOOL.exists():
        return MULTITOOL
    if os.environ.get("REQUIRE_SARIF_MULTITOOL"):
        pytest.fail(f"{MULTITOOL} is missing: run make sarif-multitool")
    pytest.skip("the SARIF Multitool is not installed (make sarif-multitool)")


def multitool_says(tool: Path, sarif: Path) -> list[str]:
    """Every error and warning of ``validate --rule-kind "Sarif;Gh"``, as ``level rule: text``."""
    out = sarif.with_suffix(".validation.sarif")
    done = subprocess.run(
        [str(tool), "validate", str(sarif), "--rule-kind", "Sarif;Gh", "--output", str(out),
         "--log", "ForceOverwrite"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "DOTNET_NOLOGO": "1"},
    )  # fmt: skip
    assert out.exists(), done.stdout + done.stderr
    log: dict[str, Any] = json.loads(out.read_text(encoding="utf-8-sig"))
    return [
        f"{r.get('level', 'warning')} {r['ruleId']}: {r['message'].get('text', r['message'])}"
        for run in log["runs"]
        for r in run.get("results", [])
        if r.get("level", "warning") in ("error", "warning")
    ]


def test_an_export_with_every_kind_of_location_passes_the_sarif_and_github_rules(
    repo: Path, cli: Any, make_stub: Any, multitool: Path
) -> None:
    findings = block(
        item(),  # on its lines
        item(
            quote="    return sum(xs) / len(xs)",
            category="style",
            suggestion="    return sum(xs) / len(xs) if xs else 0.0\n",
        ),
        item(quote="def mean(xs):", start_line=1, end_line=1, suggestion="", severity="nit"),
        item(start_line=40, end_line=41, severity="minor", category="edge cases"),  # the file
        item(path="src/elsewhere.py", severity="nit", category="docs"),  # the review
        item(title="50% off: a,b | c", message="line one\r\nline two: 100%", severity="critical"),
    )
    run = review_answering(cli, make_stub, [PROSE_END + findings])
    assert run.code == 0, run.err
    got = cli("findings", answer_of(run), "--format", "sarif", "-o", "review.sarif")
    assert got.code == 0, got.err
    log = json.loads((repo / "review.sarif").read_text(encoding="utf-8"))
    fixes = [
        r["fixes"][0]["description"]["text"] for r in log["runs"][0]["results"] if "fixes" in r
    ]
    assert sorted(fixes) == ["Delete lines 1-1", "Replace lines 2-2"]
    assert multitool_says(multitool, repo / "review.sarif") == []


def test_the_multitool_reports_a_rule_without_the_help_github_requires(
    repo: Path, cli: Any, make_stub: Any, multitool: Path
) -> None:
    """The check above can fail: the same export without a rule's help is an error."""
    run = review_answering(cli, make_stub, [PROSE_END + block(item())])
    assert cli("findings", answer_of(run), "--format", "sarif", "-o", "review.sarif").code == 0
    path = repo / "review.sarif"
    log = json.loads(path.read_text(encoding="utf-8"))
    del log["runs"][0]["tool"]["driver"]["rules"][0]["help"]
    path.write_text(json.dumps(log), encoding="utf-8")
    assert any(p.startswith("error GH") for p in multitool_says(multitool, path))
