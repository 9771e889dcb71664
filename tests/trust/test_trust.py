"""The trust model: what a pull request contains (its config, manifests, receipts, any file)
never chooses which secret is sent, where it goes, or what leaves the machine.

Every test here performs an attack from the security review with a hostile repository built by
the test and servers on 127.0.0.1, and asserts that it now fails: the operator's key is in no
request the attacker's server received, nothing was sent before a refusal, and the refusal names
the file and key that tried.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.testing.simulator import Simulator
from tests.support.cli import CliResult, files_under, use_key
from tests.support.git import git

Cli = Callable[..., CliResult]
MakeSim = Callable[..., Simulator]
KEY = "sk-operator-" + "7c1d9e4b2a6f0853"
CI_TOKEN = "ghs_" + "PlantedCheckoutToken0123456789abcd"
REMOTE = "https://attacker.invalid"


@pytest.fixture
def operator(repo: Path, make_simulator: MakeSim, monkeypatch: pytest.MonkeyPatch) -> Simulator:
    """CI as the README recommends it: the operator's server and key, and another secret of
    CI's (a GitHub token) in the environment too."""
    sim = make_simulator(api_key=KEY)
    use_key(monkeypatch, KEY)
    monkeypatch.setenv("GITHUB_TOKEN", CI_TOKEN)
    return sim


def sent_secrets(*sims: Simulator) -> list[str]:
    """Every Authorization header any of ``sims`` received."""
    return [r.headers.get("authorization", "") for s in sims for r in s.chat_requests()]


def write_manifest(repo: Path, body: str, name: str = "reviews.toml") -> Path:
    path = repo / name
    path.write_text(
        '[[review]]\ntopic = "spec"\nprompt = "Check."\ncontext = "docs/spec.md"\n' + body,
        encoding="utf-8",
    )
    return path


def batch(cli: Cli, sim: Simulator, *extra: str) -> CliResult:
    return cli("batch", "reviews.toml", "--endpoint", sim.base_url, "--retry-wait", "0.01",
               "--json", *extra)  # fmt: skip


# --------------------------------------------------------------------------- 1. manifests


def test_a_manifest_cannot_choose_which_variable_is_sent(repo, operator, cli):
    write_manifest(repo, 'api_key_env = "GITHUB_TOKEN"\n')
    r = batch(cli, operator)
    assert r.code == 3
    assert "entry 1" in r.err and "line 5" in r.err
    assert "'api_key_env' cannot be set in a manifest" in r.err
    assert operator.chat_requests() == []
    assert CI_TOKEN not in r.err + r.out


def test_a_manifest_cannot_send_the_key_to_a_remote_endpoint(repo, operator, cli):
    write_manifest(repo, f'endpoint = "{REMOTE}"\n')
    r = batch(cli, operator)
    assert r.code == 3
    assert f"endpoint {REMOTE}/v1/chat/completions: the manifest may name only a loopback" in r.err
    assert operator.chat_requests() == []
    assert files_under(repo / "reviews") == []


def test_a_manifests_defaults_cannot_send_the_key_to_a_remote_endpoint(repo, operator, cli):
    path = write_manifest(repo, "")
    path.write_text(f'[defaults]\nendpoint = "{REMOTE}"\n\n' + path.read_text())
    r = cli("batch", "reviews.toml", "--json")
    assert r.code == 3
    assert "the manifest may name only a loopback" in r.err
    assert operator.chat_requests() == []


def test_a_loopback_endpoint_a_manifest_names_gets_no_key(repo, operator, make_simulator, cli):
    """A manifest may point an entry at a local server (the operator's machine), never the key."""
    other = make_simulator()
    write_manifest(repo, f'endpoint = "{other.base_url}"\n')
    r = batch(cli, operator)
    assert r.code == 0, r.err
    assert len(other.chat_requests()) == 1
    assert sent_secrets(operator, other) == [""]


def test_an_endpoint_the_operator_allowed_may_be_named_by_a_manifest_and_gets_the_key(
    repo, operator, cli, monkeypatch
):
    write_manifest(repo, f'endpoint = "{operator.base_url}"\n')
    monkeypatch.setenv("DEEPSEEK_REVIEW_ALLOWED_ENDPOINTS", operator.base_url)
    r = cli("batch", "reviews.toml", "--retry-wait", "0.01", "--json")
    assert r.code == 0, r.err
    assert sent_secrets(operator) == [f"Bearer {KEY}"]


