"""The measurement issue #33 asks for: 50 findings on real files whose quotes are right and
whose line numbers are wrong (tests/fixtures/perturbed/, made by make_perturbed.py), anchored
by line numbers alone (findings before quotes) and by quote. An anchor is right when the
finding is on lines ``true_start``..``true_end``."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path
from typing import Any

from deepseek_review.finding.anchor import Reviewed, anchor
from deepseek_review.finding.model import Anchored, Finding
from deepseek_review.finding.quote import split_lines

FIXTURE = Path(__file__).parents[1] / "fixtures" / "perturbed"
CASES: list[dict[str, Any]] = json.loads((FIXTURE / "findings.json").read_text(encoding="utf-8"))
SEEN = Reviewed({p.name: p.read_text(encoding="utf-8") for p in FIXTURE.glob("*.py.txt")}, {})


def anchored(*, quotes: bool) -> list[Anchored]:
    findings = [
        Finding(c["path"], c["start_line"], c["end_line"], "major", "correctness",
                f"case {i}", "m", quote=c["quote"])
        for i, c in enumerate(CASES)
    ]  # fmt: skip
    return anchor(findings, SEEN, "reviews/r.md", quotes=quotes)


def right(found: list[Anchored]) -> Counter[str]:
    """How many anchors are right, by kind of perturbation."""
    return Counter(
        c["kind"]
        for c, a in zip(CASES, found, strict=True)
        if a.anchored and a.lines == (c["true_start"], c["true_end"])
    )


def on_other_text(found: list[Anchored]) -> int:
    """Anchors on lines that do not hold the finding's quote: wrong, and nothing says so."""
    return sum(
        1
        for c, a in zip(CASES, found, strict=True)
        if a.anchored
        and [x.strip() for x in a.cited] != [x.strip() for x in split_lines(c["quote"])]
    )


def test_the_fixture_is_50_findings_with_wrong_lines_and_right_quotes():
    assert len(CASES) == 50
    assert Counter(c["kind"] for c in CASES) == {"off": 36, "off-near": 7, "other": 7}
    for c in CASES:
        lines = split_lines(SEEN.texts[c["path"]] or "")
        assert lines[c["true_start"] - 1 : c["true_end"]] == split_lines(c["quote"])
        assert c["start_line"] != c["true_start"]


def knowable(case: dict[str, Any]) -> bool:
    """Whether a finding's quote and claimed line say where it is, found by plain search of
    the file (not by the anchoring under test): the quote is in one place, or its one place
    nearest the claimed line is the true one."""
    lines = (SEEN.texts[case["path"]] or "").split("\n")
    quote = case["quote"].split("\n")
    found = [i + 1 for i in range(len(lines)) if lines[i : i + len(quote)] == quote]
    distance = {p: abs(p - case["start_line"]) for p in found}
    nearest = [p for p in found if distance[p] == min(distance.values())]
    return nearest == [case["true_start"]]


def test_quotes_anchor_right_every_finding_they_place_where_line_numbers_anchor_none():
    """The closing note's figure: right before (line numbers) and after (quotes), of 50."""
    before, after = right(anchored(quotes=False)), right(anchored(quotes=True))
    print(f"\nright before (line numbers): {before.total()}/50; after (quotes): {after.total()}/50")
    claimed_right = sum(
        (c["start_line"], c["end_line"]) == (c["true_start"], c["true_end"]) for c in CASES
    )
    assert before.total() == claimed_right
    assert after.total() == sum(map(knowable, CASES))
    assert after.total() > before.total()


def test_every_quote_found_once_or_nearest_its_place_is_anchored_right():
    placed = Counter(c["kind"] for c in CASES if c["kind"] in ("off", "off-near"))
    assert right(anchored(quotes=True)) == placed


def test_no_quote_anchors_a_finding_on_lines_that_do_not_hold_it():
    before, after = on_other_text(anchored(quotes=False)), on_other_text(anchored(quotes=True))
    print(f"\nanchored on other text: before {before}/50, after {after}/50")
    elsewhere = sum(
        (SEEN.texts[c["path"]] or "").split("\n")[c["start_line"] - 1 : c["end_line"]]
        != c["quote"].split("\n")
        for c in CASES
    )  # the claimed lines do not hold the quote
    assert (before, after) == (elsewhere, 0)
