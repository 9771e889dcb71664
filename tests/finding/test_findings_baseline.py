"""``findings --baseline``: across two pushes of a real repository, each finding is new or
unchanged (by fingerprint: path, quoted code, category; not line numbers), the baseline's
findings gone now are listed as absent and never gated, and ``--only-new`` keeps (and gates)
the new ones, so a pull request is commented on once per problem, not once per push."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.findings import (
    PROSE_END,
    assert_valid_findings_json,
    assert_valid_rdjson,
    assert_valid_sarif,
    block,
    item,
    review_answering,
)
from tests.support.git import commit_change, git

MEAN = "def mean(xs):\n    return sum(xs) / len(xs)\n"
#: The second push: lines added above ``mean``, its signature changed.
PUSHED = "import math\n\n\ndef mean(xs: list[float]) -> float:\n    return sum(xs) / len(xs)\n"
DIVIDES = "    return sum(xs) / len(xs)"
FIXTURES = Path(__file__).parents[1] / "fixtures" / "findings"


def divides(line: int) -> dict[str, Any]:
    """The same problem on each push: division by zero, quoting the line that divides."""
    return item(start_line=line, end_line=line, quote=DIVIDES)


def untyped() -> dict[str, Any]:
    """Fixed by the second push."""
    return item(start_line=1, end_line=1, quote="def mean(xs):", severity="minor",
                category="style", title="No type hints")  # fmt: skip


def unused() -> dict[str, Any]:
    """Brought by the second push."""
    return item(start_line=1, end_line=1, quote="import math", severity="nit",
                category="style", title="Unused import")  # fmt: skip


def review(cli: Any, make_stub: Any, folder: str, *items: dict[str, Any]) -> str:
    """A code-review of src/pkg/mean.py into ``folder``, answering ``items``; its answer."""
    run = review_answering(cli, make_stub, [PROSE_END + block(*items)], "--output-dir", folder)
    assert run.code == 0, run.err
    return str(run.json()["segments"][-1]["answer_path"])


def first_push(repo: Path, cli: Any, make_stub: Any) -> str:
    answer = review(cli, make_stub, "push1", divides(2), untyped())
    commit_change(repo, "push 1 and its review")
    return answer


def second_push(repo: Path, cli: Any, make_stub: Any, *items: dict[str, Any]) -> str:
    (repo / "src" / "pkg" / "mean.py").write_text(PUSHED, encoding="utf-8")
    commit_change(repo, "push 2")
    return review(cli, make_stub, "push2", *(items or (divides(2), unused())))


def export(cli: Any, answer: str, fmt: str, *args: str) -> Any:
    got = cli("findings", answer, "--format", fmt, *args)
    assert got.code == 0, got.err
    return got


def states(findings: list[dict[str, Any]], key: str = "baseline") -> dict[str, str]:
    return {f["title"]: f[key] for f in findings}


@pytest.fixture
def pushes(repo: Path, cli: Any, make_stub: Any, tmp_path: Path) -> tuple[str, Path, Path]:
    """Two pushes, the first exported as SARIF and JSON (as a CI job keeps them): the second
    push's answer and the two exports."""
    first = first_push(repo, cli, make_stub)
    sarif, as_json = tmp_path / "push1.sarif", tmp_path / "push1.json"
    export(cli, first, "sarif", "-o", str(sarif))
    export(cli, first, "json", "-o", str(as_json))
    return second_push(repo, cli, make_stub), sarif, as_json


def test_a_sarif_baseline_marks_the_second_pushs_results_new_unchanged_and_absent(cli, pushes):
    answer, sarif, _ = pushes
    log = json.loads(export(cli, answer, "sarif", "--baseline", str(sarif)).out)
    assert_valid_sarif(log)
    got = {
        r["message"]["text"].split("\n")[0]: r["baselineState"] for r in log["runs"][0]["results"]
    }
    assert got == {
        "Division by zero on an empty list": "unchanged",
        "Unused import": "new",
        "No type hints": "absent",
    }


def test_the_unchanged_finding_is_anchored_where_its_quote_moved(cli, pushes):
    answer, sarif, _ = pushes
    log = json.loads(export(cli, answer, "sarif", "--baseline", str(sarif)).out)
    (kept,) = [r for r in log["runs"][0]["results"] if r["baselineState"] == "unchanged"]
    assert kept["locations"][0]["physicalLocation"]["region"] == {"startLine": 5, "endLine": 5}