@pytest.mark.parametrize("where", ["entry", "defaults"])
def test_a_manifest_cannot_switch_the_secret_scan_off(repo, operator, cli, where):
    path = write_manifest(repo, "allow_secrets = true\n" if where == "entry" else "")
    if where == "defaults":
        path.write_text("[defaults]\nallow_secrets = true\n\n" + path.read_text())
    r = batch(cli, operator)
    assert r.code == 3
    assert "'allow_secrets' cannot be set in a manifest" in r.err
    assert operator.chat_requests() == []


# --------------------------------------------------------------------------- 2. repository config


def test_the_repository_config_cannot_choose_which_variable_is_sent(repo, operator, cli):
    (repo / ".deepseek-review.toml").write_text('api_key_env = "GITHUB_TOKEN"\n')
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", operator.base_url)
    assert r.code == 2
    assert r.err.strip() == (
        "deepseek-review: error: .deepseek-review.toml api_key_env cannot be set in the "
        "repository's config (a file under review must not choose which secret is sent); use "
        "--api-key-env or DEEPSEEK_REVIEW_API_KEY_ENV"
    )
    assert operator.chat_requests() == []


def test_pyproject_config_cannot_choose_which_variable_is_sent(repo, operator, cli):
    (repo / "pyproject.toml").write_text('[tool.deepseek-review]\napi_key_env = "GITHUB_TOKEN"\n')
    r = cli("run", "-c", "docs/spec.md", "-p", "x")
    assert r.code == 2
    assert "pyproject.toml [tool.deepseek-review] api_key_env cannot be set" in r.err
    assert operator.chat_requests() == []


def test_the_repository_config_cannot_send_context_to_a_remote_endpoint(repo, operator, cli):
    (repo / ".deepseek-review.toml").write_text(f'endpoint = "{REMOTE}"\n')
    r = cli("run", "-c", "docs/spec.md", "-p", "x")
    assert r.code == 2
    assert (
        f".deepseek-review.toml endpoint {REMOTE}/v1/chat/completions: the repository's "
        "config may name only a loopback endpoint or one the operator chose"
    ) in r.err
    assert "--endpoint" in r.err


def test_a_loopback_endpoint_in_the_repository_config_gets_no_key(
    repo, operator, make_simulator, cli
):
    other = make_simulator()
    (repo / ".deepseek-review.toml").write_text(f'endpoint = "{other.base_url}"\n')
    r = cli("run", "-c", "docs/spec.md", "-p", "x")
    assert r.code == 0, r.err
    assert sent_secrets(other) == [""]


def test_the_operators_endpoint_wins_over_the_repository_config(repo, operator, cli):
    (repo / ".deepseek-review.toml").write_text(f'endpoint = "{REMOTE}"\n')
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", operator.base_url)
    assert r.code == 0, r.err
    assert sent_secrets(operator) == [f"Bearer {KEY}"]


def test_the_environments_endpoint_wins_over_the_repository_config(
    repo, operator, cli, monkeypatch
):
    (repo / ".deepseek-review.toml").write_text(f'endpoint = "{REMOTE}"\n')
    monkeypatch.setenv("DEEPSEEK_REVIEW_ENDPOINT", operator.base_url)
    r = cli("run", "-c", "docs/spec.md", "-p", "x")
    assert r.code == 0, r.err
    assert sent_secrets(operator) == [f"Bearer {KEY}"]


# ------------------------------------------------------------------- 3. files a manifest names


