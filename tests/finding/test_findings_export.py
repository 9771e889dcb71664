"""Exports: SARIF 2.1.0 and reviewdog's rdjson/rdjsonl validate against the shipped standards
(byte-identical to ../shared/standards and pinned); GitHub commands and Markdown escape."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from deepseek_review.finding.anchor import Reviewed, anchor
from deepseek_review.finding.derive import Collected, ReviewFindings
from deepseek_review.finding.export import render
from deepseek_review.finding.github import command, escape_data, escape_property
from deepseek_review.finding.markdown import to_markdown
from deepseek_review.finding.sarif import to_sarif
from tests.support.findings import (
    STANDARDS,
    assert_valid_findings_json,
    assert_valid_rdjson,
    assert_valid_rdjsonl,
    assert_valid_sarif,
    finding,
    sources_of,
)

SHARED = Path("/work/shared/standards")
PINNED = {
    "sarif-schema-2.1.0.json": "c3b4bb2d6093897483348925aaa73af03b3e3f4bd4ca38cef26dcb4212a2682e",
    "reviewdog-rdf/Code.json": "e63a0702e9de9fb386f2fbf6f093478136d18845da563b633676d3e28cdf8a52",
    "reviewdog-rdf/Diagnostic.json": (
        "5b0d267e0e1a3636ef12c9267418e72bfb251f22c67b837a582a0a9a1172b677"
    ),
    "reviewdog-rdf/DiagnosticResult.json": (
        "89b09042bc3f833f76c502ab793ee4fceba4bb75919498563b17f2be68569970"
    ),
    "reviewdog-rdf/Location.json": (
        "28103132ba3a7e499e1d8971437e3c520d2cdbe45bec71b22f82900881661cee"
    ),
    "reviewdog-rdf/Position.json": (
        "7b5059b85c613b370cbcfb062d771f8aa6f04d5d38c1b06545fcedc56ba5f837"
    ),
    "reviewdog-rdf/Range.json": "e9b4699329f8dc17f2474e994c2a256605fc9171704669418fe8d8368c96a5c7",
    "reviewdog-rdf/RelatedLocation.json": (
        "ccca5d7c98dc18d03b5950d9c53380f65eaded1711ab7e077c4348ee4971b5a3"
    ),
    "reviewdog-rdf/Source.json": (
        "0f6ed1e3e6e5cdff3dcb4321ab0706f92c63348a7ba227d85473280279cc8d95"
    ),
    "reviewdog-rdf/Suggestion.json": (
        "695d398da135cd5a75a4a216f7ece88c60b252bb3e8247a81a47441ad1e35f76"
    ),
}
MEAN = "def mean(xs):\n    return sum(xs) / len(xs)\n"


def collected() -> Collected:
    """One finding at each anchor level, one with a suggestion, one with hostile text."""
    found = [
        finding(
            quote="    return sum(xs) / len(xs)",
            suggestion="    return sum(xs) / len(xs) if xs else 0.0\n",
        ),
        finding(start_line=1, end_line=9, severity="minor", category="Edge cases"),
        finding(path="src/other.py", severity="nit", category="docs"),
        finding(
            severity="critical", title="50% off: a,b | c", message="line one\r\nline two: 100%"
        ),
    ]
    anchored = anchor(found, Reviewed({"src/pkg/mean.py": MEAN}, {}), "reviews/r.md")
    receipts = (
        {
            "receipt_path": "reviews/r.receipt.json",
            "answer_path": "reviews/r.md",
            "prompt_sha256": "sha256:ab",
            "answer_sha256": "sha256:cd",
            "model": "deepseek-v4-flash",
        },
    )
    sources = sources_of({"src/pkg/mean.py": MEAN})
    review = ReviewFindings("reviews/r.md", receipts, tuple(anchored), {}, sources)
    return Collected([review], anchored, [("reviews/bad.md", "no findings: none")])


@pytest.mark.parametrize("name", sorted(PINNED))
def test_shipped_standards_are_the_pinned_bytes(name):
    assert hashlib.sha256((STANDARDS / name).read_bytes()).hexdigest() == PINNED[name]


@pytest.mark.skipif(not SHARED.is_dir(), reason="../shared/standards is not on this machine")
@pytest.mark.parametrize("name", sorted(PINNED))
def test_shipped_standards_are_byte_identical_to_the_shared_copies(name):
    assert (STANDARDS / name).read_bytes() == (SHARED / name).read_bytes()


def test_sarif_export_validates_against_sarif_2_1_0():
    assert_valid_sarif(json.loads(render(collected(), "sarif")))


def test_sarif_levels_locations_fixes_and_fingerprints():
    log = to_sarif(collected())
    results = log["runs"][0]["results"]
    assert [r["level"] for r in results] == ["error", "warning", "note", "error"]
    regions = [r["locations"][0]["physicalLocation"].get("region") for r in results]
    assert regions[0] == {"startLine": 2, "endLine": 2}
    assert regions[1] is None and regions[2] is None  # demoted: no line, never a guessed one
    uris = [r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in results]
    assert uris[1:3] == ["src/pkg/mean.py", "reviews/r.md"]
    assert "fixes" in results[0] and "fixes" not in results[1]
    assert results[0]["partialFingerprints"] == {
        "deepseekReviewFinding/v1": collected().findings[0].fingerprint
    }
    assert log["runs"][0]["properties"]["receipts"][0]["prompt_sha256"] == "sha256:ab"


def test_rdjson_export_validates_against_reviewdogs_schema():
    doc = json.loads(render(collected(), "rdjson"))
    assert_valid_rdjson(doc)
    first = doc["diagnostics"][0]
    assert first["suggestions"] == [
        {
            "range": {"start": {"line": 2}, "end": {"line": 2}},
            "text": "    return sum(xs) / len(xs) if xs else 0.0",
        }
    ]


def test_rdjsonl_export_is_one_valid_diagnostic_per_line():
    text = render(collected(), "rdjsonl")
    assert_valid_rdjsonl(text)
    assert len(text.splitlines()) == 4


def test_github_data_escapes_percent_and_line_ends():
    assert escape_data("100%\r\nnext") == "100%25%0D%0Anext"


def test_github_properties_also_escape_colons_and_commas():
    assert escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A"


def test_github_command_for_a_hostile_title_stays_one_command():
    line = command(collected().findings[3])
    assert line == (
        "::error file=src/pkg/mean.py,line=2,endLine=2,"
        "title=[critical] 50%25 off%3A a%2Cb | c::line one%0D%0Aline two: 100%25"
    )


def test_github_command_for_a_demoted_finding_names_the_file_and_why():
    line = command(collected().findings[1])
    assert line.startswith("::warning file=src/pkg/mean.py,title=[minor] ")
    assert "(unanchored: src/pkg/mean.py has 2 lines; line 9 does not exist)" in line.replace(
        "%0A", "\n"
    )


def test_markdown_keeps_a_finding_in_its_table_row():
    text = to_markdown(collected())
    assert "**1** critical · **1** major · **1** minor · **1** nit" in text
    assert "| critical | src/pkg/mean.py:2 | **50% off: a,b \\| c** — line one line two:" in text
    assert "- ⚠ reviews/bad.md: no findings: none" in text


def test_the_json_export_validates_against_its_published_schema():
    assert_valid_findings_json(json.loads(render(collected(), "json")))


def test_every_sarif_rule_carries_the_full_description_and_help_github_requires():
    rules = to_sarif(collected())["runs"][0]["tool"]["driver"]["rules"]
    assert rules
    for rule in rules:
        assert rule["fullDescription"]["text"]
        assert rule["help"]["text"] and rule["help"]["markdown"]
        assert "deepseek-review verify" in rule["help"]["text"]


def test_a_finding_shown_on_its_whole_file_has_a_region_covering_the_file():
    found = anchor(
        [finding(start_line=30, end_line=31)], Reviewed({"src/pkg/mean.py": MEAN}, {}), "r.md"
    )
    review = ReviewFindings("r.md", (), tuple(found), {"src/pkg/mean.py": 2})
    (result,) = to_sarif(Collected([review], found, []))["runs"][0]["results"]
    assert result["properties"]["anchor"] == "file"
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 1, "endLine": 2}
