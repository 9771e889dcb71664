"""The trust rule (``deepseek_review/trust/rule.py``): review files this run did not write are not
believed until something the operator trusts vouches for them.

Each test is an attack from the security review of issue 29, as a pull request would make it in
the CI setup the README recommends (a base branch ``main``, the pull request's commits on top,
the operator's flags and environment), against a real git repository: planted continuations
that switch the findings gate off, a forged review that ``attest`` would sign provenance for,
and a forged request record that makes ``--since-last-review`` skip the attacker's commit.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.builders import sha
from tests.support.cli import CliResult
from tests.support.findings import FROM_BLOCK, PROSE_END, block, item, review_answering
from tests.support.git import commit_change, git
from tests.support.sshkeys import allowed_signers, make_key, needs_openssh

Cli = Callable[..., CliResult]
CONTINUATION = "ollama_deepseek_review_continuation_receipt_v1"
#: What a planted continuation answers: a second findings block, with nothing in it.
DECOY_TEXT = "\n\nAddendum.\n\n" + block()


def files_of(receipt: str) -> list[str]:
    """A planted segment's files that exist (its receipt, answer, record)."""
    stem = receipt[: -len(".receipt.json")]
    return [f for f in (receipt, stem + ".md", stem + ".request.json") if Path(f).exists()]


@pytest.fixture
def pull_request(repo: Path) -> Path:
    """The code committed on ``main``; a pull request branch checked out on top of it."""
    commit_change(repo, "base")
    git(repo, "branch", "-m", "main")
    git(repo, "checkout", "-qb", "pr")
    return repo


def critical_review(cli: Cli, make_stub: Callable[..., Any], *args: str) -> dict[str, Any]:
    """``run --findings --output-dir ci-review`` whose answer holds one critical finding: the
    CI job's own review (written after the checkout, so git does not track it)."""
    run = review_answering(
        cli, make_stub, [PROSE_END + block(item(severity="critical"))],
        *FROM_BLOCK, "--output-dir", "ci-review", *args,
    )  # fmt: skip
    assert run.code == 0, run.err
    segment: dict[str, Any] = run.json()["segments"][0]
    return segment


def plant_continuation(repo: Path, primary_receipt: str, name: str, continues: str) -> str:
    """A continuation receipt as the attack commits it: the right ``answer_sha256`` of an
    answer holding a second findings block, ``previous_answer_path`` at ``continues``, no
    request record. Returns its receipt's path."""
    primary = json.loads((repo / primary_receipt).read_text(encoding="utf-8"))
    folder = primary_receipt.rpartition("/")[0]
    answer = f"{folder}/{name}.md"
    (repo / answer).write_text(DECOY_TEXT, encoding="utf-8")
    receipt = {k: v for k, v in primary.items() if k != "context_files"}
    receipt |= {
        "schema": CONTINUATION,
        "answer_sha256": sha(DECOY_TEXT.encode()),
        "previous_answer_path": continues,
        "answer_path": answer,
    }
    rel = f"{folder}/{name}.receipt.json"
    (repo / rel).write_text(json.dumps(receipt, indent=2), encoding="utf-8")
    return rel


def plant_decoys(repo: Path, primary_receipt: str, genuine_answer: str, n: int) -> list[str]:
    """``n`` decoy pairs ``zcN.md`` + ``zcN.receipt.json``: one continues the genuine
    review's answer (its name guessed right), the others guessed names that do not exist.
    Returns their files."""
    stem = genuine_answer[: -len(".md")]
    files = []
    for i in range(n):
        target = genuine_answer if i == 0 else f"{stem[:-3]}{i:02d}Z.md"
        files += files_of(plant_continuation(repo, primary_receipt, f"zc{i}", target))
    return files


def findings_gate(cli: Cli, *extra: str) -> CliResult:
    return cli("findings", "ci-review", "--format", "github", "--fail-on", "major", *extra)


# --------------------------------------------------------------------------- 1. the gate