@pytest.fixture
def outside(repo: Path) -> Path:
    """A file of the operator's, beside the repository, holding a secret."""
    path = repo.parent / "operator-notes.txt"
    path.write_text(f"deploy token {CI_TOKEN}\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("key", ["prompt_file", "template_file"])
@pytest.mark.parametrize("how", ["absolute", "home", "dotdot", "symlink"])
def test_a_manifest_cannot_read_a_file_outside_the_repository(
    repo, operator, cli, outside, monkeypatch, key, how
):
    monkeypatch.setenv("HOME", str(repo.parent))
    if how == "symlink":
        (repo / "docs" / "notes.md").symlink_to(outside)
    value = {
        "absolute": str(outside),
        "home": "~/operator-notes.txt",
        "dotdot": "../operator-notes.txt",
        "symlink": "docs/notes.md",
    }[how]
    body = f"{key} = {json.dumps(value)}\n"
    path = repo / "reviews.toml"
    text = f'[[review]]\ntopic = "spec"\ncontext = "docs/spec.md"\n{body}'
    path.write_text(text + ('prompt = "Check."\n' if key == "template_file" else ""))
    r = batch(cli, operator)
    assert r.code == 3, r.err
    assert f"{key} " in r.err
    assert "inside the repository" in r.err or "outside the repository root" in r.err
    assert operator.chat_requests() == []
    assert CI_TOKEN not in r.err + r.out
    assert files_under(repo / "reviews") == []


def test_a_manifest_may_name_a_prompt_file_inside_the_repository(repo, operator, cli):
    (repo / "prompts").mkdir()
    (repo / "prompts" / "ask.md").write_text("Check the mean, please.\n")
    path = repo / "ci" / "reviews.toml"
    path.parent.mkdir()
    path.write_text('[[review]]\ntopic = "spec"\ncontext = "docs/spec.md"\n'
                    'prompt_file = "../prompts/ask.md"\n')  # fmt: skip
    r = cli("batch", "ci/reviews.toml", "--endpoint", operator.base_url, "--json")
    assert r.code == 0, r.err
    assert "Check the mean, please." in operator.chat_requests()[0].body.decode()


# --------------------------------------------------------------------------- 9. forged receipts


def _forge_review(repo: Path, cli: Cli, sim: Simulator, answer: str) -> None:
    """What an attacker commits: a review of the entry that never ran on the operator's model,
    its answer replaced and every hash recomputed, so ``verify`` passes."""
    r = batch(cli, sim)
    assert r.code == 0, r.err
    entry = r.json()["entries"][0]
    receipt_path = repo / entry["receipt_paths"][0]
    receipt = json.loads(receipt_path.read_text())
    answer_path = repo / receipt["answer_path"]
    answer_path.write_text(answer)
    receipt["answer_sha256"] = "sha256:" + hashlib.sha256(answer.encode()).hexdigest()
    receipt_path.write_text(json.dumps(receipt, indent=2))
    record_path = receipt_path.with_name(receipt_path.name.replace(".receipt.", ".request."))
    record = json.loads(record_path.read_text())
    record["response"]["content_sha256"] = receipt["answer_sha256"]  # verify checks it too
    record_path.write_text(json.dumps(record, indent=2))


@pytest.fixture
def pull_request(repo: Path, operator: Simulator, make_simulator: MakeSim, cli: Cli) -> Path:
    """A base branch with the manifest, and a pull request that adds a forged 'LGTM' review."""
    write_manifest(repo, "")
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    git(repo, "branch", "-m", "main")
    git(repo, "checkout", "-qb", "pr")
    _forge_review(repo, cli, operator, "LGTM\n")
    assert cli("verify", "reviews").code == 0
    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "forged review")
    operator.reset()
    return repo


def test_a_forged_receipt_is_believed_without_resume_from(pull_request, operator, cli):
    """The attack as it was (and still is, for a batch that trusts its own folder)."""
    r = batch(cli, operator)
    assert r.code == 0
    assert r.json()["entries"][0]["status"] == "skipped"
    assert operator.chat_requests() == []


def test_resume_from_the_base_does_not_believe_a_receipt_the_change_brought(
    pull_request, operator, cli
):
    r = batch(cli, operator, "--resume-from", "main")
    assert r.code == 0, r.err
    assert r.json()["entries"][0]["status"] == "ok"
    assert len(operator.chat_requests()) == 1
    assert "not committed unchanged in main" in r.err


def test_in_ci_a_receipt_the_change_brought_is_not_believed_without_resume_from(
    pull_request, operator, cli, monkeypatch
):
    """``CI=true`` turns the trust rule on for every reader (docs/explanation/trust-model.md),
    batch resume too: a review the pull request committed does not make the entry skipped."""
    monkeypatch.setenv("CI", "true")
    r = batch(cli, operator)
    assert r.code == 0, r.err
    assert r.json()["entries"][0]["status"] == "ok"
    assert len(operator.chat_requests()) == 1
    assert "not resuming from it" in r.err


def test_in_ci_a_review_an_earlier_step_of_the_job_wrote_is_resumed(
    repo, operator, cli, monkeypatch
):
    """Untracked reviews (written in this work tree after the checkout) are the job's own."""
    write_manifest(repo, "")
    monkeypatch.setenv("CI", "true")
    assert batch(cli, operator).code == 0
    operator.reset()
    again = batch(cli, operator)
    assert again.code == 0, again.err
    assert again.json()["entries"][0]["status"] == "skipped"
    assert operator.chat_requests() == []


@pytest.mark.parametrize("how", ["flag", "env"])
def test_trusted_rev_is_batchs_resume_from_under_the_name_every_command_uses(
    pull_request, operator, cli, monkeypatch, how
):
    if how == "env":
        monkeypatch.setenv("DEEPSEEK_REVIEW_TRUSTED_REV", "main")
    r = batch(cli, operator, *(("--trusted-rev", "main") if how == "flag" else ()))
    assert r.code == 0, r.err
    assert r.json()["entries"][0]["status"] == "ok"
    assert len(operator.chat_requests()) == 1


