"""Signing keys (issue #14): where the key comes from, what is refused before anything is
sent, keys held only by an ssh-agent, and ``sign`` completing unsigned segments (a crash
between a receipt and its signature included)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests.support.cli import files_under, review
from tests.support.git import git
from tests.support.sshkeys import (
    agent_add,
    allowed_signers,
    make_key,
    needs_openssh,
    ssh_agent,
)

pytestmark = needs_openssh
Cli = Callable[..., Any]


def last_line(err: str) -> str:
    return err.strip().splitlines()[-1]


def signature_status(cli: Cli, signers: Path) -> list[str]:
    v = cli("verify", "--allowed-signers", str(signers), "--json")
    return [
        next(c["status"] for c in r["checks"] if c["name"] == "signature")
        for r in v.json()["receipts"]
    ]


# --------------------------------------------------------------------------- pre-flight


def test_a_missing_key_file_is_one_line_before_anything_is_sent(repo, cli, simulator, tmp_path):
    missing = tmp_path / "nope"
    r = review(cli, simulator, "--sign", "--signing-key", str(missing))
    assert r.code == 2
    assert r.err.strip() == f"deepseek-review: error: --signing-key {missing}: no such key file"
    assert simulator.chat_requests() == []
    assert files_under(repo / "reviews") == []


def test_no_key_anywhere_is_one_line_naming_where_to_set_one(repo, cli, simulator):
    r = review(cli, simulator, "--sign")
    assert r.code == 2
    assert r.err.strip() == (
        "deepseek-review: error: no signing key: give --signing-key or set "
        "DEEPSEEK_REVIEW_SIGNING_KEY, or set git's user.signingkey with gpg.format ssh"
    )
    assert simulator.chat_requests() == []


def test_a_missing_key_file_the_environment_named_is_blamed_on_the_variable(
    repo, cli, simulator, tmp_path, monkeypatch
):
    missing = tmp_path / "nope"
    monkeypatch.setenv("DEEPSEEK_REVIEW_SIGNING_KEY", str(missing))
    for sign in (("--sign",), ()):
        if not sign:
            monkeypatch.setenv("DEEPSEEK_REVIEW_SIGN", "true")
        r = review(cli, simulator, *sign)
        assert r.code == 2
        assert r.err.strip() == (
            f"deepseek-review: error: DEEPSEEK_REVIEW_SIGNING_KEY {missing}: no such key file"
        )
    assert simulator.chat_requests() == []


def test_a_passphrase_protected_key_the_environment_named_is_blamed_on_the_variable(
    repo, cli, simulator, tmp_path, monkeypatch
):
    key = make_key(tmp_path / "keys", "ed25519", "alice@example.com", passphrase="s3cret-pass")
    monkeypatch.setenv("DEEPSEEK_REVIEW_SIGNING_KEY", str(key.private))
    r = review(cli, simulator, "--sign")
    assert r.code == 2
    assert r.err.strip().startswith(
        f"deepseek-review: error: DEEPSEEK_REVIEW_SIGNING_KEY {key.private}: protected by a "
        "passphrase"
    )
    assert simulator.chat_requests() == []


def test_a_passphrase_protected_key_without_an_agent_fails_before_sending(
    repo, cli, simulator, tmp_path
):
    key = make_key(tmp_path / "keys", "ed25519", "alice@example.com", passphrase="s3cret-pass")
    r = review(cli, simulator, "--sign", "--signing-key", str(key.private))
    assert r.code == 2
    assert r.err.strip() == (
        f"deepseek-review: error: --signing-key {key.private}: protected by a passphrase and "
        "not in ssh-agent (add it with ssh-add; nothing here asks for a passphrase)"
    )
    assert simulator.chat_requests() == []


def test_a_missing_ssh_keygen_fails_before_sending(
    repo, cli, simulator, alice, tmp_path, monkeypatch
):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").symlink_to(
        subprocess.run(["which", "git"], capture_output=True, text=True).stdout.strip()
    )
    monkeypatch.setenv("PATH", str(bin_dir))
    r = review(cli, simulator, "--sign", "--signing-key", str(alice.private))
    assert r.code == 2
    assert r.err.strip() == (
        f"deepseek-review: error: ssh-keygen not found on PATH ({bin_dir}; only absolute "
        "entries are searched): signing needs OpenSSH's ssh-keygen"
    )
    assert simulator.chat_requests() == []


def test_the_key_comes_from_git_when_gpg_format_is_ssh(repo, cli, simulator, alice, tmp_path):
    git(repo, "config", "--global", "gpg.format", "ssh")
    git(repo, "config", "--global", "user.signingkey", str(alice.private))
    assert review(cli, simulator, "--sign").code == 0
    assert signature_status(cli, allowed_signers(tmp_path / "a", alice.allowed_line())) == ["ok"]


def test_the_repositorys_own_git_config_does_not_choose_the_key(repo, cli, simulator, alice):
    git(repo, "config", "gpg.format", "ssh")  # .git/config: the repository's, not the user's
    git(repo, "config", "user.signingkey", str(alice.private))
    r = review(cli, simulator, "--sign")
    assert r.code == 2
    assert last_line(r.err).startswith("deepseek-review: error: no signing key")


def test_the_repository_config_may_not_name_the_signing_key(repo, cli, simulator, alice):
    (repo / ".deepseek-review.toml").write_text(f'signing_key = "{alice.private}"\n')
    r = review(cli, simulator, "--sign")
    assert r.code == 2
    assert r.err.strip() == (
        "deepseek-review: error: .deepseek-review.toml signing_key cannot be set in the "
        "repository's config (a file under review must not choose which of your keys signs); "
        "use --signing-key or DEEPSEEK_REVIEW_SIGNING_KEY"
    )
    assert simulator.chat_requests() == []


def test_the_repository_config_may_not_name_the_allowed_signers(
    repo, cli, simulator, alice, tmp_path
):
    signers = allowed_signers(tmp_path / "a", alice.allowed_line())
    (repo / ".deepseek-review.toml").write_text(f'allowed_signers = "{signers}"\n')
    r = cli("verify")
    assert r.code == 2
    assert (
        "allowed_signers cannot be set in the repository's config (a file under review "
        "must not choose whose signatures are believed)" in r.err
    )


def test_the_repository_config_may_ask_for_signing(repo, cli, simulator, alice, tmp_path):
    (repo / ".deepseek-review.toml").write_text("sign = true\n")
    assert review(cli, simulator, "--signing-key", str(alice.private)).code == 0
    assert signature_status(cli, allowed_signers(tmp_path / "a", alice.allowed_line())) == ["ok"]


def test_the_signing_key_from_the_environment(repo, cli, simulator, alice, tmp_path, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_REVIEW_SIGNING_KEY", str(alice.private))
    assert review(cli, simulator, "--sign").code == 0
    assert signature_status(cli, allowed_signers(tmp_path / "a", alice.allowed_line())) == ["ok"]


# --------------------------------------------------------------------------- ssh-agent


def test_a_key_held_only_by_an_agent_signs_given_its_public_half(
    repo, cli, simulator, tmp_path, monkeypatch
):
    unlocked = make_key(tmp_path / "plain", "ed25519", "carol@example.com")
    with ssh_agent(tmp_path) as sock:
        agent_add(sock, unlocked)
        unlocked.private.unlink()  # from now on only the agent holds it
        monkeypatch.setenv("SSH_AUTH_SOCK", sock)
        r = review(cli, simulator, "--sign", "--signing-key", str(unlocked.public))
    assert r.code == 0, r.err
    signers = allowed_signers(tmp_path / "a", unlocked.allowed_line())
    assert signature_status(cli, signers) == ["ok"]


def test_a_public_key_whose_private_half_no_agent_holds_fails_before_sending(
    repo, cli, simulator, tmp_path, monkeypatch
):
    key = make_key(tmp_path / "keys", "ed25519", "alice@example.com")
    key.private.unlink()  # only the public half is left, and the agent is empty
    with ssh_agent(tmp_path) as sock:
        monkeypatch.setenv("SSH_AUTH_SOCK", sock)
        r = review(cli, simulator, "--sign", "--signing-key", str(key.public))
    assert r.code == 2
    assert "ssh-keygen could not sign" in r.err
    assert simulator.chat_requests() == []


# --------------------------------------------------------------------------- sign


def test_sign_signs_existing_unsigned_reviews(repo, cli, simulator, alice, tmp_path):
    assert review(cli, simulator).code == 0
    r = cli("sign", "--signing-key", str(alice.private), "--json")
    assert r.code == 0, r.err
    assert len(r.json()["signed"]) == 1
    assert last_line(r.err) == "deepseek-review: sign: 1 signed, 0 already signed, 0 refused"
    assert signature_status(cli, allowed_signers(tmp_path / "a", alice.allowed_line())) == ["ok"]


def test_sign_leaves_signed_segments_as_they_are(repo, cli, simulator, alice):
    assert review(cli, simulator, "--sign", "--signing-key", str(alice.private)).code == 0
    sigs = {p: p.read_bytes() for p in (repo / "reviews").glob("*.sig")}
    r = cli("sign", "--signing-key", str(alice.private))
    assert r.code == 0
    assert last_line(r.err) == "deepseek-review: sign: 0 signed, 1 already signed, 0 refused"
    assert {p: p.read_bytes() for p in (repo / "reviews").glob("*.sig")} == sigs


def test_sign_refuses_a_segment_that_fails_verification(repo, cli, simulator, alice):
    assert review(cli, simulator).code == 0
    answer = next((repo / "reviews").glob("*_????????T??????Z.md"))
    answer.write_text("edited\n")
    r = cli("sign", "--signing-key", str(alice.private))
    assert r.code == 9
    assert last_line(r.err) == "deepseek-review: error: 1 segment not signed: it fails verification"
    assert not list((repo / "reviews").glob("*.intoto.json*"))


def test_a_crash_between_receipt_and_signature_is_completed_by_sign(
    repo, simulator, cli, alice, tmp_path
):
    env = {**os.environ, "DEEPSEEK_REVIEW_CRASH_AT": "after-receipt:1", "NO_COLOR": "1"}
    proc = subprocess.run(
        [sys.executable, "-m", "deepseek_review", "run", "-c", "docs/spec.md", "-p", "x",
         "--endpoint", simulator.base_url, "--sign", "--signing-key", str(alice.private)],
        cwd=repo, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert proc.returncode == -9, proc.stderr  # killed right after the receipt
    signers = allowed_signers(tmp_path / "a", alice.allowed_line())
    assert signature_status(cli, signers) == ["warn"]  # valid, unsigned
    assert cli("sign", "--signing-key", str(alice.private)).code == 0
    assert signature_status(cli, signers) == ["ok"]


def test_sign_completes_a_statement_written_without_its_signature(
    repo, cli, simulator, alice, tmp_path
):
    assert review(cli, simulator, "--sign", "--signing-key", str(alice.private)).code == 0
    sig = next((repo / "reviews").glob("*.intoto.json.sig"))
    sig.unlink()  # as a kill between the statement and its signature leaves it
    signers = allowed_signers(tmp_path / "a", alice.allowed_line())
    v = cli("verify", "--allowed-signers", str(signers), "--json")
    detail = next(c for c in v.json()["receipts"][0]["checks"] if c["name"] == "signature")
    assert detail["detail"].startswith("a statement without its signature")
    assert cli("sign", "--signing-key", str(alice.private)).code == 0
    assert signature_status(cli, signers) == ["ok"]


def test_sign_refuses_a_leftover_statement_that_no_longer_matches(repo, cli, simulator, alice):
    assert review(cli, simulator, "--sign", "--signing-key", str(alice.private)).code == 0
    next((repo / "reviews").glob("*.intoto.json.sig")).unlink()
    statement = next((repo / "reviews").glob("*.intoto.json"))
    data = json.loads(statement.read_text())
    data["predicate"]["serverModel"] = "gpt-5"
    statement.write_text(json.dumps(data))
    r = cli("sign", "--signing-key", str(alice.private))
    assert r.code == 10
    assert "an unsigned statement that does not match its segment's files" in last_line(r.err)


def test_continue_signs_the_segments_it_adds(repo, cli, simulator, alice, tmp_path):
    first = review(cli, simulator, "--max-tokens", "20", "--max-continuations", "0")
    assert first.code == 4, first.err
    answer = first.json()["segments"][-1]["answer_path"]
    r = cli("continue", answer, "--sign", "--signing-key", str(alice.private),
            "--retry-wait", "0.01", "--max-continuations", "1")  # fmt: skip
    assert r.code in (0, 4), r.err
    signers = allowed_signers(tmp_path / "a", alice.allowed_line())
    assert signature_status(cli, signers) == ["warn", "ok"]  # the primary was written unsigned


def test_batch_sign_signs_every_entrys_segments(repo, cli, simulator, alice, tmp_path):
    entries = [
        f'[[review]]\ntopic = "t{i}"\nprompt = "Check."\ncontext = "docs/spec.md"\n'
        for i in range(3)
    ]
    (repo / "reviews.toml").write_text("\n".join(entries))
    r = cli("batch", "reviews.toml", "--endpoint", simulator.base_url, "-j", "3",
            "--sign", "--signing-key", str(alice.private))  # fmt: skip
    assert r.code == 0, r.err
    signers = allowed_signers(tmp_path / "a", alice.allowed_line())
    assert signature_status(cli, signers) == ["ok", "ok", "ok"]


def test_batch_sign_with_a_missing_key_sends_nothing(repo, cli, simulator, tmp_path):
    (repo / "reviews.toml").write_text(
        '[[review]]\ntopic = "t"\nprompt = "C."\ncontext = "docs/spec.md"\n'
    )
    r = cli("batch", "reviews.toml", "--endpoint", simulator.base_url, "--sign",
            "--signing-key", str(tmp_path / "nope"))  # fmt: skip
    assert r.code == 2
    assert (
        last_line(r.err)
        == f"deepseek-review: error: --signing-key {tmp_path / 'nope'}: no such key file"
    )
    assert simulator.chat_requests() == []


def test_a_manifest_may_not_name_the_signing_key(repo, cli, simulator, alice):
    (repo / "reviews.toml").write_text(
        f'[defaults]\nsigning_key = "{alice.private}"\n\n'
        '[[review]]\ntopic = "t"\nprompt = "C."\ncontext = "docs/spec.md"\n'
    )
    r = cli("batch", "reviews.toml", "--endpoint", simulator.base_url, "--sign")
    assert r.code == 3
    assert (
        "[defaults] (line 2): 'signing_key' cannot be set in a manifest (a file under review "
        "must not choose which of your keys signs); use --signing-key or "
        "DEEPSEEK_REVIEW_SIGNING_KEY"
    ) in last_line(r.err)
    assert simulator.chat_requests() == []


def test_an_allowed_signers_line_that_is_not_one_is_a_config_error(repo, cli, simulator, tmp_path):
    assert review(cli, simulator).code == 0
    signers = allowed_signers(tmp_path / "a", "# who may sign", "alice@example.com ssh-ed25519")
    r = cli("verify", "--allowed-signers", str(signers))
    assert r.code == 2
    assert r.err.strip() == (
        f"deepseek-review: error: {signers}:2: expected principals [options] keytype key"
    )


def test_the_library_signs_what_it_writes_inside_signed_with(repo, cli, simulator, alice, tmp_path):
    import deepseek_review

    key = deepseek_review.signing_key(True, str(alice.private))
    with deepseek_review.signed_with(key):
        result = deepseek_review.review(
            context=["docs/spec.md"], prompt="Check.", endpoint=simulator.base_url
        )
    assert isinstance(result, deepseek_review.ReviewResult)
    assert (
        repo / result.segments[0].receipt_path.replace(".receipt.json", ".intoto.json.sig")
    ).exists()
    assert signature_status(cli, allowed_signers(tmp_path / "a", alice.allowed_line())) == ["ok"]