@pytest.mark.parametrize("decoys", [1, 240])
def test_planted_continuations_do_not_pass_the_gate_in_local_use(
    pull_request, cli, make_stub, decoys
):
    """No flag, no CI: whatever verifies is read, but a continuation without its request
    record is not part of a review, and the gate fails rather than pass without it."""
    seg = critical_review(cli, make_stub)
    commit_change(pull_request, "decoys", *plant_decoys(pull_request, seg["receipt_path"],
                                                     seg["answer_path"], decoys))  # fmt: skip
    got = findings_gate(cli)
    assert got.code == 13, got.err
    assert "error: the gate cannot pass: " in got.err


@pytest.mark.parametrize("how", ["flag", "env", "ci"])
def test_planted_continuations_are_set_aside_and_the_real_finding_gates(
    pull_request, cli, make_stub, monkeypatch, how
):
    seg = critical_review(cli, make_stub)
    commit_change(pull_request, "decoys", *plant_decoys(pull_request, seg["receipt_path"],
                                                     seg["answer_path"], 240))  # fmt: skip
    extra: tuple[str, ...] = ()
    if how == "flag":
        extra = ("--trusted-rev", "main")
    elif how == "env":
        monkeypatch.setenv("DEEPSEEK_REVIEW_TRUSTED_REV", "main")
    else:
        monkeypatch.setenv("CI", "true")
    got = findings_gate(cli, *extra)
    assert got.code == 13, got.err
    assert "error: findings at or above major: 1 critical" in got.err
    assert got.out.startswith("::error file=src/pkg/mean.py")
    note = [line for line in got.err.splitlines() if "set aside" in line]
    assert note == [
        "deepseek-review: set aside in ci-review/: 240 segments: "
        + ("not committed unchanged in main and not signed" if how != "ci" else
           "committed (no --trusted-rev vouches for it) and not signed")
    ]  # fmt: skip


def test_two_candidate_continuations_fail_the_gate_naming_the_fork(pull_request, cli, make_stub):
    seg = critical_review(cli, make_stub)
    for name in ("zc1", "zc2"):
        plant_continuation(pull_request, seg["receipt_path"], name, seg["answer_path"])
    got = findings_gate(cli)
    assert got.code == 13
    assert f"{seg['answer_path']}: continued more than once" in got.err
    assert "error: the gate cannot pass" in got.err
    assert "Addendum" not in got.out


def test_a_continuation_without_its_request_record_fails_the_gate(pull_request, cli, make_stub):
    """Even when it holds no second block: the tool writes a record for every continuation."""
    seg = critical_review(cli, make_stub)
    rel = plant_continuation(pull_request, seg["receipt_path"], "zc", seg["answer_path"])
    (pull_request / rel.replace(".receipt.json", ".md")).write_text("More.\n")
    receipt = json.loads((pull_request / rel).read_text())
    receipt["answer_sha256"] = sha(b"More.\n")
    (pull_request / rel).write_text(json.dumps(receipt))
    got = findings_gate(cli)
    assert got.code == 13
    assert f"a continuation without its request record ({rel} has no " in got.err


def test_a_segment_that_does_not_verify_fails_the_gate(pull_request, cli, make_stub, monkeypatch):
    """A review the gate could not read is never a pass: here its answer was edited."""
    seg = review_answering(cli, make_stub, [PROSE_END + block(item(severity="nit"))],
                           "--output-dir", "ci-review").json()["segments"][0]  # fmt: skip
    with (pull_request / seg["answer_path"]).open("a") as f:
        f.write(" ")
    monkeypatch.setenv("CI", "true")
    got = findings_gate(cli)
    assert got.code == 13
    assert "does not verify (answer)" in got.err


def test_locally_an_edited_answer_fails_the_gate_as_a_failed_verification(
    pull_request, cli, make_stub
):
    """Without the rule in force the review is read as it is, and its hash check fails."""
    seg = review_answering(cli, make_stub, [PROSE_END + block(item(severity="nit"))],
                           "--output-dir", "ci-review").json()["segments"][0]  # fmt: skip
    with (pull_request / seg["answer_path"]).open("a") as f:
        f.write(" ")
    got = findings_gate(cli)
    assert got.code == 9
    assert "the answer was changed after the review" in got.err


