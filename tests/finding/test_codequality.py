"""``findings --format codequality``: GitLab's Code Quality report, checked against a schema of
the fields GitLab's documentation requires (tests/fixtures/gitlab-codequality.schema.json)."""

from __future__ import annotations

import json
from typing import Any

from deepseek_review.finding.anchor import Reviewed, anchor
from deepseek_review.finding.derive import Collected, ReviewFindings
from deepseek_review.finding.export import render
from tests.support.findings import (
    PROSE_END,
    assert_valid_codequality,
    block,
    finding,
    item,
    review_answering,
)

MEAN = "def mean(xs):\n    return sum(xs) / len(xs)\n"


def report(*found: Any, text: str = MEAN) -> list[dict[str, Any]]:
    anchored = anchor(list(found), Reviewed({"src/pkg/mean.py": text}, {}), "reviews/r.md")
    review = ReviewFindings("reviews/r.md", (), tuple(anchored))
    out: list[dict[str, Any]] = json.loads(render(Collected([review], anchored, []), "codequality"))
    return out


def test_report_has_every_field_gitlab_requires():
    doc = report(
        finding(),
        finding(start_line=1, end_line=9, severity="minor"),
        finding(path="src/other.py", severity="nit"),
        finding(path="/etc/passwd", severity="critical"),
    )
    assert len(doc) == 4
    assert_valid_codequality(doc)


def test_severities_map_to_gitlabs_scale():
    doc = report(*(finding(severity=s, title=s) for s in ("critical", "major", "minor", "nit")))
    assert [i["severity"] for i in doc] == ["critical", "major", "minor", "info"]


def test_an_anchored_finding_is_on_its_lines_under_its_rule():
    (issue,) = report(finding())
    assert issue["location"] == {"path": "src/pkg/mean.py", "lines": {"begin": 2, "end": 2}}
    assert issue["check_name"] == "deepseek-review/correctness"
    assert issue["description"].startswith("[major] Division by zero on an empty list: len(xs)")


def test_a_finding_on_its_file_is_on_line_1_saying_why():
    (issue,) = report(finding(start_line=1, end_line=9))
    assert issue["location"] == {"path": "src/pkg/mean.py", "lines": {"begin": 1}}
    assert issue["description"].endswith(
        "(Shown on line 1 of src/pkg/mean.py: src/pkg/mean.py has 2 lines; line 9 does not exist.)"
    )


def test_a_finding_outside_the_repository_is_on_the_review():
    (issue,) = report(finding(path="../../etc/passwd"))
    assert issue["location"]["path"] == "reviews/r.md"
    assert issue["location"]["lines"] == {"begin": 1}


def test_fingerprint_is_the_content_fingerprint_and_survives_moved_lines():
    (before,) = report(finding())
    (after,) = report(finding(start_line=4, end_line=4), text="\n\n" + MEAN)
    assert after["location"]["lines"]["begin"] == 4
    assert before["fingerprint"] == after["fingerprint"]
    assert len(before["fingerprint"]) == 64


def test_no_findings_is_an_empty_array():
    assert report() == []


def test_cli_writes_the_report_of_a_review(repo, cli, make_stub):
    answer = PROSE_END + block(item(), item(path="src/gone.py", title="Elsewhere"))
    run = review_answering(cli, make_stub, [answer])
    assert run.code == 0, run.err
    out = cli("findings", "--format", "codequality", "-o", "gl-code-quality-report.json")
    assert out.code == 0, out.err
    raw = (repo / "gl-code-quality-report.json").read_bytes()
    assert not raw.startswith(b"\xef\xbb\xbf")  # GitLab's parser refuses a byte order mark
    doc = json.loads(raw)
    assert_valid_codequality(doc)
    assert [i["location"]["path"] for i in doc] == [
        "src/pkg/mean.py",
        run.json()["segments"][-1]["answer_path"],
    ]