def test_a_findings_json_baseline_marks_each_finding_and_lists_the_absent(cli, pushes):
    answer, _, as_json = pushes
    doc = export(cli, answer, "json", "--baseline", str(as_json)).json()
    assert_valid_findings_json(doc)
    assert states(doc["findings"]) == {
        "Division by zero on an empty list": "unchanged",
        "Unused import": "new",
    }
    assert states(doc["absent"]) == {"No type hints": "absent"}


def test_without_a_baseline_the_json_output_has_no_states(cli, pushes):
    answer, _, _ = pushes
    doc = export(cli, answer, "json").json()
    assert "absent" not in doc
    assert all("baseline" not in f for f in doc["findings"])


def test_a_version_1_findings_file_is_a_baseline_too(repo, cli, make_stub):
    # Written before quotes: its finding on line 2 of mean.py was fingerprinted from the
    # cited line, which is the quote of the same problem now.
    answer = review(cli, make_stub, "push1", divides(1))
    doc = export(cli, answer, "json", "--baseline", str(FIXTURES / "v1-findings.json")).json()
    assert states(doc["findings"]) == {"Division by zero on an empty list": "unchanged"}
    assert sorted(states(doc["absent"])) == ["Not a context file", "Past the end"]


def test_only_new_keeps_the_new_findings_and_the_gate_counts_only_them(cli, pushes):
    answer, sarif, _ = pushes
    args = ["--baseline", str(sarif), "--only-new", "--fail-on", "nit"]
    got = cli("findings", answer, "--format", "json", *args)
    assert got.code == 13
    assert states(got.json()["findings"]) == {"Unused import": "new"}
    assert "error: new findings at or above nit: 1 nit" in got.err


def test_only_new_passes_the_gate_when_every_finding_was_in_the_baseline(
    repo, cli, make_stub, tmp_path
):
    first = first_push(repo, cli, make_stub)
    export(cli, first, "sarif", "-o", str(tmp_path / "push1.sarif"))
    answer = second_push(repo, cli, make_stub, divides(2))
    args = ["--baseline", str(tmp_path / "push1.sarif"), "--only-new", "--fail-on", "nit"]
    got = cli("findings", answer, "--format", "github", *args)
    assert (got.code, got.out) == (0, "")


def test_absent_findings_are_listed_but_never_gated(repo, cli, make_stub, tmp_path):
    first = review(cli, make_stub, "push1", item(severity="critical", quote=DIVIDES))
    export(cli, first, "json", "-o", str(tmp_path / "push1.json"))
    answer = review(cli, make_stub, "push2", untyped())
    got = cli("findings", answer, "--baseline", str(tmp_path / "push1.json"), "--fail-on", "major")
    assert got.code == 0, got.err
    assert [f["severity"] for f in got.json()["absent"]] == ["critical"]


def test_github_annotations_with_only_new_are_written_once_per_problem_not_per_push(cli, pushes):
    answer, sarif, _ = pushes
    out = export(cli, answer, "github", "--baseline", str(sarif), "--only-new").out
    assert out.splitlines() == [
        "::notice file=src/pkg/mean.py,line=1,endLine=1,title=[nit] Unused import::"
        "len(xs) is 0 for []: raise a ValueError first."
    ]


def test_rdjson_with_only_new_holds_the_new_diagnostics_alone(cli, pushes):
    answer, sarif, _ = pushes
    doc = json.loads(export(cli, answer, "rdjson", "--baseline", str(sarif), "--only-new").out)
    assert_valid_rdjson(doc)
    assert [d["message"].split("\n")[0] for d in doc["diagnostics"]] == ["[nit] Unused import"]


def test_markdown_against_a_baseline_shows_each_state_and_the_absent(cli, pushes):
    answer, sarif, _ = pushes
    out = export(cli, answer, "markdown", "--baseline", str(sarif)).out
    assert "| Severity | Location | Finding | Baseline |" in out
    assert "Absent since the baseline (1):\n- minor: src/pkg/mean.py: No type hints" in out


def test_the_summary_says_how_many_are_new_unchanged_and_absent(cli, pushes):
    answer, sarif, _ = pushes
    got = export(cli, answer, "json", "--baseline", str(sarif))
    assert "against the baseline: 1 new, 1 unchanged, 1 absent" in got.err


# --------------------------------------------------------------------------- review folders