def test_the_gate_passes_on_this_runs_own_clean_review(pull_request, cli, make_stub, monkeypatch):
    monkeypatch.setenv("CI", "true")
    review_answering(cli, make_stub, [PROSE_END + block(item(severity="minor"))],
                     *FROM_BLOCK, "--output-dir", "ci-review")  # fmt: skip
    got = findings_gate(cli)
    assert got.code == 0, got.err
    assert "set aside" not in got.err


def test_a_review_committed_at_the_trusted_revision_is_admitted(pull_request, cli, make_stub):
    critical_review(cli, make_stub)
    commit_change(pull_request, "reviewed")
    git(pull_request, "branch", "-f", "main", "HEAD")
    got = findings_gate(cli, "--trusted-rev", "main")
    assert got.code == 13
    assert "error: findings at or above major: 1 critical" in got.err
    assert "set aside" not in got.err


def test_a_review_the_change_committed_is_set_aside_under_the_trusted_revision(
    pull_request, cli, make_stub
):
    critical_review(cli, make_stub)
    commit_change(pull_request, "a review the change brings")
    got = findings_gate(cli, "--trusted-rev", "main")
    assert got.code == 13
    assert "set aside in ci-review/: 2 segments: not committed unchanged in main" not in got.err
    assert "1 segment: not committed unchanged in main and not signed" in got.err
    assert "error: the gate cannot pass: set aside in ci-review/" in got.err


def test_a_review_committed_then_modified_is_set_aside(pull_request, cli, make_stub):
    """Committed at the trusted revision, then its answer replaced and every hash
    recomputed in the work tree (so it verifies): not the review that was committed."""
    seg = review_answering(cli, make_stub, [PROSE_END + block(item())],
                           "--output-dir", "ci-review").json()["segments"][0]  # fmt: skip
    commit_change(pull_request, "reviewed")
    git(pull_request, "branch", "-f", "main", "HEAD")
    forge(pull_request, seg["receipt_path"], seg["receipt_path"])
    assert cli("verify", "ci-review").code == 0
    got, _ = attest(cli, "--trusted-rev", "main")
    assert got.code == 3
    assert "1 segment: not committed unchanged in main and not signed" in got.err


def planted_after_own(
    repo: Path, cli: Cli, make_stub: Callable[..., Any], monkeypatch: Any, how: str
) -> tuple[dict[str, Any], str, tuple[str, ...]]:
    """This run's critical review, a continuation of it the change committed, and the
    operator's choice that turns the rule on (``CI=true``, or the flags returned)."""
    if how == "ci":
        monkeypatch.setenv("CI", "true")
    seg = critical_review(cli, make_stub)
    rel = plant_continuation(repo, seg["receipt_path"], "zc", seg["answer_path"])
    commit_change(repo, "decoy", *files_of(rel))
    return seg, rel, (("--trusted-rev", "main") if how == "flag" else ())


@pytest.mark.parametrize("how", ["ci", "flag"])
def test_show_does_not_print_a_planted_segment_as_part_of_the_review(
    pull_request, cli, make_stub, monkeypatch, how
):
    seg, rel, extra = planted_after_own(pull_request, cli, make_stub, monkeypatch, how)
    got = cli("show", seg["answer_path"], *extra)
    assert got.code == 9
    assert "Addendum" not in got.out
    assert f"{rel} (answer " in got.err and "set aside by the trust rule" in got.err


@pytest.mark.parametrize("how", ["ci", "flag"])
def test_continue_does_not_continue_from_a_planted_segment(
    pull_request, cli, make_stub, monkeypatch, how
):
    seg, _, extra = planted_after_own(pull_request, cli, make_stub, monkeypatch, how)
    stub = make_stub([])
    got = cli("continue", seg["answer_path"], "--endpoint", stub.base_url, "--force", *extra)
    assert got.code == 9
    assert "set aside by the trust rule" in got.err
    assert stub.seen == []


# --------------------------------------------------------------------------- 2. attest


