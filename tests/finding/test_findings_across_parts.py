"""Findings of a split review: each part's anchored in its own files and ranges, and the
folder's merged with the synthesis's without a problem reported twice."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.finding.derive import ReviewFindings, merge
from deepseek_review.finding.model import Anchored
from deepseek_review.testing.simulator.server import Simulator
from tests.support.cli import CliResult
from tests.support.findings import assert_valid_findings_json, finding
from tests.support.split import split_records, words, write_texts

WINDOW = 8192


@pytest.fixture
def sim(make_simulator: Callable[..., Simulator]) -> Simulator:
    return make_simulator(context_window=WINDOW, context_overflow="refuse", answer_words=60)


def _split(cli: Callable[..., CliResult], sim: Simulator, *context: str) -> dict[str, Any]:
    args = [a for c in context for a in ("-c", c)]
    r = cli(
        "run", "--split", *args, "-p", "Review the code.", "--endpoint", sim.base_url,
        "--max-tokens", "1024", "--context-window", str(WINDOW), "--findings",
        "--template", "code-review",
    )  # fmt: skip
    assert r.code == 0, r.err
    (record,) = split_records(Path("reviews"))
    return record


def _findings(cli: Callable[..., CliResult], *paths: str) -> list[dict[str, Any]]:
    r = cli("findings", *paths, "--format", "json")
    assert r.code == 0, r.err
    assert_valid_findings_json(json.loads(r.out))
    found: list[dict[str, Any]] = json.loads(r.out)["findings"]
    return found


def test_each_part_anchors_its_findings_in_its_own_files(repo, cli, sim):
    write_texts(repo, [f"big/{d}/mod{i}.py" for d in "abc" for i in range(4)], 4600)
    record = _split(cli, sim, "big")
    for part in record["parts"]:
        (found,) = _findings(cli, part["answers"][-1])
        assert found["anchor"] == "line"
        assert found["path"] in [f["path"] for f in part["files"]]


def test_a_finding_of_a_part_that_reviewed_a_range_anchors_inside_that_range(repo, cli, sim):
    (repo / "big.py").write_text(words(0, 60_000), encoding="utf-8")
    record = _split(cli, sim, "big.py")
    later = record["parts"][1]
    (ranged,) = later["files"]
    first, _ = ranged["lines"]
    assert first > 1
    (found,) = _findings(cli, later["answers"][-1])
    assert found["anchor"] == "line"
    assert found["lines"] == {"start": first, "end": first}  # its quote: the range's first line


def test_the_folder_reports_each_problem_once_with_the_reviews_that_reported_it(repo, cli, sim):
    write_texts(repo, [f"big/{d}/mod{i}.py" for d in "abc" for i in range(4)], 4600)
    record = _split(cli, sim, "big")
    found = _findings(cli, "reviews")
    synthesis = record["synthesis"]["answers"][-1]
    assert len(found) == len(record["parts"])  # the synthesis restated each, not added
    for f, part in zip(
        sorted(found, key=lambda f: f["path"]),
        sorted(record["parts"], key=lambda p: p["files"][0]["path"]),
        strict=True,
    ):
        assert f["anchor"] == "line"  # the part's place, not the synthesis's unanchored one
        assert f["reported_by"] == [part["answers"][-1], synthesis]


def test_the_synthesis_alone_shows_the_problems_it_restates_on_itself(repo, cli, sim):
    write_texts(repo, [f"big/{d}/mod{i}.py" for d in "abc" for i in range(4)], 4600)
    record = _split(cli, sim, "big")
    found = _findings(cli, record["synthesis"]["answers"][-1])
    assert len(found) == len(record["parts"])
    assert {f["anchor"] for f in found} == {"review"}
    assert all("reported_by" not in f for f in found)


def _reviewed(answer: str, a: Anchored) -> ReviewFindings:
    return ReviewFindings(answer, (), (a,))


def test_of_one_problem_the_one_on_its_lines_is_kept_at_the_most_severe_severity():
    part = Anchored(
        finding(severity="minor", quote="x = 1"), "line", "", ("x = 1",), "a" * 64,
        "reviews/p1.md", (3, 3), "exact",
    )  # fmt: skip
    restated = Anchored(
        finding(severity="critical", quote="x  =  1\n"), "review", "not reviewed here", (),
        "b" * 64, "reviews/s.md",
    )  # fmt: skip
    (kept,) = merge([_reviewed("reviews/p1.md", part), _reviewed("reviews/s.md", restated)])
    assert (kept.level, kept.lines, kept.finding.severity) == ("line", (3, 3), "critical")
    assert kept.reported_by == ("reviews/p1.md", "reviews/s.md")


def test_findings_of_one_path_and_category_quoting_different_lines_stay_two():
    one = Anchored(finding(quote="x = 1"), "review", "r", (), "a" * 64, "reviews/p1.md")
    two = Anchored(finding(quote="y = 2"), "review", "r", (), "b" * 64, "reviews/s.md")
    merged = merge([_reviewed("reviews/p1.md", one), _reviewed("reviews/s.md", two)])
    assert len(merged) == 2 and all(not a.reported_by for a in merged)
