"""Lines of a file as context (``path#L120-L260``): exactly those lines sent under a heading
naming them, recorded (request record version 2) so that ``verify`` rebuilds the bytes, pinned
with the whole file's blob, refused in one line when the range is not one of the file."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from deepseek_review.util.resources import record_schema_path
from tests.support.cli import files_under
from tests.support.findings import FROM_BLOCK, PROSE_END, block, item, review_answering
from tests.support.git import base_commit, commit, git

BIG = "src/pkg/big.py"
LINES = [f"x{i} = {i}\n" for i in range(1, 41)]


def sha(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def lines(first: int, last: int) -> str:
    return "".join(LINES[first - 1 : last])


@pytest.fixture
def big(repo: Path) -> Path:
    path = repo / BIG
    path.write_text("".join(LINES), encoding="utf-8")
    return path


def review(cli: Any, sim: Any, *args: str) -> Any:
    return cli(
        "run", "-p", "Check it.", "--endpoint", sim.base_url, "--retry-wait", "0.01", "--json",
        *args,
    )  # fmt: skip


def sent_user_text(sim: Any) -> str:
    body = json.loads(sim.chat_requests()[-1].body)
    return str(body["messages"][-1]["content"])


def record_of(repo: Path, result: Any, i: int = 0) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (repo / result.json()["segments"][i]["record_path"]).read_text("utf-8")
    )
    return data


def receipt_of(repo: Path, result: Any) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(
        (repo / result.json()["segments"][0]["receipt_path"]).read_text("utf-8")
    )
    return data


def file_parts(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        p["$file"]
        for m in record["body"]["messages"]
        if isinstance(m["content"], dict)
        for p in m["content"]["$parts"]
        if isinstance(p, dict) and "$file" in p
    ]


def verify(cli: Any, *args: str) -> Any:
    return cli("verify", "--json", *args)


def prompt_check(result: Any) -> dict[str, Any]:
    (receipt,) = result.json()["receipts"]
    return next(c for c in receipt["checks"] if c["name"] == "prompt")


def schema_errors(data: dict[str, Any]) -> list[str]:
    version = data["record"].rsplit("_", 1)[1]
    schema = json.loads(record_schema_path(version).read_text(encoding="utf-8"))
    validator = Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)
    return [f"{e.json_path}: {e.message}" for e in validator.iter_errors(data)]


# --------------------------------------------------------------------------- what is sent


def test_a_range_sends_exactly_its_lines_under_the_files_heading_and_a_line_naming_them(
    repo: Path, big: Path, cli: Any, simulator: Any
) -> None:
    result = review(cli, simulator, "-c", f"{BIG}#L3-L5")
    assert result.code == 0, result.err
    text = sent_user_text(simulator)
    note = "Only lines 3-5 of 40 of this file; the first line below is line 3 of the file."
    assert f"## File 1 of 1: {BIG}\n\n{note}\n\n```python\n{lines(3, 5)}```" in text
    assert "x2 = 2" not in text and "x6 = 6" not in text


def test_one_line_is_named_with_a_single_number(
    repo: Path, big: Path, cli: Any, simulator: Any
) -> None:
    result = review(cli, simulator, "-c", f"{BIG}#L40")
    assert result.code == 0, result.err
    text = sent_user_text(simulator)
    note = "Only line 40 of 40 of this file; the first line below is line 40 of the file."
    assert f"{BIG}\n\n{note}\n\n```python\nx40 = 40\n```" in text


def test_the_last_line_without_a_newline_is_sent_as_the_file_has_it(
    repo: Path, cli: Any, simulator: Any
) -> None:
    (repo / "notes.txt").write_text("one\ntwo\nthree", encoding="utf-8")
    result = review(cli, simulator, "-c", "notes.txt#L2-L3")
    assert result.code == 0, result.err
    (ref,) = file_parts(record_of(repo, result))
    assert (ref["lines"], ref["sha256"], ref["bytes"]) == ([2, 3], sha(b"two\nthree"), 9)
    assert "```text\ntwo\nthree\n```" in sent_user_text(simulator)


def test_the_dry_run_lists_the_lines_of_a_range(repo: Path, big: Path, cli: Any) -> None:
    text = cli("run", "-p", "x", "--dry-run", "-c", f"{BIG}#L3-L5")
    assert text.code == 0, text.err
    assert f"  {len(lines(3, 5)):>10}  {BIG} (lines 3-5 of 40)" in text.out.splitlines()
    got = cli("run", "-p", "x", "--dry-run", "--json", "-c", f"{BIG}#L3-L5").json()
    (entry,) = got["context_files"]
    assert entry == {
        "path": BIG,
        "bytes": len(lines(3, 5)),
        "sha256": sha(lines(3, 5).encode()),
        "lines": [3, 5],
        "of": 40,
    }


# --------------------------------------------------------------------------- the records


def test_the_record_of_a_range_is_version_2_and_holds_the_lines_and_the_slices_hash(
    repo: Path, big: Path, cli: Any, simulator: Any
) -> None:
    result = review(cli, simulator, "-c", f"{BIG}#L3-L5", "-c", "docs/spec.md")
    assert result.code == 0, result.err
    record = record_of(repo, result)
    assert record["record"] == "deepseek_review_request_record_v2"
    assert schema_errors(record) == []
    want = {"path": BIG, "sha256": sha(lines(3, 5).encode()), "bytes": len(lines(3, 5))}
    ranged, whole = file_parts(record)
    assert ranged == {**want, "lines": [3, 5]}
    assert "lines" not in whole
    assert record["context_files"][0] == {**want, "lines": [3, 5]}


def test_the_receipt_names_the_files_path_and_the_record_beside_it_the_lines(
    repo: Path, big: Path, cli: Any, simulator: Any
) -> None:
    result = review(cli, simulator, "-c", f"{BIG}#L3-L5")
    assert result.code == 0, result.err
    assert receipt_of(repo, result)["context_files"] == [BIG]


def test_a_review_without_a_range_still_writes_a_version_1_record(
    repo: Path, cli: Any, simulator: Any
) -> None:
    result = review(cli, simulator, "-c", "docs/spec.md")
    assert result.code == 0, result.err
    record = record_of(repo, result)
    assert record["record"] == "deepseek_review_request_record_v1"
    assert schema_errors(record) == []


def test_a_continuation_of_a_range_is_version_2_and_the_chain_verifies(
    repo: Path, big: Path, cli: Any, make_simulator: Any
) -> None:
    sim = make_simulator(answer_words=60)
    result = review(cli, sim, "-c", f"{BIG}#L3-L5", "--max-tokens", "20")
    assert result.code == 0, result.err
    segments = result.json()["segments"]
    assert len(segments) >= 2
    for i in range(len(segments)):
        record = record_of(repo, result, i)
        assert record["record"] == "deepseek_review_request_record_v2"
        assert schema_errors(record) == []
    checked = verify(cli, "--strict")
    assert checked.code == 0, checked.err


@pytest.mark.parametrize("outside", [False, True], ids=["as-reviewed", "changed-outside"])
def test_continue_resends_the_ranges_lines_byte_for_byte(
    repo: Path, big: Path, cli: Any, make_simulator: Any, outside: bool
) -> None:
    sim = make_simulator(answer_words=60)
    first = review(cli, sim, "-c", f"{BIG}#L3-L5", "--max-tokens", "20", "--max-continuations", "0")
    assert first.code == 4
    if outside:
        big.write_text("".join(LINES) + "x41 = 41\n", encoding="utf-8")
    primary = first.json()["segments"][0]["answer_path"]
    r = cli("continue", primary, "--endpoint", sim.base_url, "--json")
    assert r.code == 0, r.err
    sent = [json.loads(q.body)["messages"] for q in sim.chat_requests()]
    assert all(m[: len(sent[0])] == sent[0] for m in sent[1:])  # the primary's, repeated
    assert record_of(repo, r, 1)["record"] == "deepseek_review_request_record_v2"
    checked = verify(cli, "--strict")
    assert checked.code == 0, checked.err


def test_continue_refuses_when_the_ranges_lines_changed(
    repo: Path, big: Path, cli: Any, make_simulator: Any
) -> None:
    sim = make_simulator(answer_words=60)
    first = review(cli, sim, "-c", f"{BIG}#L3-L5", "--max-tokens", "20", "--max-continuations", "0")
    big.write_text("".join(LINES).replace("x4 = 4", "x4 = 44"), encoding="utf-8")
    r = cli("continue", first.json()["segments"][0]["answer_path"], "--endpoint", sim.base_url)
    assert r.code == 3
    assert f"cannot continue: context file changed since the review: {BIG}" in r.err


# --------------------------------------------------------------------------- verify


def test_verify_strict_rebuilds_the_request_of_a_range(
    repo: Path, big: Path, cli: Any, simulator: Any
) -> None:
    assert review(cli, simulator, "-c", f"{BIG}#L3-L5").code == 0
    checked = verify(cli, "--strict")
    assert checked.code == 0, checked.err
    assert prompt_check(checked)["status"] == "ok"


@pytest.mark.parametrize(
    "changed",
    [
        "".join(LINES).replace("x4 = 4", "x4 = 44"),
        "".join(LINES).replace("x5 = 5\n", "x5 = 5"),
        "# a line more before the range moves its lines\n" + "".join(LINES),
        lines(1, 4),
    ],
    ids=["a-line-inside", "its-last-newline", "lines-moved-by-one-before", "cut-short-of-its-end"],
)
def test_an_uncommitted_file_changed_inside_the_range_fails_verify_strict(
    repo: Path, big: Path, cli: Any, simulator: Any, changed: str
) -> None:
    assert review(cli, simulator, "-c", f"{BIG}#L3-L5").code == 0
    big.write_text(changed, encoding="utf-8")
    checked = verify(cli, "--strict")
    assert checked.code == 9
    assert prompt_check(checked)["detail"] == f"context file changed since the review: {BIG}"


@pytest.mark.parametrize(
    "changed",
    [
        "".join(LINES).replace("x1 = 1", "x1 = 11").replace("x9 = 9", "x9 = 99"),
        "".join(LINES) + "x41 = 41\n",
        lines(1, 5),
        lines(1, 5) + "no newline at the end",
    ],
    ids=["lines-before-and-after", "a-line-added-at-the-end", "cut-after-it", "a-last-line-after"],
)
def test_an_uncommitted_file_changed_outside_the_range_passes_verify_strict(
    repo: Path, big: Path, cli: Any, simulator: Any, changed: str
) -> None:
    assert review(cli, simulator, "-c", f"{BIG}#L3-L5").code == 0
    big.write_text(changed, encoding="utf-8")
    checked = verify(cli, "--strict")
    assert checked.code == 0, checked.err


def test_a_committed_file_changed_inside_the_range_passes_verify_from_its_pinned_blob(
    repo: Path, big: Path, cli: Any, simulator: Any
) -> None:
    head = base_commit(repo)
    result = review(cli, simulator, "-c", f"{BIG}#L3-L5")
    assert result.code == 0, result.err
    (pin,) = record_of(repo, result)["git"]["files"]
    blob = git(repo, "rev-parse", f"HEAD:{BIG}").strip()
    assert pin == {"path": BIG, "blob": blob, "commit": head, "lines": [3, 5]}
    big.write_text("".join(LINES).replace("x4 = 4", "x4 = 44"), encoding="utf-8")
    checked = verify(cli, "--strict")
    assert checked.code == 0, checked.err
    assert prompt_check(checked)["detail"] == (
        f"request rebuilt from git objects: {BIG} (lines 3-5) from commit {head[:7]}"
    )


def test_an_uncommitted_range_is_pinned_to_the_whole_files_hash_and_its_lines(
    repo: Path, big: Path, cli: Any, simulator: Any
) -> None:
    base_commit(repo)
    big.write_text("".join(LINES) + "x41 = 41\n", encoding="utf-8")
    result = review(cli, simulator, "-c", f"{BIG}#L3-L5", "-c", "docs/spec.md")
    assert result.code == 0, result.err
    pin = record_of(repo, result)["git"]["files"][0]
    assert pin == {"path": BIG, "worktree": sha(big.read_bytes()), "lines": [3, 5]}


def test_a_record_whose_hash_of_a_pinned_range_was_altered_fails_verify(
    repo: Path, big: Path, cli: Any, simulator: Any
) -> None:
    head = base_commit(repo)
    result = review(cli, simulator, "-c", f"{BIG}#L3-L5")
    other = sha(lines(3, 6).encode())

    def alter(record: dict[str, Any]) -> None:
        for ref in file_parts(record):
            ref["sha256"] = other
        record["context_files"][0]["sha256"] = other

    _tamper(repo, result, alter)
    checked = verify(cli)
    assert checked.code == 9
    assert prompt_check(checked)["detail"] == (
        f"the request record's hash of {BIG} (commit {head[:7]}) is not the hash of the pinned "
        "blob (blobs never change: the record was altered)"
    )


def _tamper(repo: Path, result: Any, change: Any) -> None:
    path = repo / result.json()["segments"][0]["record_path"]
    record = json.loads(path.read_text("utf-8"))
    change(record)
    path.write_text(json.dumps(record), encoding="utf-8")


def test_a_record_whose_pin_names_other_lines_than_its_reference_fails_verify(
    repo: Path, big: Path, cli: Any, simulator: Any
) -> None:
    base_commit(repo)
    result = review(cli, simulator, "-c", f"{BIG}#L3-L5")
    _tamper(repo, result, lambda r: r["git"]["files"][0].update(lines=[3, 6]))
    checked = verify(cli)
    assert checked.code == 9
    assert prompt_check(checked)["detail"] == (
        f"the request record pins other lines of {BIG} than its body references (the record "
        "was altered)"
    )


def test_a_record_whose_context_files_entry_lost_its_lines_fails_verify(
    repo: Path, big: Path, cli: Any, simulator: Any
) -> None:
    result = review(cli, simulator, "-c", f"{BIG}#L3-L5")
    _tamper(repo, result, lambda r: r["context_files"][0].pop("lines"))
    checked = verify(cli)
    assert checked.code == 9
    assert prompt_check(checked)["detail"] == (
        f"the request record's context_files entry for {BIG} does not match the file "
        "reference in its body (sha256, bytes and lines)"
    )


def test_a_record_whose_reference_moved_its_lines_fails_verify_strict(
    repo: Path, big: Path, cli: Any, simulator: Any
) -> None:
    """Other lines of an uncommitted file: as if the file had changed (nothing recorded
    tells the two apart), a failure with ``--strict``."""
    result = review(cli, simulator, "-c", f"{BIG}#L3-L5")

    def move(record: dict[str, Any]) -> None:
        for ref in file_parts(record):
            ref["lines"] = [4, 6]
        record["context_files"][0]["lines"] = [4, 6]

    _tamper(repo, result, move)
    checked = verify(cli, "--strict")
    assert checked.code == 9
    assert prompt_check(checked)["detail"] == f"context file changed since the review: {BIG}"


# --------------------------------------------------------------------------- git


def test_rev_sends_the_lines_of_the_commits_version_pinned_to_its_blob(
    repo: Path, big: Path, cli: Any, simulator: Any
) -> None:
    head = base_commit(repo)
    big.write_text("changed\n" * 40, encoding="utf-8")
    result = review(cli, simulator, "--rev", "HEAD", "-c", f"{BIG}#L3-L5")
    assert result.code == 0, result.err
    assert lines(3, 5) in sent_user_text(simulator)
    record = record_of(repo, result)
    blob = git(repo, "rev-parse", f"HEAD:{BIG}").strip()
    assert record["git"]["files"] == [{"path": BIG, "blob": blob, "commit": head, "lines": [3, 5]}]
    checked = verify(cli, "--strict")
    assert checked.code == 0, checked.err


def test_rev_refuses_a_range_past_the_end_of_the_commits_version(
    repo: Path, big: Path, cli: Any, simulator: Any
) -> None:
    base_commit(repo)
    big.write_text("".join(LINES) * 2, encoding="utf-8")  # the working tree has 80 lines
    result = review(cli, simulator, "--rev", "HEAD", "-c", f"{BIG}#L70-L75")
    assert result.code == 3
    assert result.err.strip().splitlines() == [
        f"deepseek-review: error: context path {BIG}#L70-L75: {BIG} has 40 lines; the range "
        "ends past its last line"
    ]


def test_rev_takes_a_path_that_really_ends_in_a_range_in_the_commit_for_that_path(
    repo: Path, cli: Any, simulator: Any
) -> None:
    (repo / "notes#L2").write_text("a note\n", encoding="utf-8")
    (repo / "notes").write_text("one\ntwo\n", encoding="utf-8")
    base_commit(repo)
    (repo / "notes#L2").unlink()  # only the commit has it now
    result = review(cli, simulator, "--rev", "HEAD", "-c", "notes#L2")
    assert result.code == 0, result.err
    (ref,) = file_parts(record_of(repo, result))
    assert ref == {"path": "notes#L2", "sha256": sha(b"a note\n"), "bytes": 7}


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        ("src/pkg#L1", "a line range needs a file; src/pkg is a folder"),
        ("src/*.py#L1", "a line range needs one file, not a pattern"),
        (f"{BIG}#L3-L2", "the range ends at line 2, before it starts (line 3)"),
        ("src/pkg/none.py#L1", "names no file in commit "),
    ],
    ids=["folder", "glob", "reversed", "missing"],
)
def test_rev_refuses_a_bad_range_naming_the_spec(
    repo: Path, big: Path, cli: Any, simulator: Any, spec: str, problem: str
) -> None:
    base_commit(repo)
    result = review(cli, simulator, "--rev", "HEAD", "-c", spec)
    assert result.code == 3
    (line,) = result.err.strip().splitlines()
    assert line.startswith(f"deepseek-review: error: context path {spec}: {problem}")


def test_a_diff_review_sends_the_lines_of_a_context_file_after_the_change(
    repo: Path, big: Path, cli: Any, simulator: Any
) -> None:
    a = base_commit(repo)
    b = commit(repo, "fix", {"src/pkg/mean.py": "def mean(xs):\n    return 0\n"})
    result = review(cli, simulator, "--diff", f"{a}..{b}", "-c", f"{BIG}#L3-L5")
    assert result.code == 0, result.err
    text = sent_user_text(simulator)
    assert text.index("## Change from") < text.index(f"## File 1 of 1: {BIG}\n\nOnly lines 3-5")
    record = record_of(repo, result)
    assert [f.get("lines") for f in file_parts(record)] == [[3, 5]]
    assert receipt_of(repo, result)["context_files"] == ["src/pkg/mean.py", BIG]
    checked = verify(cli, "--strict")
    assert checked.code == 0, checked.err


# --------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    ("spec", "problem"),
    [
        (f"{BIG}#L0", f"context path {BIG}#L0: lines are numbered from 1"),
        (f"{BIG}#L0-L3", f"context path {BIG}#L0-L3: lines are numbered from 1"),
        (
            f"{BIG}#L9-L3",
            f"context path {BIG}#L9-L3: the range ends at line 3, before it starts (line 9)",
        ),
        (
            f"{BIG}#L39-L41",
            f"context path {BIG}#L39-L41: {BIG} has 40 lines; the range ends past its last line",
        ),
        (
            f"{BIG}#L41",
            f"context path {BIG}#L41: {BIG} has 40 lines; the range ends past its last line",
        ),
        (
            f"{BIG}#L99999999999999999999",
            f"context path {BIG}#L99999999999999999999: {BIG} has 40 lines; the range ends "
            "past its last line",
        ),
        ("src/pkg#L1-L2", "context path src/pkg#L1-L2: a line range needs a file; src/pkg is a "
         "folder"),
        ("src/*.py#L1", "context path src/*.py#L1: a line range needs one file, not a pattern"),
        (f"{BIG}#Lx", f"context path {BIG}#Lx: not a line range (write path#L120-L260, or "
         "path#L120 for one line)"),
        (f"{BIG}#L1-", f"context path {BIG}#L1-: not a line range (write path#L120-L260, or "
         "path#L120 for one line)"),
        ("src/pkg/none.py#L1", "context path src/pkg/none.py#L1: no such file or folder"),
    ],
    ids=[
        "zero", "from-zero", "reversed", "past-the-end", "one-past-the-end", "huge", "folder",
        "glob", "malformed", "open-ended", "missing",
    ],
)  # fmt: skip
def test_a_bad_range_is_refused_in_one_line_naming_the_spec_and_nothing_is_written(
    repo: Path, big: Path, cli: Any, simulator: Any, spec: str, problem: str
) -> None:
    result = review(cli, simulator, "-c", spec)
    assert result.code == 3
    assert result.err.strip().splitlines() == [f"deepseek-review: error: {problem}"]
    assert simulator.chat_requests() == []
    assert files_under(repo / "reviews") == []


@pytest.mark.parametrize(
    "specs",
    [(f"{BIG}#L1-L3", f"{BIG}#L5-L9"), (f"{BIG}#L1-L3", BIG), (BIG, f"{BIG}#L1-L3")],
    ids=["two-ranges", "range-then-whole", "whole-then-range"],
)
def test_a_file_named_twice_with_a_range_is_refused(
    repo: Path, big: Path, cli: Any, simulator: Any, specs: tuple[str, str]
) -> None:
    result = review(cli, simulator, "-c", specs[0], "-c", specs[1])
    assert result.code == 3
    assert result.err.strip().splitlines() == [
        f"deepseek-review: error: context path {specs[1]}: {BIG} is named already ({specs[0]}); "
        "a review sends a file once, whole or one range of it"
    ]


def test_a_path_that_really_ends_in_a_range_is_that_file(
    repo: Path, big: Path, cli: Any, simulator: Any
) -> None:
    (repo / "notes#L2").write_text("a note\n", encoding="utf-8")
    (repo / "notes").write_text("one\ntwo\nthree\n", encoding="utf-8")
    result = review(cli, simulator, "-c", "notes#L2")
    assert result.code == 0, result.err
    (ref,) = file_parts(record_of(repo, result))
    assert ref == {"path": "notes#L2", "sha256": sha(b"a note\n"), "bytes": 7}


def test_a_range_of_a_file_whose_name_holds_a_range_cuts_that_file(
    repo: Path, cli: Any, simulator: Any
) -> None:
    (repo / "notes#L2").write_text("one\ntwo\nthree\n", encoding="utf-8")
    result = review(cli, simulator, "-c", "notes#L2#L2")
    assert result.code == 0, result.err
    (ref,) = file_parts(record_of(repo, result))
    assert (ref["path"], ref["lines"], ref["sha256"]) == ("notes#L2", [2, 2], sha(b"two\n"))


def test_a_folder_listing_a_file_named_with_a_range_sends_only_the_range(
    repo: Path, big: Path, cli: Any, simulator: Any
) -> None:
    result = review(cli, simulator, "-c", "src", "-c", f"{BIG}#L3-L5")
    assert result.code == 0, result.err
    refs = {r["path"]: r.get("lines") for r in file_parts(record_of(repo, result))}
    assert refs == {BIG: [3, 5], "src/pkg/__init__.py": None, "src/pkg/mean.py": None}


# --------------------------------------------------------------------------- findings


def test_a_finding_in_a_range_keeps_the_files_line_numbers(
    repo: Path, big: Path, cli: Any, make_stub: Any
) -> None:
    answer = PROSE_END + block(
        item(path=BIG, start_line=4, end_line=4),
        item(path=BIG, start_line=9, end_line=9, title="Outside"),
    )
    run = review_answering(cli, make_stub, [answer], "-c", f"{BIG}#L3-L5", *FROM_BLOCK)
    assert run.code == 0, run.err
    found = json.loads((repo / run.json()["segments"][-1]["findings_path"]).read_text())
    by_title = {f["title"]: f for f in found["findings"]}
    inside = by_title["Division by zero on an empty list"]
    assert (inside["anchor"], inside["start_line"], inside["end_line"]) == ("line", 4, 4)
    outside = by_title["Outside"]
    assert (outside["anchor"], outside["unanchored_reason"]) == (
        "file",
        f"lines 9-9 of {BIG} are outside the lines reviewed (3-5)",
    )


def test_a_finding_in_a_range_cites_the_lines_the_file_numbers_so() -> None:
    from deepseek_review.finding.anchor import Reviewed, anchor
    from tests.support.findings import finding

    seen = Reviewed({BIG: lines(3, 5)}, {}, ranges={BIG: (3, 5)})
    found = [finding(path=BIG, start_line=s, end_line=e) for s, e in [(3, 3), (4, 5), (5, 6)]]
    got = [(a.level, a.cited) for a in anchor(found, seen, "reviews/r.md")]
    assert got == [("line", ("x3 = 3",)), ("line", ("x4 = 4", "x5 = 5")), ("file", ())]


# --------------------------------------------------------------------------- batch


def test_a_batch_entry_may_review_a_range_and_another_the_whole_file(
    repo: Path, big: Path, cli: Any, simulator: Any
) -> None:
    (repo / "reviews.toml").write_text(
        f'[[review]]\ntopic = "part"\nprompt = "Check it."\ncontext = ["{BIG}#L3-L5"]\n'
        f'[[review]]\ntopic = "whole"\nprompt = "Check it."\ncontext = ["{BIG}"]\n',
        encoding="utf-8",
    )
    result = cli("batch", "reviews.toml", "--endpoint", simulator.base_url, "--retry-wait", "0.01")
    assert result.code == 0, result.err
    versions = {}
    for path in (repo / "reviews").glob("*.request.json"):
        record = json.loads(path.read_text("utf-8"))
        versions[path.name.split("_")[0]] = (record["record"], file_parts(record)[0].get("lines"))
    assert versions == {
        "part": ("deepseek_review_request_record_v2", [3, 5]),
        "whole": ("deepseek_review_request_record_v1", None),
    }
    checked = verify(cli, "--strict")
    assert checked.code == 0, checked.err
