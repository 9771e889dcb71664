"""A suggestion offered as a change is the same change in every export: the patch, reviewdog's
rdjson suggestions, SARIF fixes, GitHub suggestion blocks in Markdown and annotations; what the
patch leaves out, none of them offers."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from deepseek_review.finding.export import render
from deepseek_review.finding.github import to_github
from deepseek_review.finding.markdown import to_markdown
from tests.finding.test_findings_patch import LONG, applied, collected_of, fix
from tests.support.findings import assert_valid_rdjson, assert_valid_rdjsonl, assert_valid_sarif

CRLF = "a = 1\r\nb = 2\r\nc = 3\r\nd = 4\r\n"
FILES = {"f.txt": LONG, "w.txt": CRLF}


def suggested() -> Any:
    """A replacement, a growing one, a deletion, a CRLF file's, and one the patch leaves out
    (it overlaps a more severe one)."""
    return collected_of(
        FILES,
        fix(2, "two\n", severity="critical"),
        fix(10, "ten\nten and a half\n", end=11),
        fix(20, "", end=21, severity="minor"),
        fix(2, "b = 20\n", text=CRLF, path="w.txt"),
        fix(2, "overlapping\n", end=3, severity="nit", title="left out"),
    )


def _offset(lines: list[str], line: int, column: int | None, end: bool) -> int:
    """A SARIF region edge as an offset into the file (``lines`` keep their line ends); a
    missing end column is the end of the line without its line end (SARIF 3.30)."""
    start = sum(len(x) for x in lines[: line - 1])
    if column is not None:
        return start + column - 1
    if not end:
        return start
    return start + len(lines[line - 1].rstrip("\r\n"))


def sarif_applied(text: str, log: dict[str, Any], path: str) -> str:
    """``text`` with every SARIF fix to ``path`` applied, as a SARIF consumer applies them."""
    lines = text.splitlines(keepends=True)
    edits = []
    for result in log["runs"][0]["results"]:
        for f in result.get("fixes", ()):
            for change in f["artifactChanges"]:
                if change["artifactLocation"]["uri"] != path:
                    continue
                for r in change["replacements"]:
                    g = r["deletedRegion"]
                    a = _offset(lines, g["startLine"], g.get("startColumn"), False)
                    b = _offset(lines, g["endLine"], g.get("endColumn"), True)
                    edits.append((a, b, r["insertedContent"]["text"]))
    for a, b, new in sorted(edits, reverse=True):
        text = text[:a] + new + text[b:]
    return text


def test_sarif_fixes_applied_make_what_the_patch_makes(tmp_path: Path) -> None:
    found = suggested()
    log = json.loads(render(found, "sarif"))
    assert_valid_sarif(log)
    patched = applied(tmp_path, FILES, found)
    for path, text in FILES.items():
        assert sarif_applied(text, log, path).encode() == patched[path], path


def test_rdjson_suggestions_are_the_patchs_lines_and_text() -> None:
    found = suggested()
    doc = json.loads(render(found, "rdjson"))
    assert_valid_rdjson(doc)
    assert_valid_rdjsonl(render(found, "rdjsonl"))
    got = [
        (d["location"]["path"], s["range"], s["text"])
        for d in doc["diagnostics"]
        for s in d.get("suggestions", ())
    ]
    assert sorted(got, key=lambda g: (g[0], g[1]["start"]["line"])) == [
        ("f.txt", {"start": {"line": 2}, "end": {"line": 2}}, "two"),
        ("f.txt", {"start": {"line": 10}, "end": {"line": 11}}, "ten\nten and a half"),
        ("f.txt", {"start": {"line": 20}, "end": {"line": 21}}, ""),
        ("w.txt", {"start": {"line": 2}, "end": {"line": 2}}, "b = 20"),
    ]


def test_a_suggestion_the_patch_leaves_out_is_offered_by_no_export() -> None:
    found = suggested()
    log = json.loads(render(found, "sarif"))
    (left,) = [r for r in log["runs"][0]["results"] if r["message"]["text"].startswith("left")]
    assert "fixes" not in left
    doc = json.loads(render(found, "rdjson"))
    (diag,) = [d for d in doc["diagnostics"] if "left out" in d["message"]]
    assert "suggestions" not in diag
    assert "overlapping" not in to_markdown(found)


def test_markdown_shows_each_change_as_a_github_suggestion_block() -> None:
    text = to_markdown(suggested())
    assert "### Suggested changes\n\n**f.txt:2** (critical): " in text
    assert "```suggestion\nten\nten and a half\n```\n" in text
    assert (
        "**f.txt:20-21** (minor): Division by zero on an empty list\n\n```suggestion\n```" in text
    )


def test_markdown_lists_the_suggestions_it_does_not_offer_with_why() -> None:
    text = to_markdown(suggested())
    assert "Suggestions not offered as changes (1):\n- f.txt: left out: its lines overlap" in text


def test_a_suggestion_holding_a_fence_gets_a_longer_one() -> None:
    found = collected_of({"f.txt": LONG}, fix(3, 'doc = """\n```py\nx\n```\n"""\n'))
    assert '````suggestion\ndoc = """\n```py\nx\n```\n"""\n````' in to_markdown(found)


def test_a_github_annotation_shows_its_suggested_change() -> None:
    line = to_github(collected_of({"f.txt": LONG}, fix(3, "three\n"))).strip()
    assert line.endswith("%0A%0ASuggested change to lines 3-3:%0A```suggestion%0Athree%0A```")