def test_a_review_folder_at_the_trusted_revision_is_a_baseline(repo, cli, make_stub):
    first_push(repo, cli, make_stub)  # the review of push 1 committed on main
    git(repo, "branch", "-m", "main")
    git(repo, "checkout", "-qb", "pr")
    answer = second_push(repo, cli, make_stub)
    got = cli("findings", answer, "--baseline", "push1", "--trusted-rev", "main")
    assert got.code == 0, got.err
    assert states(got.json()["findings"]) == {
        "Division by zero on an empty list": "unchanged",
        "Unused import": "new",
    }


def test_a_baseline_folder_the_change_committed_cannot_make_a_finding_look_old(
    repo, cli, make_stub
):
    commit_change(repo, "base")
    git(repo, "branch", "-m", "main")
    git(repo, "checkout", "-qb", "pr")
    # The pull request brings a "baseline" holding the very problem it introduces.
    review(cli, make_stub, "planted", divides(2))
    commit_change(repo, "a planted baseline")
    answer = review(cli, make_stub, "ci-review", divides(2))
    args = ["--baseline", "planted", "--only-new", "--fail-on", "major", "--trusted-rev", "main"]
    got = cli("findings", answer, "--format", "json", *args)
    assert got.code == 13
    assert states(got.json()["findings"]) == {"Division by zero on an empty list": "new"}


# --------------------------------------------------------------------------- bad input


def test_only_new_without_a_baseline_is_a_config_error(repo, cli, make_stub):
    answer = review(cli, make_stub, "push1", divides(2))
    got = cli("findings", answer, "--only-new")
    assert got.code == 2
    assert "--only-new needs --baseline" in got.err


@pytest.mark.parametrize(
    ("content", "said"),
    [('{"results": []}', "neither a SARIF log nor a findings file of deepseek-review"),
     ("not json", "not JSON"),
     ('{"schema": "deepseek_review_findings_v2", "findings": 3}',
      "does not match deepseek-review-findings-v2.schema.json")],
    ids=["other-json", "not-json", "a-findings-file-that-does-not-validate"],
)  # fmt: skip
def test_a_baseline_that_is_not_an_export_is_an_input_error_naming_it(
    repo, cli, make_stub, tmp_path, content, said
):
    answer = review(cli, make_stub, "push1", divides(2))
    bad = tmp_path / "old.json"
    bad.write_text(content, encoding="utf-8")
    got = cli("findings", answer, "--baseline", str(bad))
    assert got.code == 3
    assert f"--baseline {bad}" in got.err and said in got.err
    assert "Traceback" not in got.err


def test_a_missing_baseline_is_an_input_error_naming_it(repo, cli, make_stub, tmp_path):
    answer = review(cli, make_stub, "push1", divides(2))
    got = cli("findings", answer, "--baseline", str(tmp_path / "gone.sarif"))
    assert got.code == 3
    assert f"--baseline {tmp_path / 'gone.sarif'}: no such file or folder" in got.err


def test_a_baseline_folder_outside_the_repository_is_an_input_error_naming_the_flag(
    repo, cli, make_stub, tmp_path
):
    answer = review(cli, make_stub, "push1", divides(2))
    (tmp_path / "elsewhere").mkdir()
    got = cli("findings", answer, "--baseline", str(tmp_path / "elsewhere"))
    assert got.code == 3
    assert f"error: --baseline {tmp_path / 'elsewhere'}: outside" in got.err


def test_only_new_leaves_the_unchanged_findings_suggestions_out_of_the_patch(
    repo, cli, make_stub, tmp_path
):
    fixed = "    return sum(xs) / len(xs) if xs else 0.0\n"
    review(cli, make_stub, "push1", {**divides(2), "suggestion": fixed})
    commit_change(repo, "push 1 and its review")
    export(cli, "push1", "sarif", "-o", str(tmp_path / "push1.sarif"))
    answer = second_push(repo, cli, make_stub, {**divides(5), "suggestion": fixed},
                         {**unused(), "suggestion": ""})  # fmt: skip
    got = export(cli, answer, "patch", "--baseline", str(tmp_path / "push1.sarif"), "--only-new")
    assert "\n-import math\n" in got.out
    assert fixed not in got.out
    assert "against the baseline: 1 new, 1 unchanged, 0 absent (only the new ones kept)" in got.err
    assert "left out of the export on request: 1 unchanged since --baseline (--only-new)" in got.err


def test_only_new_says_in_the_export_how_many_unchanged_findings_it_left_out(cli, pushes):
    answer, sarif, _ = pushes
    doc = export(cli, answer, "json", "--baseline", str(sarif), "--only-new").json()
    assert_valid_findings_json(doc)
    assert doc["left_out"] == {"unchanged_in_baseline": 1}
