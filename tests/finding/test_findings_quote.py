"""Anchors found by quote: a finding that quotes its lines is anchored where the quote is in
the reviewed version, whatever line numbers the model wrote; a quote found nowhere leaves it on
its file without lines, saying so; matching is exact, then tolerant of each line's leading and
trailing whitespace (and CRLF), never fuzzier."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.errors import InputError
from deepseek_review.finding.anchor import Reviewed, anchor
from deepseek_review.finding.sidecar import counts_beside, sidecar_bytes
from tests.support.findings import (
    FROM_BLOCK,
    PROSE_END,
    assert_valid_findings_json,
    block,
    chat_reply,
    diff_review,
    finding,
    findings_of,
    item,
    last_segment,
    review_answering,
    two_commits,
)

PATH = "src/pkg/code.py"
#: A file where ``return total`` is on lines 4 and 9.
CODE = (
    "def a(xs):\n"  # 1
    "    total = 0\n"  # 2
    "    for x in xs: total += x\n"  # 3
    "    return total\n"  # 4
    "\n"  # 5
    "def b(xs):\n"  # 6
    "    total = 1\n"  # 7
    "    for x in xs: total *= x\n"  # 8
    "    return total\n"  # 9
)
REVIEW = "reviews/r.md"
FIXTURES = Path(__file__).parents[1] / "fixtures" / "findings"


def place(quote: str | None, line: int = 1, end: int | None = None, text: str = CODE) -> Any:
    """The one finding, quoting ``quote`` and claiming ``line``..``end``, anchored in ``text``."""
    over: dict[str, Any] = {"path": PATH, "start_line": line, "end_line": end or line}
    if quote is not None:
        over["quote"] = quote
    (a,) = anchor([finding(**over)], Reviewed({PATH: text}, {}), REVIEW)
    return a


def test_a_quote_corrects_wrong_line_numbers():
    a = place("    for x in xs: total *= x", line=2)
    assert (a.level, a.lines, a.quote_match, a.reason) == ("line", (8, 8), "exact", "")
    assert a.cited == ("    for x in xs: total *= x",)
    assert (a.finding.start_line, a.finding.end_line) == (2, 2)  # what the model wrote, kept


def test_a_quote_of_several_lines_is_anchored_on_all_of_them():
    a = place("def b(xs):\n    total = 1\n    for x in xs: total *= x\n", line=30, end=31)
    assert (a.lines, a.quote_match) == ((6, 8), "exact")


@pytest.mark.parametrize(
    ("claimed", "anchored"),
    [(3, (4, 4)), (5, (4, 4)), (8, (9, 9)), (20, (9, 9)), (1, (4, 4)), (9, (9, 9))],
)
def test_a_quote_found_twice_takes_the_occurrence_nearest_the_models_line(claimed, anchored):
    assert place("    return total", line=claimed).lines == anchored


def test_a_quote_found_twice_at_equal_distance_takes_the_earlier():
    text = "x\ny = 1\nz\ny = 1\n"
    assert place("y = 1", line=3, text=text).lines == (2, 2)


def test_a_quote_corrects_lines_past_the_end_of_the_file():
    a = place("    return total", line=99, end=100)
    assert (a.level, a.lines) == ("line", (9, 9))


@pytest.mark.parametrize(
    ("quote", "line"),
    [("    return totals", 4), ("print(total)", 1), ("print(total)", 99)],
    ids=["on-lines-holding-nearly-the-quote", "on-lines-that-exist", "on-lines-past-the-end"],
)
def test_a_quote_found_nowhere_is_never_anchored_on_the_models_lines(quote, line):
    a = place(quote, line=line)
    assert (a.level, a.lines, a.quote_match, a.cited) == ("file", None, "not found", ())


def test_a_quote_not_found_leaves_the_finding_on_its_file_without_lines_and_says_so():
    a = place("    return totals", line=4)  # line 4 exists and nearly matches: not trusted
    assert (a.level, a.lines, a.quote_match, a.anchored) == ("file", None, "not found", False)
    assert a.reason == (
        f"quote not found in the reviewed version of {PATH}; lines 4-4 as the model wrote "
        "them are not used"
    )
    assert a.to_json()["anchor"] == "file" and a.to_json()["quote_match"] == "not found"


@pytest.mark.parametrize(
    "quote",
    ["return total", "  return total  ", "\treturn total", "\n    return total\n\n",
     "for x in xs: total *= x\nreturn total"],
    ids=["dedented", "spaces-around", "tab-indented", "blank-lines-around", "two-dedented"],
)  # fmt: skip
def test_a_quote_differing_only_at_the_ends_of_its_lines_matches_as_whitespace(quote):
    a = place(quote, line=9)
    assert (a.level, a.quote_match) == ("line", "whitespace")
    assert a.lines is not None and a.lines[1] == 9


@pytest.mark.parametrize(
    "quote",
    ["    return  total", "    RETURN TOTAL", "return", "    total = 1\n    return total",
     "total = 0 total = 1", "    return total # done"],
    ids=["inner-space", "case", "part-of-a-line", "a-line-skipped", "lines-joined", "more-text"],
)  # fmt: skip
def test_a_quote_differing_inside_a_line_is_not_found(quote):
    assert place(quote, line=9).quote_match == "not found"


def test_a_crlf_file_matches_an_lf_quote_exactly_and_an_lf_file_a_crlf_quote():
    crlf = CODE.replace("\n", "\r\n")
    assert place("def b(xs):\n    total = 1", line=1, text=crlf).quote_match == "exact"
    got = place("def b(xs):\r\n    total = 1\r\n", line=1)
    assert (got.lines, got.quote_match) == ((6, 7), "exact")


def test_an_exact_match_is_preferred_to_a_nearer_whitespace_match():
    text = "if x:\n    go()\ngo()\n"
    assert place("go()", line=1, text=text).lines == (3, 3)  # line 2 is nearer but indented


def test_a_quote_of_only_whitespace_is_not_found():
    assert place(" \n\t", line=5).quote_match == "not found"


def test_a_finding_without_a_quote_is_anchored_by_its_line_numbers_as_before():
    a = place(None, line=4)
    assert (a.level, a.lines, a.quote_match) == ("line", (4, 4), None)


def test_the_fingerprint_of_a_quoted_finding_follows_its_quote_not_its_lines():
    here, there = place("    return total", line=4), place("    return total", line=9)
    assert here.lines != there.lines and here.fingerprint == there.fingerprint
    other = place("    total = 0", line=4)
    assert other.fingerprint != here.fingerprint


def test_the_fingerprint_depends_on_the_category():
    quoted = {"path": PATH, "start_line": 4, "end_line": 4, "quote": "    return total"}
    seen = Reviewed({PATH: CODE}, {})
    a, b = anchor([finding(**quoted), finding(**quoted, category="style")], seen, REVIEW)
    assert a.fingerprint != b.fingerprint


def test_an_unfound_quote_keeps_a_fingerprint_from_its_quote():
    a, b = place("    return totals", line=1), place("    return totals", line=7)
    assert a.fingerprint == b.fingerprint
    assert a.fingerprint != place("    return totalz", line=1).fingerprint


# --------------------------------------------------------------------------- diff reviews


def quoted(line: int, quote: str, path: str = "src/pkg/long.py") -> dict[str, Any]:
    return item(path=path, start_line=line, end_line=line, quote=quote, title=f"at {line}")


def test_a_diff_finding_is_anchored_in_the_hunk_where_its_quote_is(repo, cli, make_stub):
    run = diff_review(cli, make_stub, two_commits(repo), quoted(20, "x31 = 31"))
    (f,) = findings_of(cli, run).json()["findings"]
    assert (f["anchor"], f["lines"]) == ("line", {"start": 31, "end": 31})
    assert f["quote_match"] == "exact"


def test_a_diff_finding_quoting_lines_the_change_does_not_show_is_kept_and_marked_not_moved(
    repo, cli, make_stub
):
    run = diff_review(cli, make_stub, two_commits(repo), quoted(2, "x15 = 15"))
    (f,) = findings_of(cli, run).json()["findings"]
    assert (f["anchor"], f["lines"], f["start_line"]) == ("file", None, 2)
    assert f["quote_match"] == "not found"
    assert f["unanchored_reason"] == (
        "quote not found in the change to src/pkg/long.py; lines 2-2 as the model wrote them "
        "are not used"
    )


def test_a_diff_finding_quoting_a_whole_context_file_outside_the_change_says_where(
    repo, cli, make_stub
):
    rng = two_commits(repo)
    stub = make_stub([chat_reply(PROSE_END + block(quoted(2, "x15 = 15")))])
    run = cli(
        "run", "--template", "diff-review", "--diff", rng, "-c", "src/pkg/long.py",
        "-p", "Review.", "--endpoint", stub.base_url, "--retry-wait", "0.01", "--json",
    )  # fmt: skip
    assert run.code == 0, run.err
    (f,) = findings_of(cli, run).json()["findings"]
    assert (f["anchor"], f["lines"], f["quote_match"]) == ("file", None, "exact")
    assert f["unanchored_reason"] == (
        "the quoted lines 15-15 of src/pkg/long.py are outside the change (in no hunk)"
    )


def test_a_diff_finding_quoting_a_context_line_of_a_hunk_is_anchored_there(repo, cli, make_stub):
    run = diff_review(cli, make_stub, two_commits(repo), quoted(9, "x4 = 4"))  # context line
    (f,) = findings_of(cli, run).json()["findings"]
    assert (f["anchor"], f["lines"]) == ("line", {"start": 4, "end": 4})


# --------------------------------------------------------------------------- end to end


def test_the_simulators_wrong_line_numbers_are_corrected_by_its_quote(repo, cli, make_simulator):
    sim = make_simulator(findings_line_offset=7)
    args = ["run", "--template", "code-review", "-c", "src/pkg/mean.py", "-p", "Review."]
    run = cli(*args, "--endpoint", sim.base_url, "--retry-wait", "0.01", *FROM_BLOCK, "--json")
    assert run.code == 0, run.err
    got = cli("findings", "reviews", "--format", "json")
    (f,) = got.json()["findings"]
    assert (f["start_line"], f["quote"]) == (8, "def mean(xs):")  # the model's, kept
    assert (f["anchor"], f["lines"], f["quote_match"]) == ("line", {"start": 1, "end": 1}, "exact")
    assert_valid_findings_json(got.json())


def test_verify_strict_passes_a_review_with_a_version_2_findings_file(repo, cli, make_simulator):
    sim = make_simulator(findings_line_offset=3)
    args = ["run", "--template", "code-review", "-c", "src/pkg/mean.py", "-p", "Review."]
    run = cli(*args, "--endpoint", sim.base_url, "--retry-wait", "0.01", *FROM_BLOCK, "--json")
    assert run.code == 0, run.err
    sidecar = json.loads((repo / last_segment(run)["findings_path"]).read_bytes())
    assert sidecar["schema"] == "deepseek_review_findings_v2"
    assert_valid_findings_json(sidecar)
    checked = cli("verify", "--strict", "--json")
    assert checked.code == 0, checked.out + checked.err
    assert verified_findings(checked) == [
        "findings file (version 2) re-derived from the answer: identical"
    ]


def verified_findings(checked: Any) -> list[str]:
    """What verify said of the findings files (the end of its answer checks' details)."""
    details = [c["detail"] for r in checked.json()["receipts"] for c in r["checks"]]
    return [d.split("; ", 1)[1] for d in details if "findings file" in d]


def test_a_version_1_findings_file_of_an_older_version_still_verifies(
    repo, cli, make_stub, monkeypatch
):
    import deepseek_review.finding.sidecar as sidecar

    with monkeypatch.context() as older:
        older.setattr(sidecar, "WRITTEN_VERSION", 1)  # what versions before quotes wrote
        run = review_answering(cli, make_stub, [PROSE_END + block(item())], *FROM_BLOCK)
    written = json.loads((repo / last_segment(run)["findings_path"]).read_bytes())
    assert written["schema"] == "deepseek_review_findings_v1"
    assert_valid_findings_json(written, version=1)
    checked = cli("verify", "--strict", "--json")
    assert checked.code == 0, checked.out + checked.err
    assert verified_findings(checked) == [
        "findings file (version 1) re-derived from the answer: identical"
    ]


def test_version_1_rules_give_byte_for_byte_what_versions_before_quotes_wrote():
    # The fixture was written by the tool before quotes (commit 1e093e9, branch layers).
    text = (FIXTURES / "v1-answer.md").read_text(encoding="utf-8")
    seen = Reviewed({"src/pkg/mean.py": "def mean(xs):\n    return sum(xs) / len(xs)\n"}, {})
    written = (FIXTURES / "v1-findings.json").read_bytes()
    assert sidecar_bytes(text, seen, "reviews/r.md", 1) == written


def test_version_1_rules_refuse_a_block_with_quotes_which_version_1_never_allowed():
    text = PROSE_END + block(item(quote="    return sum(xs) / len(xs)"))
    seen = Reviewed({"src/pkg/mean.py": "def mean(xs):\n    return sum(xs) / len(xs)\n"}, {})
    with pytest.raises(InputError, match="findings version 1 did not allow"):
        sidecar_bytes(text, seen, "reviews/r.md", 1)


@pytest.mark.parametrize("version", [1, 2])
def test_a_batch_reads_the_counts_of_findings_files_of_either_version(tmp_path, version):
    text = (FIXTURES / "v1-answer.md").read_text(encoding="utf-8")
    seen = Reviewed({"src/pkg/mean.py": "def mean(xs):\n    return sum(xs) / len(xs)\n"}, {})
    (tmp_path / "r.findings.json").write_bytes(sidecar_bytes(text, seen, "r.md", version))
    assert counts_beside(tmp_path, "r.md") == {"critical": 0, "major": 1, "minor": 1, "nit": 1}


def test_a_findings_file_of_an_unknown_version_gives_no_counts(tmp_path):
    data = json.loads((FIXTURES / "v1-findings.json").read_bytes())
    data["schema"] = "deepseek_review_findings_v9"
    (tmp_path / "r.findings.json").write_text(json.dumps(data), encoding="utf-8")
    assert counts_beside(tmp_path, "r.md") is None


def test_every_bundled_template_that_asks_for_findings_asks_for_their_quote():
    from deepseek_review.util.resources import prompts_dir

    texts = {p.stem: " ".join(p.read_text().split()) for p in Path(prompts_dir()).glob("*.md")}
    asking = sorted(n for n, t in texts.items() if "schemas/findings.schema.json" in t)
    assert asking == ["code-review", "diff-review", "spec-review", "synthesis"]
    assert [n for n in asking if "`quote` (those lines copied exactly" not in texts[n]] == []