def forge(repo: Path, genuine: str, forged: str, text: str = "APPROVED: no issues.\n") -> str:
    """``forged`` (a receipt path; may be ``genuine`` itself) made a copy of the review
    ``genuine`` with its answer replaced by ``text`` and both hashes (receipt and record)
    recomputed, so ``verify`` passes. Returns ``forged``."""
    g_stem, f_stem = genuine[: -len(".receipt.json")], forged[: -len(".receipt.json")]
    receipt = json.loads((repo / genuine).read_text())
    record = json.loads((repo / f"{g_stem}.request.json").read_text())
    receipt["answer_path"] = f"{f_stem}.md"
    receipt["answer_sha256"] = sha(text.encode())
    record["response"]["content_sha256"] = receipt["answer_sha256"]
    (repo / f"{f_stem}.md").write_text(text)
    (repo / f"{f_stem}.request.json").write_text(json.dumps(record, indent=2))
    (repo / forged).write_text(json.dumps(receipt, indent=2))
    return forged


def plain_review(cli: Cli, make_stub: Callable[..., Any], topic: str) -> dict[str, Any]:
    """A review without a findings file, in ci-review/."""
    run = review_answering(cli, make_stub, ["Looks risky.\n"], "--output-dir", "ci-review",
                           "--topic", topic)  # fmt: skip
    assert run.code == 0, run.err
    seg: dict[str, Any] = run.json()["segments"][0]
    return seg


def attest(cli: Cli, *extra: str) -> tuple[CliResult, dict[str, Any]]:
    got = cli("attest", "ci-review", "--output", "pred.json", *extra)
    if got.code != 0:
        return got, {}
    return got, json.loads(Path("pred.json").read_text())


def attested(pred: dict[str, Any]) -> list[str]:
    return [s["name"] for r in pred["reviews"] for s in r["subject"] if s["name"].endswith(".md")]


@pytest.mark.parametrize("how", ["flag", "ci"])
def test_attest_leaves_out_a_forged_review_the_change_committed(
    pull_request, cli, make_stub, monkeypatch, how
):
    earlier = plain_review(cli, make_stub, "earlier")
    forged = forge(pull_request, earlier["receipt_path"], earlier["receipt_path"])
    commit_change(pull_request, "forged", *files_of(forged))
    seg = critical_review(cli, make_stub)
    assert cli("verify", "ci-review").code == 0
    if how == "ci":
        monkeypatch.setenv("CI", "true")
    got, pred = attest(cli, *(("--trusted-rev", "main") if how == "flag" else ()))
    assert got.code == 0, got.err
    assert attested(pred) == [seg["answer_path"]]
    assert pred["left_out"][0]["receipt_path"] == forged
    assert "not signed" in pred["left_out"][0]["reason"]
    assert "left out 1 segment, listed under left_out" in got.err


def test_attest_with_nothing_admitted_writes_nothing(pull_request, cli, make_stub):
    seg = plain_review(cli, make_stub, "x")
    forge(pull_request, seg["receipt_path"], seg["receipt_path"])
    commit_change(pull_request, "reviews the change brings")
    got, _ = attest(cli, "--trusted-rev", "main")
    assert got.code == 3
    assert "nothing to attest: set aside in ci-review/" in got.err
    assert not Path("pred.json").exists()


@needs_openssh
def test_attest_admits_a_review_signed_by_an_allowed_signer(pull_request, cli, make_stub, tmp_path):
    key = make_key(tmp_path / "keys", "ed25519", "alice@example.com")
    signers = allowed_signers(tmp_path / "allowed", key.allowed_line())
    seg = critical_review(cli, make_stub, "--sign", "--signing-key", str(key.private))
    commit_change(pull_request, "a signed review the change brings")
    got, pred = attest(cli, "--trusted-rev", "main", "--allowed-signers", str(signers))
    assert got.code == 0, got.err
    assert attested(pred) == [seg["answer_path"]]
    assert "left_out" not in pred


@needs_openssh
def test_a_review_signed_by_an_unknown_key_is_not_admitted(pull_request, cli, make_stub, tmp_path):
    alice = make_key(tmp_path / "keys", "ed25519", "alice@example.com")
    mallory = make_key(tmp_path / "keys", "ed25519", "mallory@example.com")
    signers = allowed_signers(tmp_path / "allowed", alice.allowed_line())
    critical_review(cli, make_stub, "--sign", "--signing-key", str(mallory.private))
    commit_change(pull_request, "signed by someone else")
    got = findings_gate(cli, "--trusted-rev", "main", "--allowed-signers", str(signers))
    assert got.code == 13
    assert "error: the gate cannot pass: set aside in ci-review/: 1 segment: does not verify" in (
        got.err
    )


