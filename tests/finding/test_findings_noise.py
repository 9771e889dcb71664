"""``findings --min-severity`` / ``--max-findings``: less noise in what is shown, never in
what gates, and never dropped without saying so (issue #33, item 4)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.findings import (
    PROSE_END,
    answer_of,
    assert_valid_findings_json,
    assert_valid_sarif,
    block,
    item,
    review_answering,
)

#: One finding of each severity, two of them in the same category.
MIXED = block(
    item(severity="critical", category="correctness", title="Crash on []"),
    item(severity="major", category="correctness", title="Wrong mean", start_line=1, end_line=1),
    item(severity="minor", category="style", title="Name", start_line=1, end_line=2),
    item(severity="nit", category="docs", title="Docstring", start_line=2, end_line=2),
)


def mixed_review(cli: Any, make_stub: Any) -> str:
    run = review_answering(cli, make_stub, [PROSE_END + MIXED])
    assert run.code == 0, run.err
    return answer_of(run)


def test_min_severity_leaves_the_lower_findings_out_and_says_how_many(
    repo: Any, cli: Any, make_stub: Any
) -> None:
    got = cli("findings", mixed_review(cli, make_stub), "--min-severity", "major")
    assert got.code == 0, got.err
    doc = got.json()
    assert [f["severity"] for f in doc["findings"]] == ["critical", "major"]
    assert doc["left_out"] == {"below_min_severity": 2}
    assert "left out of the export on request: 2 below --min-severity" in got.err
    assert_valid_findings_json(doc)


def test_max_findings_keeps_the_most_severe_and_says_how_many_were_left_out(
    repo: Any, cli: Any, make_stub: Any
) -> None:
    got = cli("findings", mixed_review(cli, make_stub), "--max-findings", "1")
    assert got.code == 0, got.err
    doc = got.json()
    assert [f["title"] for f in doc["findings"]] == ["Crash on []"]
    assert doc["left_out"] == {"over_max_findings": 3}
    assert_valid_findings_json(doc)


def test_a_finding_left_out_of_the_export_still_fails_the_gate(
    repo: Any, cli: Any, make_stub: Any
) -> None:
    answer = mixed_review(cli, make_stub)
    got = cli("findings", answer, "--min-severity", "critical", "--max-findings", "1",
              "--fail-on", "minor")  # fmt: skip
    assert got.code == 13
    assert "findings at or above minor: 1 critical, 1 major, 1 minor" in got.err


def test_the_summary_counts_findings_by_category(repo: Any, cli: Any, make_stub: Any) -> None:
    got = cli("findings", mixed_review(cli, make_stub))
    assert got.code == 0, got.err
    assert "(by category: correctness 2, docs 1, style 1)" in got.err


def test_markdown_and_sarif_say_what_was_left_out(repo: Any, cli: Any, make_stub: Any) -> None:
    answer = mixed_review(cli, make_stub)
    md = cli("findings", answer, "--format", "markdown", "--max-findings", "2")
    assert md.code == 0, md.err
    assert "Left out on request: 2 over --max-findings." in md.out
    assert "By category: correctness 2" in md.out
    sarif = cli("findings", answer, "--format", "sarif", "--min-severity", "minor")
    log = json.loads(sarif.out)
    assert_valid_sarif(log)
    assert log["runs"][0]["properties"]["leftOut"] == {"below_min_severity": 1}
    assert len(log["runs"][0]["results"]) == 3


def test_without_either_option_nothing_is_left_out(repo: Any, cli: Any, make_stub: Any) -> None:
    doc = cli("findings", mixed_review(cli, make_stub)).json()
    assert len(doc["findings"]) == 4
    assert "left_out" not in doc


def test_bad_limits_are_refused_on_one_line_naming_the_option(
    repo: Any, cli: Any, make_stub: Any
) -> None:
    answer = mixed_review(cli, make_stub)
    for args, named in (
        (("--max-findings", "0"), "--max-findings"),
        (("--min-severity", "huge"), "--min-severity"),
    ):
        got = cli("findings", answer, *args)
        assert got.code == 2, got.err
        assert named in got.err
        assert "Traceback" not in got.err


def test_the_library_refuses_a_bad_limit_naming_its_keyword(repo: Any) -> None:
    from deepseek_review import api
    from deepseek_review.errors import ConfigError

    with pytest.raises(ConfigError, match="max_findings 0"):
        api.findings(repo_root=repo, max_findings=0)
    with pytest.raises(ConfigError, match="min_severity 'huge'"):
        api.findings(repo_root=repo, min_severity="huge")


@pytest.mark.parametrize("template", ["code-review", "diff-review", "spec-review"])
def test_the_templates_asking_for_findings_say_what_each_severity_means(template: str) -> None:
    from deepseek_review.util.resources import prompts_dir

    text = " ".join((prompts_dir() / f"{template}.md").read_text(encoding="utf-8").split())
    assert "Report only what a maintainer would act on" in text
    for severity, meaning in (
        ("critical", "breaks correctness, data or security in normal use"),
        ("major", "wrong in a case users will meet"),
        ("minor", "a real defect of small reach"),
        ("nit", "changes no behaviour"),
    ):
        assert f"`{severity}` " in text and meaning in text
    assert "at most three nits" in text
