"""``findings --format patch``: the suggestions of findings anchored by their quotes, as one
unified diff against the reviewed version of each file, which ``git apply`` takes on the
reviewed commit (and ``git apply --3way`` on a later one); what it leaves out is said."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

from deepseek_review.finding.anchor import Reviewed, anchor
from deepseek_review.finding.derive import Collected, ReviewFindings, merge
from deepseek_review.finding.model import Finding
from deepseek_review.finding.patch import plan, to_patch
from deepseek_review.finding.quote import split_lines
from deepseek_review.git.objects import blob_id
from deepseek_review.testing.simulator.answer import SUGGESTED
from tests.support.cli import review
from tests.support.findings import (
    CHANGED,
    PROSE_END,
    answer_of,
    block,
    chat_reply,
    diff_review,
    finding,
    item,
    review_answering,
    sources_of,
    two_commits,
)
from tests.support.git import commit, git

MEAN = "src/pkg/mean.py"
LONG_PY = "src/pkg/long.py"


def reviewed_commit(repo: Path, cli: Any, server: Any, *context: str) -> tuple[str, str]:
    """The repo fixture committed and its ``context`` reviewed (code-review, asking for
    findings): the commit and the review's answer file."""
    oid = commit(repo, "base", {})
    run = review(cli, server, "--template", "code-review", context=context or (MEAN,))
    assert run.code == 0, run.err
    return oid, answer_of(run)


def patch_of(cli: Any, *paths: str) -> Any:
    got = cli("findings", *paths, "--format", "patch", "-o", "x.patch")
    assert got.code == 0, got.err
    return got


