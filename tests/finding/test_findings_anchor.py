"""Anchoring: a finding stays on lines that exist (and, for a diff, inside a hunk), or is
demoted with the reason; never moved. Fingerprints follow content, not line numbers."""

from __future__ import annotations

from pathlib import Path

from deepseek_review.finding.anchor import Reviewed, anchor, diff_hunks
from deepseek_review.finding.hunks import change_in, parse_diff
from tests.support.findings import finding
from tests.support.git import git

MEAN = "def mean(xs):\n    return sum(xs) / len(xs)\n"
REVIEW = "reviews/r.md"


def seen(text: str = MEAN, **kw: object) -> Reviewed:
    return Reviewed({"src/pkg/mean.py": text}, {}, **kw)  # type: ignore[arg-type]


def test_a_finding_on_existing_lines_is_anchored_with_the_cited_text():
    (a,) = anchor([finding()], seen(), REVIEW)
    assert (a.level, a.reason, a.cited) == ("line", "", ("    return sum(xs) / len(xs)",))


def test_a_path_outside_the_context_is_demoted_to_the_review():
    (a,) = anchor([finding(path="src/pkg/other.py")], seen(), REVIEW)
    assert (a.level, a.reason) == (
        "review",
        "src/pkg/other.py is not one of the review's context files",
    )
    assert a.finding.path == "src/pkg/other.py"  # kept as claimed, shown on the review


def test_lines_past_the_end_of_the_file_are_demoted_to_the_file_not_moved():
    (a,) = anchor([finding(start_line=2, end_line=7)], seen(), REVIEW)
    assert (a.level, a.reason) == ("file", "src/pkg/mean.py has 2 lines; line 7 does not exist")
    assert (a.finding.start_line, a.finding.end_line) == (2, 7)


def test_a_file_whose_reviewed_text_is_unknown_is_demoted_with_why():
    unknown = Reviewed({"src/pkg/mean.py": None}, {"src/pkg/mean.py": "changed since"})
    (a,) = anchor([finding()], unknown, REVIEW)
    assert (a.level, a.reason) == ("file", "changed since")


def test_the_fingerprint_survives_lines_added_above_the_finding():
    (before,) = anchor([finding()], seen(), REVIEW)
    grown = "import math\n\n\n" + MEAN
    (after,) = anchor([finding(start_line=5, end_line=5)], seen(grown), REVIEW)
    assert after.anchored and after.fingerprint == before.fingerprint


def test_the_fingerprint_ignores_reindentation_but_not_a_change_of_the_code():
    (before,) = anchor([finding()], seen(), REVIEW)
    (reindented,) = anchor([finding()], seen(MEAN.replace("    ", "\t")), REVIEW)
    (changed,) = anchor([finding()], seen(MEAN.replace("len(xs)", "max(len(xs), 1)")), REVIEW)
    assert reindented.fingerprint == before.fingerprint
    assert changed.fingerprint != before.fingerprint


def _diff_repo(repo: Path) -> tuple[str, str]:
    """A real git diff: mean.py gains a guard at the top and a function at the end."""
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    body = "\n".join(f"x{i} = {i}" for i in range(1, 21)) + "\n"
    path = repo / "src" / "pkg" / "mean.py"
    path.write_text(body, encoding="utf-8")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "long")
    lines = body.splitlines()
    lines[0] = "x1 = 100"
    lines.append("x21 = 21")
    new = "\n".join(lines) + "\n"
    path.write_text(new, encoding="utf-8")
    return new, git(repo, "diff", "-U1")


def test_hunks_of_a_real_git_diff_are_the_new_side_ranges(repo):
    _, diff = _diff_repo(repo)
    assert diff_hunks(diff) == {"src/pkg/mean.py": [(1, 2), (20, 21)]}


def test_lines_outside_every_hunk_of_a_diff_are_demoted_to_the_file(repo):
    new, diff = _diff_repo(repo)
    inside, outside, across = (
        finding(start_line=20, end_line=21),
        finding(start_line=10, end_line=10),
        finding(start_line=2, end_line=20),
    )
    got = anchor([inside, outside, across], seen(new, change=parse_diff(diff)), REVIEW)
    assert [a.level for a in got] == ["line", "file", "file"]
    assert got[1].reason == "lines 10-10 of src/pkg/mean.py are not inside one hunk of the diff"


def test_a_deleted_file_has_no_hunks(repo):
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    (repo / "src" / "pkg" / "mean.py").unlink()
    assert diff_hunks(git(repo, "diff")) == {}


def test_lines_are_counted_at_line_feeds_only_as_github_counts_them():
    text = "# section one\f\nclass A:\r\n    pass\u2028still line three\n"
    (a,) = anchor([finding(start_line=3, end_line=3)], seen(text), REVIEW)
    assert a.cited == ("    pass\u2028still line three",)
    (past,) = anchor([finding(start_line=4, end_line=4)], seen(text), REVIEW)
    assert past.reason == "src/pkg/mean.py has 3 lines; line 4 does not exist"


def test_an_added_line_that_reads_like_a_file_header_is_counted_in_its_hunk():
    diff = (
        "diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1 +1,3 @@\n x = 1\n"
        "+++ b/evil.py\n+@@ -1 +1 @@\n"
    )
    assert diff_hunks(diff) == {"a.py": [(1, 3)]}


def test_a_request_without_the_hashed_change_demotes_the_changes_findings_saying_so():
    git_pins = {"diff": {"sha256": "sha256:" + "0" * 64, "bytes": 10, "shown": ["a.py"]}}
    change = change_in(git_pins, ["## Change from a to b"])
    (a,) = anchor([finding(path="a.py", start_line=1, end_line=1)], seen(change=change), REVIEW)
    assert (a.level, a.reason) == (
        "file",
        "the request does not hold the change its record's git.diff hashes",
    )