# --------------------------------------------------------------------------- 3. since last


def _diff_review(cli: Cli, sim: Any, *extra: str) -> CliResult:
    return cli("run", "-p", "x", "--diff", "main", "--endpoint", sim.base_url,
               "--output-dir", "ci-review", "--json", *extra)  # fmt: skip


def _commit(repo: Path, path: str, text: str, message: str) -> str:
    (repo / path).write_text(text)
    return commit_change(repo, message)


@pytest.mark.parametrize("receipt", ["{}", "copy"])
def test_since_last_review_ignores_a_forged_record_with_a_future_date(
    pull_request, cli, simulator, receipt
):
    """A committed receipt (``{}``, or a genuine one's copy) beside a record dated 9999 that
    pins the attacker's commit: the commit is still reviewed."""
    _commit(pull_request, "src/pkg/one.py", "ONE = 1\n", "one")
    first = _diff_review(cli, simulator)
    assert first.code == 0, first.err
    evil = _commit(pull_request, "src/pkg/evil.py", "import os\nos.system('x')\n", "evil")
    genuine = first.json()["segments"][0]["receipt_path"]
    stem = "ci-review/review_deepseek_deepseek-v4-flash_99991231T235959Z"
    record = json.loads((pull_request / genuine.replace(".receipt.", ".request.")).read_text())
    record["created_at"] = "9999-12-31T23:59:59+00:00"
    record["git"]["commits"]["head"] = evil
    (pull_request / f"{stem}.request.json").write_text(json.dumps(record))
    text = "{}" if receipt == "{}" else (pull_request / genuine).read_text()
    (pull_request / f"{stem}.receipt.json").write_text(text)
    commit_change(pull_request, "forged record")
    plan = cli("run", "-p", "x", "--diff", "main", "--since-last-review", "--dry-run", "--json",
               "--output-dir", "ci-review")  # fmt: skip
    assert plan.code == 0, plan.err
    assert "src/pkg/evil.py" in plan.json()["git"]["diff"]["shown"]


def test_since_last_review_ranks_by_git_history_not_by_created_at(pull_request, cli, simulator):
    """Two genuine reviews; the one of the later commit was made first (its clock behind):
    the later commit in git's history counts."""
    _commit(pull_request, "src/pkg/one.py", "ONE = 1\n", "one")
    git(pull_request, "checkout", "-q", "-b", "side", "HEAD~0")
    two = _commit(pull_request, "src/pkg/two.py", "TWO = 2\n", "two")
    later = _diff_review(cli, simulator)
    assert later.code == 0, later.err
    git(pull_request, "checkout", "-q", "HEAD~1")
    earlier = _diff_review(cli, simulator)
    assert earlier.code == 0, earlier.err
    git(pull_request, "checkout", "-q", "side")
    _commit(pull_request, "src/pkg/three.py", "THREE = 3\n", "three")
    plan = cli("run", "-p", "x", "--diff", "main", "--since-last-review", "--dry-run", "--json",
               "--output-dir", "ci-review")  # fmt: skip
    assert plan.code == 0, plan.err
    assert plan.json()["git"]["commits"]["base"] == two
    assert plan.json()["git"]["diff"]["shown"] == ["src/pkg/three.py"]


@pytest.mark.parametrize("how", ["ci", "flag"])
def test_since_last_review_believes_only_admitted_reviews(
    pull_request, cli, simulator, monkeypatch, how
):
    """A genuine-looking review of the change's head, committed by the change itself."""
    _commit(pull_request, "src/pkg/one.py", "ONE = 1\n", "one")
    assert _diff_review(cli, simulator).code == 0
    commit_change(pull_request, "the review, committed by the change")
    extra: tuple[str, ...] = ("--trusted-rev", "main") if how == "flag" else ()
    if how == "ci":
        monkeypatch.setenv("CI", "true")
    plan = cli("run", "-p", "x", "--diff", "main", "--since-last-review", "--dry-run", "--json",
               "--output-dir", "ci-review", *extra)  # fmt: skip
    assert plan.code == 0, plan.err
    assert "src/pkg/one.py" in plan.json()["git"]["diff"]["shown"]
    why = (
        "not committed unchanged in main and not signed"
        if how == "flag"
        else "committed (no --trusted-rev vouches for it) and not signed"
    )
    assert f"set aside in ci-review/: 1 segment: {why}" in plan.err