def applies(repo: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """``git apply FLAGS x.patch`` in ``repo``."""
    return subprocess.run(
        ["git", "apply", *flags, "x.patch"], cwd=repo, capture_output=True, text=True
    )


def test_the_patch_applies_on_the_reviewed_commit_and_makes_the_suggested_text(
    repo, cli, simulator
):
    _, answer = reviewed_commit(repo, cli, simulator)
    patch_of(cli, answer)
    assert (
        (repo / "x.patch").read_text(encoding="utf-8").startswith(f"diff --git a/{MEAN} b/{MEAN}\n")
    )
    checked = applies(repo, "--check")
    assert checked.returncode == 0, checked.stderr
    assert applies(repo).returncode == 0
    assert (repo / MEAN).read_text(encoding="utf-8") == (
        f"def mean(xs):{SUGGESTED}\n    return sum(xs) / len(xs)\n"
    )


def test_a_file_changed_since_the_review_still_gets_a_patch_against_the_reviewed_commit(
    repo, cli, simulator
):
    reviewed, answer = reviewed_commit(repo, cli, simulator)
    later = "def mean(xs):\n    return sum(xs) / len(xs)\n\n\ndef total(xs):\n    return sum(xs)\n"
    commit(repo, "later", {MEAN: later})
    got = patch_of(cli, answer)
    assert f"{MEAN} changed since the review: its patch is against the reviewed version" in got.err
    assert applies(repo, "--3way").returncode == 0  # merged into the later version
    assert (repo / MEAN).read_text(encoding="utf-8").startswith(f"def mean(xs):{SUGGESTED}\n")
    git(repo, "reset", "-q", "--hard")
    git(repo, "checkout", "-q", reviewed)
    checked = applies(repo, "--check")
    assert checked.returncode == 0, checked.stderr


def test_a_suggestion_whose_quote_is_not_found_yields_no_hunk_and_is_reported(repo, cli, make_stub):
    commit(repo, "base", {})
    found = block(
        item(start_line=2, end_line=2, quote="    return sum(xs) / len(xs)",
             suggestion="    return sum(xs) / max(len(xs), 1)\n"),
        item(start_line=1, end_line=1, quote="def average(xs):", severity="critical",
             suggestion="def mean(xs: list[float]) -> float:\n"),
    )  # fmt: skip
    run = review_answering(cli, make_stub, [PROSE_END + found])
    got = patch_of(cli, answer_of(run))
    text = (repo / "x.patch").read_text(encoding="utf-8")
    assert "+    return sum(xs) / max(len(xs), 1)\n" in text
    assert "def mean(xs: list[float])" not in text
    assert f"suggestion left out: {MEAN}:1-1 [critical] " in got.err
    assert "quote not found in the reviewed version of src/pkg/mean.py" in got.err
    assert applies(repo, "--check").returncode == 0


def test_no_suggestion_to_offer_writes_an_empty_patch(repo, cli, make_stub):
    commit(repo, "base", {})
    run = review_answering(cli, make_stub, [PROSE_END + block(item(quote="def mean(xs):"))])
    got = patch_of(cli, answer_of(run))
    assert (repo / "x.patch").read_bytes() == b""
    assert "no suggestion to offer as a change: the patch is empty" in got.err


# --------------------------------------------------------------------------- the patch's text
REVIEW = "reviews/r.md"
LONG = "".join(f"x{i} = {i}\n" for i in range(1, 31))


def fix(line: int, suggestion: str, *, end: int | None = None, text: str = LONG, **over: Any):
    """A finding on ``line``..``end`` of ``text`` quoting them, suggesting ``suggestion``."""
    quote = "\n".join(split_lines(text)[line - 1 : end or line])
    return finding(start_line=line, end_line=end or line, quote=quote, suggestion=suggestion,
                   **{"path": "f.txt", **over})  # fmt: skip


def collected_of(files: dict[str, str], *found: Finding, review: str = REVIEW) -> Collected:
    """The findings anchored in ``files`` (their reviewed versions), as one review's."""
    anchored = anchor(list(found), Reviewed(files, {}), review)
    one = ReviewFindings(review, (), tuple(anchored), {}, sources_of(files))
    return Collected([one], merge([one]))


def applied(tmp_path: Path, files: dict[str, str], collected: Collected) -> dict[str, bytes]:
    """The files once ``git apply`` took the patch of ``collected`` on a commit of ``files``
    (``git apply --check`` first)."""
    repo = tmp_path / "applied"
    repo.mkdir()
    git(repo, "init", "-q")
    commit(repo, "reviewed", {p: t.encode("utf-8") for p, t in files.items()})
    (repo / "x.patch").write_bytes(to_patch(collected).encode("utf-8"))
    for flags in (["--check"], []):
        done = applies(repo, *flags)
        assert done.returncode == 0, done.stderr
    return {p: (repo / p).read_bytes() for p in files}


def test_a_one_line_suggestion_is_a_hunk_with_three_lines_of_context(tmp_path):
    found = collected_of({"f.txt": LONG}, fix(10, "x10 = 100\n"))
    assert to_patch(found).split("\n", 4)[4] == (
        "@@ -7,7 +7,7 @@\n x7 = 7\n x8 = 8\n x9 = 9\n-x10 = 10\n+x10 = 100\n x11 = 11\n"
        " x12 = 12\n x13 = 13\n"
    )
    assert (
        applied(tmp_path, {"f.txt": LONG}, found)["f.txt"]
        == LONG.replace("x10 = 10\n", "x10 = 100\n").encode()
    )


def test_the_header_names_the_file_and_both_blobs_for_a_three_way_apply():
    found = collected_of({"f.txt": LONG}, fix(1, "x1 = 100\n"))
    after = blob_id(LONG.replace("x1 = 1\n", "x1 = 100\n").encode())
    assert to_patch(found).split("\n")[:4] == [
        "diff --git a/f.txt b/f.txt",
        f"index {blob_id(LONG.encode())}..{after}",
        "--- a/f.txt",
        "+++ b/f.txt",
    ]


def test_suggestions_whose_contexts_touch_share_a_hunk_and_others_get_their_own(tmp_path):
    found = collected_of(
        {"f.txt": LONG}, fix(2, "two\n"), fix(9, "nine\n"), fix(25, "a\nb\n", end=26)
    )
    text = to_patch(found)
    assert re.findall(r"^@@ .* @@$", text, re.M) == ["@@ -1,12 +1,12 @@", "@@ -22,8 +22,8 @@"]
    got = applied(tmp_path, {"f.txt": LONG}, found)["f.txt"].decode()
    assert got.splitlines()[1::7][:2] == ["two", "nine"]
    assert got.splitlines()[24:26] == ["a", "b"]


def test_a_suggestion_may_add_lines_and_later_hunks_count_them(tmp_path):
    found = collected_of({"f.txt": LONG}, fix(2, "a\nb\nc\n"), fix(20, "twenty\n"))
    assert re.findall(r"^@@ .* @@$", to_patch(found), re.M) == [
        "@@ -1,5 +1,7 @@", "@@ -17,7 +19,7 @@",
    ]  # fmt: skip
    got = applied(tmp_path, {"f.txt": LONG}, found)["f.txt"].decode().splitlines()
    assert (got[1:4], got[21]) == (["a", "b", "c"], "twenty")


def test_an_empty_suggestion_deletes_the_quoted_lines(tmp_path):
    found = collected_of({"f.txt": LONG}, fix(5, "", end=6))
    got = applied(tmp_path, {"f.txt": LONG}, found)["f.txt"].decode()
    assert got == LONG.replace("x5 = 5\nx6 = 6\n", "")


def test_a_crlf_file_keeps_its_line_ends(tmp_path):
    text = "a = 1\r\nb = 2\r\nc = 3\r\n"
    found = collected_of({"f.txt": text}, fix(2, "b = 20\nb2 = 21\n", text=text))
    assert applied(tmp_path, {"f.txt": text}, found)["f.txt"] == (
        b"a = 1\r\nb = 20\r\nb2 = 21\r\nc = 3\r\n"
    )


def test_a_file_without_a_last_line_end_keeps_it_missing(tmp_path):
    text = "a = 1\nb = 2"
    found = collected_of({"f.txt": text}, fix(2, "b = 20\n", text=text))
    assert "\\ No newline at end of file\n" in to_patch(found)
    assert applied(tmp_path, {"f.txt": text}, found)["f.txt"] == b"a = 1\nb = 20"


def test_a_line_before_a_last_line_without_a_line_end_is_changed_alone(tmp_path):
    text = "a = 1\nb = 2"
    found = collected_of({"f.txt": text}, fix(1, "a = 10\n", text=text))
    assert applied(tmp_path, {"f.txt": text}, found)["f.txt"] == b"a = 10\nb = 2"


def test_files_come_in_path_order_and_awkward_names_are_quoted_as_git_does(tmp_path):
    files = {"src/z.py": "z = 1\n", "src/a b.py": "a = 1\n", 'src/ünï "q".py': "u = 1\n"}
    found = collected_of(
        files,
        *(fix(1, t.replace("1", "2"), text=t, path=p) for p, t in files.items()),
    )
    text = to_patch(found)
    heads = [line for line in text.splitlines() if line.startswith("diff --git")]
    quoted = '/src/\\303\\274n\\303\\257 \\"q\\".py"'
    assert heads == [
        "diff --git a/src/a b.py b/src/a b.py",
        "diff --git a/src/z.py b/src/z.py",
        f'diff --git "a{quoted} "b{quoted}',
    ]
    got = applied(tmp_path, files, found)
    assert got == {p: t.replace("1", "2").encode() for p, t in files.items()}


def test_of_overlapping_suggestions_the_most_severe_is_kept_and_the_other_named(tmp_path):
    found = collected_of(
        {"f.txt": LONG},
        fix(3, "three\nfour\n", end=4, severity="minor", title="the minor one"),
        fix(4, "four\n", severity="critical", title="the critical one"),
    )
    fixes = plan(found)
    assert [f.finding.finding.title for f in fixes.fixes["f.txt"]] == ["the critical one"]
    assert fixes.notes() == [
        "suggestion left out: f.txt:3-4 [minor] the minor one: its lines overlap those of "
        "the more severe f.txt:4-4 [critical] the critical one"
    ]
    assert applied(tmp_path, {"f.txt": LONG}, found)["f.txt"].decode().splitlines()[3] == "four"


def test_of_overlapping_suggestions_as_severe_the_first_listed_is_kept():
    found = collected_of(
        {"f.txt": LONG}, fix(3, "one\n", title="first"), fix(3, "two\n", title="second")
    )
    (kept,) = plan(found).fixes["f.txt"]
    assert kept.finding.finding.title == "first"


def test_a_suggestion_without_a_quote_is_not_placed_by_the_models_line_numbers():
    found = collected_of({"f.txt": LONG}, finding(path="f.txt", start_line=2, end_line=2,
                                                  suggestion="two\n"))  # fmt: skip
    assert to_patch(found) == ""
    ((_, why),) = plan(found).left_out
    assert why == "it quotes no lines: its line numbers alone are not trusted to place a change"


def test_a_file_reviewed_at_two_versions_is_changed_against_one():
    later = LONG.replace("x30 = 30\n", "x30 = 300\n")
    one = collected_of({"f.txt": LONG}, fix(2, "two\n", severity="critical"), review="r/1.md")
    two = collected_of({"f.txt": later}, fix(9, "nine\n", text=later), review="r/2.md")
    both = Collected([*one.reviews, *two.reviews], merge([*one.reviews, *two.reviews]))
    fixes = plan(both)
    assert [f.first for f in fixes.fixes["f.txt"]] == [2]
    assert "f.txt was reviewed at another version too (HEAD)" in fixes.left_out[0][1]


def test_a_diff_reviews_suggestion_is_a_patch_against_the_changes_new_side(repo, cli, make_stub):
    rng = two_commits(repo)
    head = rng.split("..")[1]
    quoted = item(path=LONG_PY, start_line=9, end_line=9, quote="x2 = 200",
                  suggestion="x2 = 2  # as before\n")  # fmt: skip
    run = diff_review(cli, make_stub, rng, quoted)
    commit(repo, "later", {LONG_PY: CHANGED + "x32 = 32\n"})
    got = patch_of(cli, answer_of(run))
    said = f"{LONG_PY} changed since the review: its patch is against the reviewed version"
    assert f"{said} (commit {head[:7]}, blob " in got.err
    git(repo, "checkout", "-q", head)
    assert applies(repo).returncode == 0
    assert (repo / LONG_PY).read_text(encoding="utf-8") == CHANGED.replace(
        "x2 = 200\n", "x2 = 2  # as before\n"
    )


def test_what_min_severity_leaves_out_of_the_export_has_no_hunk(repo, cli, make_stub):
    commit(repo, "base", {})
    found = block(
        item(start_line=1, end_line=1, quote="def mean(xs):", severity="nit",
             suggestion="def mean(xs: list[float]) -> float:\n"),
        item(start_line=2, end_line=2, quote="    return sum(xs) / len(xs)",
             suggestion="    return sum(xs) / max(len(xs), 1)\n"),
    )  # fmt: skip
    run = review_answering(cli, make_stub, [PROSE_END + found])
    got = cli("findings", answer_of(run), "--format", "patch", "--min-severity", "minor")
    assert got.code == 0, got.err
    assert "+    return sum(xs) / max(len(xs), 1)\n" in got.out
    assert "list[float]" not in got.out
    assert "left out of the export on request: 1 below --min-severity" in got.err


def test_a_suggestion_that_is_not_unicode_text_is_left_out_not_a_crash():
    found = collected_of({"f.txt": LONG}, fix(3, "\ud800\n"), fix(9, "nine\n"))
    assert "+nine\n" in to_patch(found)
    ((_, why),) = plan(found).left_out
    assert why == "its suggestion is not Unicode text (it holds a lone surrogate)"


def test_a_file_reviewed_in_part_is_patched_whole_at_the_lines_it_numbers(repo, cli, make_stub):
    commit(repo, "long", {LONG_PY: LONG})
    quoted = item(path=LONG_PY, start_line=1, end_line=1, quote="x12 = 12",
                  suggestion="x12 = 1200\n")  # fmt: skip
    stub = make_stub([chat_reply(PROSE_END + block(quoted))])
    run = review(cli, stub, "--template", "code-review", context=(f"{LONG_PY}#L10-L20",))
    assert run.code == 0, run.err
    got = patch_of(cli, answer_of(run))
    assert "@@ -9,7 +9,7 @@\n" in (repo / "x.patch").read_text(encoding="utf-8"), got.err
    assert applies(repo).returncode == 0
    assert (repo / LONG_PY).read_text(encoding="utf-8") == LONG.replace(
        "x12 = 12\n", "x12 = 1200\n"
    )


def test_a_finding_stays_on_its_lines_after_its_file_was_committed_changed(repo, cli, simulator):
    """The reviewed text is read from the blob the record pins when neither the working tree
    nor HEAD holds it any more."""
    _, answer = reviewed_commit(repo, cli, simulator)
    commit(repo, "later", {MEAN: "def mean(xs: list[float]) -> float:\n    return 0.0\n"})
    got = cli("findings", answer, "--format", "json")
    assert got.code == 0, got.err
    (found,) = got.json()["findings"]
    assert (found["anchor"], found["lines"]) == ("line", {"start": 1, "end": 1})


def test_a_pinned_blob_missing_from_the_clone_is_named_where_the_finding_is_demoted(
    repo, cli, simulator
):
    _, answer = reviewed_commit(repo, cli, simulator)
    blob = git(repo, "rev-parse", f"HEAD:{MEAN}").strip()
    commit(repo, "later", {MEAN: "def mean(xs: list[float]) -> float:\n    return 0.0\n"})
    (repo / ".git" / "objects" / blob[:2] / blob[2:]).unlink()  # as a shallow clone lacks it
    (found,) = cli("findings", answer, "--format", "json").json()["findings"]
    assert found["unanchored_reason"] == (
        f"{MEAN} is no longer as reviewed (neither the working tree, HEAD nor its pinned blob "
        f"{blob[:7]} holds the recorded sha256)"
    )
