"""`deepseek-review verify`: real reviews from the simulator, real files, the real CLI."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.support.builders import continuation_receipt, primary_receipt, sha, write_receipt
from tests.support.cli import review
from tests.support.reviews import CUT_TWICE, CUT_TWICE_WORDS

FIXTURE = Path(__file__).parents[1] / "fixtures" / "research-stack"
SEED_DIR = "shared-data/artifacts/deepseek_review"
SEED_PRIMARY = f"{SEED_DIR}/prime_gap_entropy_collapse_deepseek_deepseek-v3.2_20260512T033551Z"
SEED_CONT = (
    f"{SEED_DIR}/prime_gap_entropy_collapse_deepseek_deepseek-v4-flash_continuation"
    "_20260512T033849Z"
)


def continued_review(cli: Any, sim: Any, *extra: str) -> list[str]:
    """A real review cut off twice, as the ready-made one is; its receipts, in order."""
    sim.config.answer_words = CUT_TWICE_WORDS
    result = review(cli, sim, *CUT_TWICE, *extra)
    assert result.code == 0, result.err
    return [s["receipt_path"] for s in result.json()["segments"]]


def verify(cli: Any, *args: str) -> Any:
    return cli("verify", "--json", *args)


def by_path(result: Any) -> dict[str, dict[str, Any]]:
    return {r["receipt_path"]: r for r in result.json()["receipts"]}


def check(receipt: dict[str, Any], name: str) -> dict[str, Any]:
    return next(c for c in receipt["checks"] if c["name"] == name)


def flip_byte(path: Path, old: bytes, new: bytes) -> None:
    data = path.read_bytes()
    assert len(old) == len(new) and old in data
    path.write_bytes(data.replace(old, new, 1))


def receipt_json(root: Path, rel: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((root / rel).read_text(encoding="utf-8"))
    return data


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A file outside the repository root that a hostile receipt would like hashed."""
    folder = tmp_path / "outside"
    folder.mkdir()
    secret = folder / "secret.md"
    secret.write_bytes(b"not yours to read\n")
    return secret


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every path os.open is asked for while the test runs (verify opens files only so)."""
    seen: list[str] = []
    real = os.open

    def spy(path: Any, *args: Any, **kwargs: Any) -> int:
        seen.append(os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", spy)
    return seen


# --------------------------------------------------------------------------- passing


@pytest.mark.usefixtures("both_apis")  # the request record differs by API
def test_fresh_review_chain_verifies_ok(cli: Any, repo: Path, reviewed: list[str]) -> None:
    result = verify(cli)
    assert result.code == 0, result.err
    reports = by_path(result)
    assert sorted(reports) == sorted(reviewed) and len(reviewed) == 3
    for r in reports.values():
        assert r["status"] == "ok", r
        assert [c["status"] for c in r["checks"]] == ["ok"] * 5
    assert check(reports[reviewed[0]], "prompt")["detail"] == "request rebuilt byte for byte"


def test_stderr_has_one_ok_line_per_receipt_and_a_summary(
    cli: Any, repo: Path, reviewed: list[str]
) -> None:
    result = cli("verify")
    lines = result.err.splitlines()
    assert sorted(lines[:-1]) == sorted(f"OK   {r}" for r in reviewed)
    assert lines[-1] == "deepseek-review: verify: 3 receipts: 3 OK, 0 FAIL"
    assert result.out == ""


def test_research_stack_receipts_pass_with_context_warnings(cli: Any) -> None:
    result = verify(cli, "--repo-root", str(FIXTURE), "shared-data")
    assert result.code == 0, result.err
    reports = by_path(result)
    primary, cont = reports[SEED_PRIMARY + ".receipt.json"], reports[SEED_CONT + ".receipt.json"]
    assert primary["status"] == "warn" and primary["warnings"] == ["context"]
    assert check(primary, "context")["detail"].startswith("3 of 3 missing: 6-Documentation/")
    assert cont["status"] == "ok"
    assert [check(r, "answer")["status"] for r in (primary, cont)] == ["ok", "ok"]
    assert check(cont, "chain")["status"] == "ok"


def test_research_stack_prompts_are_not_recheckable_info(cli: Any) -> None:
    result = verify(cli, "--repo-root", str(FIXTURE), "shared-data")
    for r in result.json()["receipts"]:
        assert check(r, "prompt") == {
            "name": "prompt",
            "status": "info",
            "detail": "not re-checkable: no request record",
        }


def test_research_stack_receipts_fail_under_strict_by_context(cli: Any) -> None:
    result = verify(cli, "--repo-root", str(FIXTURE), "--strict", "shared-data")
    assert result.code == 9
    reports = by_path(result)
    assert reports[SEED_PRIMARY + ".receipt.json"]["failed"] == ["context"]
    assert reports[SEED_CONT + ".receipt.json"]["failed"] == []
    assert "error: 1 of 2 receipts failed verification (context: 1)" in result.err


# --------------------------------------------------------------------------- tampering


def test_answer_changed_by_one_byte_fails_answer_check(
    cli: Any, repo: Path, reviewed: list[str]
) -> None:
    last = receipt_json(repo, reviewed[-1])["answer_path"]
    data = (repo / last).read_bytes()
    (repo / last).write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    result = verify(cli)
    assert result.code == 9
    reports = by_path(result)
    assert reports[reviewed[-1]]["failed"] == ["answer"]
    assert "not answer_sha256" in check(reports[reviewed[-1]], "answer")["detail"]
    assert [reports[r]["status"] for r in reviewed[:-1]] == ["ok", "ok"]


@pytest.mark.usefixtures("both_apis")  # the request record differs by API
def test_receipt_field_changed_by_one_byte_fails_prompt_check(
    cli: Any, repo: Path, reviewed: list[str]
) -> None:
    flip_byte(repo / reviewed[0], b'"total_tokens": ', b'"total_tokenz": ')
    flip_byte(repo / reviewed[1], b'"deepseek-v4-flash"', b'"deepseek-v4-flasH"')
    reports = by_path(verify(cli))
    assert reports[reviewed[0]]["failed"] == ["schema"]
    assert reports[reviewed[1]]["failed"] == ["chain", "prompt"]
    assert "model" in check(reports[reviewed[1]], "prompt")["detail"]


def test_context_file_changed_warns_naming_it_and_passes(
    cli: Any, repo: Path, reviewed: list[str]
) -> None:
    flip_byte(repo / "docs" / "spec.md", b"is 5", b"is 6")
    result = verify(cli)
    assert result.code == 0, result.err
    for r in by_path(result).values():
        assert r["status"] == "warn" and r["warnings"] == ["prompt"]
        assert check(r, "prompt")["detail"] == "context file changed since the review: docs/spec.md"
    assert f"OK   {reviewed[0]} (warning: prompt: context file changed" in result.err


def test_context_file_changed_fails_under_strict(cli: Any, repo: Path, reviewed: list[str]) -> None:
    flip_byte(repo / "docs" / "spec.md", b"is 5", b"is 6")
    result = verify(cli, "--strict")
    assert result.code == 9
    assert {tuple(r["failed"]) for r in result.json()["receipts"]} == {("prompt",)}


def test_missing_context_file_warns_and_fails_under_strict(
    cli: Any, repo: Path, reviewed: list[str]
) -> None:
    (repo / "docs" / "spec.md").unlink()
    lenient = by_path(verify(cli))
    assert lenient[reviewed[0]]["warnings"] == ["context", "prompt"]
    assert check(lenient[reviewed[0]], "context")["detail"] == "1 of 1 missing: docs/spec.md"
    strict = verify(cli, "--strict")
    assert strict.code == 9
    assert by_path(strict)[reviewed[0]]["failed"] == ["context", "prompt"]


def test_several_failures_are_reported_together(cli: Any, repo: Path, reviewed: list[str]) -> None:
    data = receipt_json(repo, reviewed[0])
    (repo / data["answer_path"]).write_bytes(b"rewritten\n")
    (repo / "docs" / "spec.md").unlink()
    data["prompt_sha256"] = "sha256:" + "1" * 64
    write_receipt(repo, reviewed[0], data)
    result = verify(cli)
    assert by_path(result)[reviewed[0]]["failed"] == ["answer", "prompt"]
    assert by_path(result)[reviewed[0]]["warnings"] == ["context"]
    assert f"FAIL {reviewed[0]}: answer, prompt (answer: " in result.err


@pytest.mark.usefixtures("both_apis")  # the request record differs by API
def test_earlier_segment_changed_fails_the_continuations_prompt(
    cli: Any, repo: Path, reviewed: list[str]
) -> None:
    first = receipt_json(repo, reviewed[0])["answer_path"]
    (repo / first).write_bytes((repo / first).read_bytes() + b" ")
    reports = by_path(verify(cli))
    assert reports[reviewed[0]]["failed"] == ["answer"]
    assert reports[reviewed[1]]["failed"] == ["prompt"]
    assert f"{first} (changed)" in check(reports[reviewed[1]], "prompt")["detail"]


@pytest.mark.usefixtures("both_apis")  # the request record differs by API
def test_request_record_body_altered_fails_prompt(
    cli: Any, repo: Path, reviewed: list[str]
) -> None:
    record = repo / reviewed[0].replace(".receipt.json", ".request.json")
    flip_byte(record, b"Check the mean.", b"Check the mean!")
    reports = by_path(verify(cli))
    assert reports[reviewed[0]]["failed"] == ["prompt"]
    assert "not prompt_sha256" in check(reports[reviewed[0]], "prompt")["detail"]


def test_request_record_not_json_fails_prompt(cli: Any, repo: Path, reviewed: list[str]) -> None:
    record = repo / reviewed[1].replace(".receipt.json", ".request.json")
    record.write_bytes(record.read_bytes()[:-10])
    reports = by_path(verify(cli))
    assert reports[reviewed[1]]["failed"] == ["prompt"]
    assert "is not JSON" in check(reports[reviewed[1]], "prompt")["detail"]


def test_receipt_that_is_not_json_fails_schema_and_skips_the_rest(
    cli: Any, repo: Path, reviewed: list[str]
) -> None:
    (repo / reviewed[-1]).write_bytes(b"{not json")
    r = by_path(verify(cli))[reviewed[-1]]
    assert r["failed"] == ["schema"] and r["kind"] is None
    assert check(r, "schema")["detail"].startswith("not JSON (")
    assert [c["status"] for c in r["checks"][1:]] == ["skip"] * 4


def test_receipt_with_a_duplicate_key_fails_schema(
    cli: Any, repo: Path, reviewed: list[str]
) -> None:
    text = (repo / reviewed[0]).read_text(encoding="utf-8")
    bogus = '"answer_sha256": "sha256:' + "0" * 64 + '",\n  "answer_sha256"'
    (repo / reviewed[0]).write_text(text.replace('"answer_sha256"', bogus, 1), encoding="utf-8")
    r = by_path(verify(cli))[reviewed[0]]
    assert r["failed"] == ["schema"]
    assert check(r, "schema")["detail"] == "not valid JSON: duplicate key 'answer_sha256'"


def test_schema_failure_names_the_field_and_the_rule(
    cli: Any, repo: Path, reviewed: list[str]
) -> None:
    data = receipt_json(repo, reviewed[0])
    data["created_at"] = "yesterday"
    data["context_files"] = ["/etc/passwd"]
    write_receipt(repo, reviewed[0], data)
    detail = check(by_path(verify(cli))[reviewed[0]], "schema")["detail"]
    assert "$.created_at: 'yesterday' is not a 'date-time'" in detail
    assert "$.context_files[0]: '/etc/passwd' does not match" in detail


# --------------------------------------------------------------------------- chains


def test_continuation_given_alone_finds_its_chain_beside_it(
    cli: Any, repo: Path, reviewed: list[str]
) -> None:
    result = verify(cli, reviewed[-1])
    assert result.code == 0, result.err
    assert [r["receipt_path"] for r in result.json()["receipts"]] == [reviewed[-1]]
    assert check(result.json()["receipts"][0], "chain")["status"] == "ok"


def test_missing_earlier_receipt_breaks_the_chain(
    cli: Any, repo: Path, reviewed: list[str]
) -> None:
    (repo / reviewed[0]).unlink()
    reports = by_path(verify(cli))
    assert reports[reviewed[1]]["failed"] == ["chain"]
    assert "is not covered by any valid receipt" in check(reports[reviewed[1]], "chain")["detail"]
    assert reports[reviewed[2]]["failed"] == ["chain"]
    assert "broken further back" in check(reports[reviewed[2]], "chain")["detail"]


def test_chain_that_loops_fails_chain(cli: Any, repo: Path) -> None:
    a, b = b"first\n", b"second\n"
    (repo / "reviews").mkdir()
    (repo / "reviews" / "a.md").write_bytes(a)
    (repo / "reviews" / "b.md").write_bytes(b)
    write_receipt(
        repo, "reviews/a.receipt.json", continuation_receipt("reviews/a.md", a, "reviews/b.md")
    )
    write_receipt(
        repo, "reviews/b.receipt.json", continuation_receipt("reviews/b.md", b, "reviews/a.md")
    )
    result = verify(cli)
    assert result.code == 9
    for r in result.json()["receipts"]:
        assert r["failed"] == ["chain"]
        assert "loops back on itself" in check(r, "chain")["detail"]


def test_answer_claimed_by_two_receipts_fails_chain(
    cli: Any, repo: Path, reviewed: list[str]
) -> None:
    copy = reviewed[0].replace(".receipt.json", "-copy.receipt.json")
    shutil.copy(repo / reviewed[0], repo / copy)
    reports = by_path(verify(cli, reviewed[0], copy))
    assert reports[reviewed[0]]["failed"] == ["chain"]
    assert f"also claimed by {copy}" in check(reports[reviewed[0]], "chain")["detail"]
    assert reports[copy]["failed"] == ["chain"]
    assert check(reports[copy], "prompt")["status"] == "info"  # no record beside the copy


# --------------------------------------------------------------------------- hostile paths


def test_answer_path_outside_the_root_is_never_read(
    cli: Any, repo: Path, outside: Path, opened: list[str]
) -> None:
    rel = os.path.relpath(outside, repo)
    assert rel.startswith("../")
    write_receipt(
        repo, "reviews/evil.receipt.json", primary_receipt(rel, outside.read_bytes(), ["a.md"])
    )
    r = by_path(verify(cli))["reviews/evil.receipt.json"]
    assert "answer" in r["failed"]
    assert "outside the repository root" in check(r, "answer")["detail"]
    assert not [p for p in opened if str(outside.parent) in p]


def test_answer_symlink_leading_outside_is_never_read(
    cli: Any, repo: Path, outside: Path, opened: list[str]
) -> None:
    (repo / "reviews").mkdir()
    (repo / "reviews" / "link.md").symlink_to(outside)
    receipt = primary_receipt("reviews/link.md", outside.read_bytes(), ["docs/spec.md"])
    write_receipt(repo, "reviews/link.receipt.json", receipt)
    r = by_path(verify(cli))["reviews/link.receipt.json"]
    assert r["failed"] == ["answer"]
    assert "a symlink leads outside the repository root" in check(r, "answer")["detail"]
    assert not [p for p in opened if str(outside) in p]


def test_symlinked_folder_leading_outside_is_never_read(
    cli: Any, repo: Path, outside: Path, opened: list[str]
) -> None:
    (repo / "escape").symlink_to(outside.parent)
    receipt = primary_receipt("escape/secret.md", outside.read_bytes(), ["escape/secret.md"])
    write_receipt(repo, "reviews/dir.receipt.json", receipt)
    r = by_path(verify(cli))["reviews/dir.receipt.json"]
    assert r["failed"] == ["answer", "context"]
    assert not [p for p in opened if str(outside.parent) in p]


def test_receipt_symlink_leading_outside_is_never_read(
    cli: Any, repo: Path, outside: Path, opened: list[str]
) -> None:
    (repo / "reviews").mkdir()
    (repo / "reviews" / "x.receipt.json").symlink_to(outside)
    r = by_path(verify(cli))["reviews/x.receipt.json"]
    assert r["failed"] == ["schema"]
    assert "a symlink leads outside the repository root" in check(r, "schema")["detail"]
    assert not [p for p in opened if str(outside) in p]


def test_context_file_outside_the_root_fails_context(
    cli: Any, repo: Path, outside: Path, opened: list[str]
) -> None:
    answer = b"fine\n"
    (repo / "reviews").mkdir()
    (repo / "reviews" / "x.md").write_bytes(answer)
    rel = os.path.relpath(outside, repo)
    write_receipt(repo, "reviews/x.receipt.json", primary_receipt("reviews/x.md", answer, [rel]))
    r = by_path(verify(cli))["reviews/x.receipt.json"]
    assert r["failed"] == ["context"]
    assert check(r, "context")["detail"] == f"outside the repository root (not read): {rel}"
    assert not [p for p in opened if str(outside.parent) in p]


@pytest.mark.usefixtures("both_apis")  # the request record differs by API
def test_request_record_reference_outside_the_root_is_never_read(
    cli: Any, repo: Path, reviewed: list[str], outside: Path, opened: list[str]
) -> None:
    record_path = repo / reviewed[0].replace(".receipt.json", ".request.json")
    record = json.loads(record_path.read_text(encoding="utf-8"))
    for part in record["body"]["messages"][1]["content"]["$parts"]:
        if isinstance(part, dict):
            part["$file"]["path"] = os.path.relpath(outside, repo)
            part["$file"]["sha256"] = sha(outside.read_bytes())
    record_path.write_text(json.dumps(record, indent=2), encoding="utf-8")
    r = by_path(verify(cli))[reviewed[0]]
    assert r["failed"] == ["prompt"]
    assert "outside the repository root (not read)" in check(r, "prompt")["detail"]
    assert not [p for p in opened if str(outside.parent) in p]


def test_previous_answer_outside_the_root_fails_chain(
    cli: Any, repo: Path, outside: Path, opened: list[str]
) -> None:
    answer = b"go on\n"
    (repo / "reviews").mkdir()
    (repo / "reviews" / "c.md").write_bytes(answer)
    rel = os.path.relpath(outside, repo)
    write_receipt(repo, "reviews/c.receipt.json", continuation_receipt("reviews/c.md", answer, rel))
    r = by_path(verify(cli))["reviews/c.receipt.json"]
    assert r["failed"] == ["chain"]
    assert "outside the repository root" in check(r, "chain")["detail"]
    assert not [p for p in opened if str(outside.parent) in p]


def test_fifo_named_as_an_answer_does_not_hang(cli: Any, repo: Path) -> None:
    (repo / "reviews").mkdir()
    os.mkfifo(repo / "reviews" / "pipe.md")
    write_receipt(
        repo, "reviews/pipe.receipt.json", primary_receipt("reviews/pipe.md", b"", ["docs/spec.md"])
    )
    r = by_path(verify(cli))["reviews/pipe.receipt.json"]
    assert r["failed"] == ["answer"]
    assert check(r, "answer")["detail"] == "answer file reviews/pipe.md is not a file"


# --------------------------------------------------------------------------- arguments


def test_folders_are_searched_recursively(cli: Any, repo: Path, simulator: Any) -> None:
    receipts = continued_review(cli, simulator, "--output-dir", "out/deep/er")
    (repo / "out" / "notes.json").write_text("{}", encoding="utf-8")
    result = verify(cli, "out")
    assert result.code == 0, result.err
    assert sorted(by_path(result)) == sorted(receipts)
    assert result.json()["searched"] == ["out"]


def test_answer_file_argument_verifies_its_receipt(
    cli: Any, repo: Path, reviewed: list[str]
) -> None:
    answer = receipt_json(repo, reviewed[1])["answer_path"]
    result = verify(cli, answer)
    assert result.code == 0, result.err
    assert [r["receipt_path"] for r in result.json()["receipts"]] == [reviewed[1]]


def test_answer_without_a_receipt_is_an_input_error(cli: Any, repo: Path) -> None:
    result = cli("verify", "docs/spec.md")
    assert result.code == 3
    assert result.err == (
        "deepseek-review: error: docs/spec.md: no receipt beside it (docs/spec.receipt.json)\n"
    )


def test_default_folder_is_reviews(
    cli: Any, repo: Path, simulator: Any, reviewed: list[str]
) -> None:
    assert review(cli, simulator, "--output-dir", "elsewhere").code == 0
    result = verify(cli)
    assert sorted(by_path(result)) == sorted(reviewed)
    assert result.json()["searched"] == ["reviews"]


def test_configured_output_dir_is_the_default_folder(cli: Any, repo: Path, simulator: Any) -> None:
    (repo / ".deepseek-review.toml").write_text('output_dir = "out/reviews"\n', encoding="utf-8")
    receipts = continued_review(cli, simulator, "--output-dir", "out/reviews")
    result = verify(cli)
    assert sorted(by_path(result)) == sorted(receipts)


def test_bad_config_file_is_a_usage_error(cli: Any, repo: Path) -> None:
    (repo / ".deepseek-review.toml").write_text("output_dir = [", encoding="utf-8")
    result = cli("verify")
    assert result.code == 2
    assert "not valid TOML" in result.err and len(result.err.splitlines()) == 1


def test_no_default_folder_means_nothing_to_verify(cli: Any, repo: Path) -> None:
    result = cli("verify")
    assert result.code == 0
    assert result.err == "deepseek-review: verify: no receipts found in reviews\n"


def test_missing_path_exits_3_naming_it(cli: Any, repo: Path) -> None:
    result = cli("verify", "nope/x.receipt.json")
    assert result.code == 3
    assert result.err == "deepseek-review: error: nope/x.receipt.json: no such file or folder\n"


def test_path_outside_the_root_exits_3(cli: Any, repo: Path, outside: Path) -> None:
    result = cli("verify", str(outside))
    assert result.code == 3
    assert "outside the repository root" in result.err


def test_unknown_option_is_a_usage_error(cli: Any, repo: Path) -> None:
    result = cli("verify", "--no-such-option")
    assert result.code == 2
    assert len(result.err.splitlines()) == 1


def test_bad_repo_root_is_a_usage_error(cli: Any, repo: Path) -> None:
    result = cli("verify", "--repo-root", "no/such/folder")
    assert result.code == 2
    assert "--repo-root no/such/folder: not a folder" in result.err


def test_quiet_prints_only_failures_and_the_summary(
    cli: Any, repo: Path, reviewed: list[str]
) -> None:
    (repo / reviewed[-1].replace(".receipt.json", ".md")).write_text("changed\n")
    result = cli("-q", "verify")
    lines = result.err.splitlines()
    assert lines[0].startswith(f"FAIL {reviewed[-1]}: answer")
    assert lines[1] == "deepseek-review: verify: 3 receipts: 2 OK, 1 FAIL (answer: 1)"
    assert lines[2].startswith("deepseek-review: error: 1 of 3 receipts failed")
    assert len(lines) == 3


def test_json_report_shape(cli: Any, repo: Path, reviewed: list[str]) -> None:
    report = verify(cli).json()
    assert set(report) == {
        "report",
        "root",
        "strict",
        "searched",
        "ok",
        "counts",
        "failed_checks",
        "receipts",
        "orphans",
    }
    assert report["report"] == "deepseek_review_verify_report_v1"
    assert report["root"] == str(repo.resolve())
    assert (report["ok"], report["strict"]) == (True, False)
    assert report["counts"] == {"receipts": 3, "ok": 3, "warn": 0, "fail": 0}
    assert report["failed_checks"] == {}
    first = report["receipts"][0]
    assert set(first) == {
        "receipt_path",
        "status",
        "kind",
        "answer_path",
        "failed",
        "warnings",
        "checks",
    }
    assert [r["kind"] for r in report["receipts"]] == ["primary", "continuation", "continuation"]
    assert [r["receipt_path"] for r in report["receipts"]] == reviewed  # chain order
    assert [c["name"] for c in first["checks"]] == [
        "schema",
        "answer",
        "chain",
        "context",
        "prompt",
    ]
    assert all(set(c) == {"name", "status", "detail"} for c in first["checks"])


def test_failing_json_report_still_goes_to_stdout(
    cli: Any, repo: Path, reviewed: list[str]
) -> None:
    (repo / reviewed[-1]).unlink()
    (repo / reviewed[0]).write_bytes(b"{}")
    result = verify(cli)
    assert result.code == 9
    report = result.json()
    assert report["ok"] is False
    assert report["failed_checks"] == {"schema": 1, "chain": 1}


def test_worker_processes_give_the_same_report(
    cli: Any, repo: Path, simulator: Any, reviewed: list[str]
) -> None:
    continued_review(cli, simulator, "--topic", "second")
    (repo / "docs" / "spec.md").write_text("changed\n", encoding="utf-8")
    reports = []
    for jobs in ("1", "2"):
        out = subprocess.run(
            [sys.executable, "-m", "deepseek_review", "verify", "--json", "--jobs", jobs],
            capture_output=True,
            text=True,
            cwd=repo,
        )
        assert out.returncode == 0, out.stderr
        reports.append(json.loads(out.stdout))
    assert reports[0] == reports[1]
    assert reports[0]["counts"] == {"receipts": 6, "ok": 0, "warn": 6, "fail": 0}


# --------------------------------------------------------------------------- integrations

REPO = Path(__file__).parents[2]


def test_pre_commit_hook_runs_verify_on_the_whole_output_folder() -> None:
    yaml = pytest.importorskip("yaml")
    hooks = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text(encoding="utf-8"))
    (hook,) = (h for h in hooks if h["id"] == "deepseek-review-verify")
    assert hook["entry"] == "deepseek-review verify"
    assert hook["language"] == "python"
    assert (hook["pass_filenames"], hook["always_run"]) == (False, True)


def test_docs_show_the_hook_and_the_exit_codes() -> None:
    doc = (REPO / "docs" / "guide" / "verify.md").read_text(encoding="utf-8")
    assert "id: deepseek-review-verify" in doc
    assert "deepseek-review verify --strict" in doc
    for code, name in (("0", ""), ("9", "VerificationFailed"), ("3", "InputError"), ("2", "")):
        assert f"| {code} |" in doc and name in doc