def test_resume_from_the_base_adopts_receipts_committed_there(pull_request, operator, cli):
    r = batch(cli, operator, "--resume-from", "main")
    assert r.code == 0, r.err
    git(pull_request, "add", "-A")
    git(pull_request, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "reviewed")
    operator.reset()
    again = batch(cli, operator, "--resume-from", "HEAD")
    assert again.code == 0, again.err
    assert again.json()["entries"][0]["status"] == "skipped"
    assert operator.chat_requests() == []


def test_resume_from_does_not_believe_a_committed_receipt_changed_in_the_work_tree(
    pull_request, operator, cli
):
    receipt = next((pull_request / "reviews").glob("*.receipt.json"))
    receipt.write_text(receipt.read_text().replace('"created_at"', '"created_at" '))
    r = batch(cli, operator, "--resume-from", "pr")
    assert r.json()["entries"][0]["status"] == "ok"


def test_no_resume_redoes_every_entry(pull_request, operator, cli):
    r = batch(cli, operator, "--no-resume")
    assert r.code == 0, r.err
    assert r.json()["entries"][0]["status"] == "ok"
    assert len(operator.chat_requests()) == 1


def test_resume_from_a_revision_that_is_not_a_commit_exits_2(pull_request, operator, cli):
    r = batch(cli, operator, "--resume-from", "no-such-branch")
    assert r.code == 2
    assert "--trusted-rev 'no-such-branch': not a commit of the repository" in r.err
    assert operator.chat_requests() == []


def test_resume_from_a_revision_that_is_not_a_commit_exits_2_before_any_review_exists(
    repo, operator, cli
):
    write_manifest(repo, "")
    r = batch(cli, operator, "--resume-from", "no-such-branch")
    assert r.code == 2
    assert "--trusted-rev 'no-such-branch': not a commit of the repository" in r.err
    assert operator.chat_requests() == []


def test_resume_from_refuses_an_option_smuggled_as_a_revision(pull_request, operator, cli):
    r = batch(cli, operator, "--resume-from=--output=/tmp/x")
    assert r.code == 2
    assert "not a commit" in r.err


# --------------------------------------------------------------------------- 15. continue


def _cut_chain(repo: Path, cli: Cli, sim: Simulator) -> dict[str, Any]:
    r = cli("run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", sim.base_url,
            "--max-tokens", "30", "--max-continuations", "0", "--json")  # fmt: skip
    assert r.code == 4, r.err
    segment: dict[str, Any] = r.json()["segments"][0]
    return segment


def _point_receipt_at(repo: Path, segment: dict[str, Any], url: str) -> None:
    """The receipt and its request record both name ``url``: the segment still verifies, so
    the trust rule (local use: whatever verifies) lets ``continue`` read it."""
    path = repo / segment["receipt_path"]
    for file in (path, path.with_name(path.name.replace(".receipt.", ".request."))):
        data = json.loads(file.read_text())
        data["endpoint"] = url
        file.write_text(json.dumps(data, indent=2))
    assert cli_verifies(repo, segment["receipt_path"])


def cli_verifies(repo: Path, receipt: str) -> bool:
    from deepseek_review.verification import verify

    return verify([receipt], root=repo).ok


def test_continue_without_a_key_does_not_send_context_where_a_receipt_says(
    repo, make_simulator, cli
):
    sim = make_simulator(answer_words=150)
    segment = _cut_chain(repo, cli, sim)
    _point_receipt_at(repo, segment, f"{REMOTE}/v1/chat/completions")
    sim.reset()
    r = cli("continue", segment["answer_path"])
    assert r.code == 2
    assert "a receipt may name only a loopback endpoint or one the operator chose" in r.err
    assert sim.chat_requests() == []


def test_continue_goes_where_the_operator_says(repo, make_simulator, cli):
    sim = make_simulator(answer_words=150)
    segment = _cut_chain(repo, cli, sim)
    _point_receipt_at(repo, segment, f"{REMOTE}/v1/chat/completions")
    sim.reset()
    r = cli("continue", segment["answer_path"], "--endpoint", sim.base_url)
    assert r.code in (0, 4), r.err
    assert len(sim.chat_requests()) >= 1


def test_continue_to_the_receipts_loopback_endpoint_sends_no_default_key(
    repo, make_simulator, cli, monkeypatch
):
    sim = make_simulator(answer_words=150)
    segment = _cut_chain(repo, cli, sim)
    monkeypatch.setenv("OLLAMA_API_KEY", KEY)
    sim.reset()
    r = cli("continue", segment["answer_path"])
    assert r.code in (0, 4), r.err
    assert sent_secrets(sim) and set(sent_secrets(sim)) == {""}