def test_a_review_without_a_findings_block_beside_one_with_findings_does_not_block_the_gate(
    pull_request, cli, make_stub
):
    """A folder may hold reviews made with a template that asks for no findings: only what
    could hide a finding (a review set aside, a chain that forks or breaks, an unusable block)
    fails a gate that found nothing."""
    review_answering(cli, make_stub, ["Fine prose, no block.\n"], "--output-dir", "ci-review")
    review_answering(cli, make_stub, [PROSE_END + block(item(severity="minor"))],
                     "--output-dir", "ci-review", "--topic", "other")  # fmt: skip
    got = findings_gate(cli)
    assert got.code == 0, got.err
    assert 'has no ```json block holding "findings"' in got.err


def test_two_findings_blocks_in_one_chain_fail_the_gate(pull_request, cli, make_stub):
    text = PROSE_END + block(item(severity="minor")) + "\nAgain:\n" + block()
    review_answering(cli, make_stub, [text], "--output-dir", "ci-review")
    got = findings_gate(cli)
    assert got.code == 13
    assert "error: the gate cannot pass: " in got.err
    assert "2 findings blocks" in got.err


@needs_openssh
def test_sign_in_ci_does_not_bless_a_review_the_change_committed(
    pull_request, cli, make_stub, monkeypatch, tmp_path
):
    """``sign`` would put the operator's signature on a planted review."""
    key = make_key(tmp_path / "keys", "ed25519", "ci@example.com")
    planted = plain_review(cli, make_stub, "planted")
    forge(pull_request, planted["receipt_path"], planted["receipt_path"])
    commit_change(pull_request, "planted", *files_of(planted["receipt_path"]))
    own = plain_review(cli, make_stub, "own")
    monkeypatch.setenv("CI", "true")
    got = cli("sign", "ci-review", "--signing-key", str(key.private), "--json")
    signed = got.json()["signed"]
    assert signed == [own["receipt_path"]]
    assert not (pull_request / planted["receipt_path"].replace(".receipt.", ".intoto.")).exists()
    assert [r["receipt_path"] for r in got.json()["refused"]] == [planted["receipt_path"]]


def test_a_review_planted_at_the_repository_root_is_set_aside_in_ci(
    pull_request, cli, make_stub, monkeypatch
):
    """The root's own receipts are listed by git as "." (an empty pathspec is refused)."""
    run = review_answering(cli, make_stub, ["Looks risky.\n"], "--output-dir", ".",
                           "--topic", "planted")  # fmt: skip
    planted = run.json()["segments"][0]["receipt_path"]
    forge(pull_request, planted, planted)
    commit_change(pull_request, "planted", *files_of(planted))
    review_answering(cli, make_stub, ["Fine.\n"], "--output-dir", ".", "--topic", "own")
    monkeypatch.setenv("CI", "true")
    got = cli("attest", ".", "--output", "pred.json")
    assert got.code == 0, got.err
    pred = json.loads(Path("pred.json").read_text())
    assert [x["receipt_path"] for x in pred["left_out"]] == [planted]
    assert all("planted" not in name for name in attested(pred))


def test_reviews_inside_another_git_repository_are_not_taken_as_written_here(
    pull_request, cli, make_stub, monkeypatch
):
    """A submodule (or a nested clone) is another repository's commits: the parent's git does
    not list its files, which must not make them look untracked."""
    seg = plain_review(cli, make_stub, "planted")
    git(pull_request / "ci-review", "init", "-q")
    commit_change(pull_request / "ci-review", "the nested repository's review")
    monkeypatch.setenv("CI", "true")
    got = cli("show", seg["answer_path"])
    assert got.code == 3
    assert "ci-review: inside another git repository" in got.err
    assert got.out == ""
