"""Signed reviews (issue #14): ``run --sign`` writes an in-toto statement and its SSH
signature beside each receipt; ``verify --allowed-signers`` checks them; plain
``ssh-keygen -Y verify`` does too. Keys are made by the real ssh-keygen for each test."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.support.cli import review
from tests.support.git import git
from tests.support.signing import (
    segment_files,
    signature_check,
    signed_review,
    verify,
)
from tests.support.sshkeys import Key, allowed_signers, make_key, needs_openssh

pytestmark = needs_openssh
Cli = Callable[..., Any]
ROOT = Path(__file__).resolve().parents[2]


# --------------------------------------------------------------------------- what is signed


def test_signed_run_writes_statement_and_signature_beside_the_receipt(repo, cli, simulator, alice):
    signed_review(cli, simulator, alice)
    assert sorted(segment_files(repo)) == [
        ".intoto.json", ".intoto.json.sig", ".md", ".receipt.json", ".request.json"
    ]  # fmt: skip


def test_signed_run_lists_the_statement_and_signature_it_wrote(repo, cli, simulator, alice):
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", simulator.base_url,
            "--sign", "--signing-key", str(alice.private))  # fmt: skip
    assert r.code == 0, r.err
    files = segment_files(repo)
    assert r.out.splitlines() == [
        f"reviews/{files[s].name}"
        for s in (".md", ".receipt.json", ".request.json", ".intoto.json", ".intoto.json.sig")
    ]


def test_signed_run_json_names_the_statement_and_signature(repo, cli, simulator, alice):
    (segment,) = signed_review(cli, simulator, alice)["segments"]
    files = segment_files(repo)
    assert segment["statement_path"] == f"reviews/{files['.intoto.json'].name}"
    assert segment["signature_path"] == f"reviews/{files['.intoto.json.sig'].name}"


def test_unsigned_run_json_has_no_statement_or_signature(repo, cli, simulator):
    (segment,) = review(cli, simulator).json()["segments"]
    assert (segment["statement_path"], segment["signature_path"]) == (None, None)


def test_verify_ok_line_names_the_signer_and_key(repo, cli, simulator, alice, tmp_path):
    signed_review(cli, simulator, alice)
    signers = allowed_signers(tmp_path / "allowed", alice.allowed_line())
    r = cli("verify", "--allowed-signers", str(signers))
    assert r.code == 0, r.err
    receipt = next(f for f in segment_files(repo).values() if f.name.endswith(".receipt.json"))
    fingerprint = verify(cli, signers).json()["receipts"][0]["signer"]["fingerprint"]
    assert (
        f"OK   reviews/{receipt.name} (signed by alice@example.com, key {fingerprint})\n" in r.err
    )


def test_statement_is_an_in_toto_statement_v1_with_the_predicate_schema(
    repo, cli, simulator, alice
):
    signed_review(cli, simulator, alice)
    statement = json.loads(segment_files(repo)[".intoto.json"].read_text())
    layer = json.loads((ROOT / "schemas" / "in-toto-statement-v1.schema.json").read_text())
    pred = json.loads(
        (ROOT / "schemas" / "deepseek-review-signed-review-v1.schema.json").read_text()
    )
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    jsonschema.Draft202012Validator(layer, format_checker=checker).validate(statement)
    jsonschema.Draft202012Validator(pred, format_checker=checker).validate(statement["predicate"])
    assert statement["predicateType"] == pred["$id"]


def test_statement_subjects_are_the_segment_files_with_their_sha256(repo, cli, simulator, alice):
    import hashlib

    signed_review(cli, simulator, alice)
    files = segment_files(repo)
    statement = json.loads(files[".intoto.json"].read_text())
    expected = [
        {
            "name": f"reviews/{files[s].name}",
            "digest": {"sha256": hashlib.sha256(files[s].read_bytes()).hexdigest()},
        }
        for s in (".md", ".receipt.json", ".request.json")
    ]
    assert statement["subject"] == expected


def test_predicate_carries_receipt_record_digest_version_and_server_model(
    repo, cli, simulator, alice
):
    from deepseek_review._version import __version__

    signed_review(cli, simulator, alice)
    files = segment_files(repo)
    predicate = json.loads(files[".intoto.json"].read_text())["predicate"]
    record = json.loads(files[".request.json"].read_text())
    assert predicate["receipt"] == json.loads(files[".receipt.json"].read_text())
    assert predicate["tool"] == {"name": "deepseek-review", "version": __version__}
    assert predicate["requestRecord"]["name"] == f"reviews/{files['.request.json'].name}"
    assert predicate["serverModel"] == record["response"]["model"]


def test_kept_reasoning_is_a_subject_too(repo, cli, make_simulator, alice):
    sim = make_simulator(reasoning_words=5)
    signed_review(cli, sim, alice, "--keep-reasoning")
    files = segment_files(repo)
    names = [s["name"] for s in json.loads(files[".intoto.json"].read_text())["subject"]]
    assert f"reviews/{files['.reasoning.md'].name}" in names


def test_private_key_and_its_path_appear_in_no_output_or_file(repo, cli, simulator, alice):
    r = review(cli, simulator, "--sign", "--signing-key", str(alice.private))
    secret_lines = alice.private.read_text().splitlines()[1:-1]
    written = "".join(p.read_text() for p in segment_files(repo).values())
    for text in (r.out, r.err, written):
        assert str(alice.private) not in text
        assert not any(line in text for line in secret_lines)


# --------------------------------------------------------------------------- verify


@pytest.mark.parametrize("kind", ["ed25519", "rsa", "ecdsa"])
def test_signature_round_trips_and_json_names_principal_and_fingerprint(
    repo, cli, simulator, tmp_path, kind
):
    key = make_key(tmp_path / "keys", kind, "bob@example.com")
    signed_review(cli, simulator, key)
    v = verify(cli, allowed_signers(tmp_path / "allowed", key.allowed_line()))
    assert v.code == 0, v.err
    fingerprint = subprocess.run(
        ["ssh-keygen", "-l", "-E", "sha256", "-f", str(key.public)], capture_output=True, text=True
    ).stdout.split()[1]
    assert v.json()["receipts"][0]["signer"]["principal"] == "bob@example.com"
    assert v.json()["receipts"][0]["signer"]["fingerprint"] == fingerprint
    assert signature_check(v) == {
        "name": "signature", "status": "ok", "detail": f"signed by bob@example.com ({fingerprint})"
    }  # fmt: skip


@pytest.mark.parametrize("kind", ["ed25519", "rsa"])
def test_plain_ssh_keygen_verifies_the_signature(repo, cli, simulator, tmp_path, kind):
    key = make_key(tmp_path / "keys", kind, "alice@example.com")
    signed_review(cli, simulator, key)
    files = segment_files(repo)
    signers = allowed_signers(
        tmp_path / "allowed", key.allowed_line('namespaces="deepseek-review"')
    )
    done = subprocess.run(
        ["ssh-keygen", "-Y", "verify", "-f", str(signers), "-I", "alice@example.com",
         "-n", "deepseek-review", "-s", str(files[".intoto.json.sig"])],
        input=files[".intoto.json"].read_text(), capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert 'Good "deepseek-review" signature for alice@example.com' in done.stdout


def test_signature_by_a_key_not_in_allowed_signers_fails(repo, cli, simulator, tmp_path, alice):
    signed_review(cli, simulator, alice)
    mallory = make_key(tmp_path / "other", "ed25519", "mallory@example.com")
    v = verify(cli, allowed_signers(tmp_path / "allowed", mallory.allowed_line()))
    assert v.code == 9
    assert signature_check(v)["status"] == "fail"
    assert signature_check(v)["detail"].startswith("signed by a key not in the allowed signers")
    assert "failed verification (signature: 1)" in v.err.splitlines()[-1]


def test_an_expired_principal_fails(repo, cli, simulator, tmp_path, alice):
    signed_review(cli, simulator, alice)
    v = verify(cli, allowed_signers(tmp_path / "a", alice.allowed_line('valid-before="20200101Z"')))
    assert v.code == 9
    assert signature_check(v)["detail"].startswith(
        "alice@example.com expired at 2020-01-01T00:00:00+00:00 (SHA256:"
    )


def test_a_principal_not_yet_valid_fails(repo, cli, simulator, tmp_path, alice):
    signed_review(cli, simulator, alice)
    v = verify(cli, allowed_signers(tmp_path / "a", alice.allowed_line('valid-after="29990101Z"')))
    assert v.code == 9
    assert "is not valid before 2999-01-01" in signature_check(v)["detail"]


def test_a_principal_allowed_only_for_another_namespace_fails(
    repo, cli, simulator, tmp_path, alice
):
    signed_review(cli, simulator, alice)
    v = verify(cli, allowed_signers(tmp_path / "a", alice.allowed_line('namespaces="git"')))
    assert v.code == 9
    assert signature_check(v)["detail"].startswith(
        "alice@example.com may not sign in the deepseek-review namespace (SHA256:"
    )


@pytest.mark.parametrize(
    "options", ['namespaces="git,deepseek-review"', 'Namespaces="git,deepseek-*"']
)
def test_a_principal_allowed_for_several_namespaces_including_ours_verifies(
    repo, cli, simulator, tmp_path, alice, options
):
    """Issue #29, item 13: the quoted list is split after the quotes come off, as
    ssh-keygen splits it."""
    signed_review(cli, simulator, alice)
    v = verify(cli, allowed_signers(tmp_path / "a", alice.allowed_line(options)))
    assert v.code == 0, v.err
    assert signature_check(v)["status"] == "ok"


@pytest.mark.parametrize("namespace", ["git", "file"])
def test_a_signature_made_for_another_namespace_fails(
    repo, cli, simulator, tmp_path, alice, namespace
):
    signed_review(cli, simulator, alice)
    files = segment_files(repo)
    other_sig = subprocess.run(
        ["ssh-keygen", "-q", "-Y", "sign", "-n", namespace, "-f", str(alice.private)],
        input=files[".intoto.json"].read_bytes(), capture_output=True, check=True,
    ).stdout  # fmt: skip
    files[".intoto.json.sig"].write_bytes(other_sig)
    v = verify(cli, allowed_signers(tmp_path / "a", alice.allowed_line('namespaces="*"')))
    assert v.code == 9
    assert signature_check(v)["detail"] == (
        f"signed for the {namespace!r} namespace, not 'deepseek-review'"
    )


@pytest.mark.parametrize("suffix", [".md", ".receipt.json", ".request.json", ".reasoning.md"])
def test_any_file_of_a_signed_segment_changed_by_one_byte_fails_by_name(
    repo, cli, make_simulator, tmp_path, alice, suffix
):
    signed_review(cli, make_simulator(reasoning_words=5), alice, "--keep-reasoning")
    path = segment_files(repo)[suffix]
    data = bytearray(path.read_bytes())
    data[-2] = data[-2] ^ 0x01  # one bit of one byte, before the final newline
    path.write_bytes(bytes(data))
    v = verify(cli, allowed_signers(tmp_path / "a", alice.allowed_line()))
    assert v.code == 9
    assert signature_check(v)["detail"] == f"changed since it was signed: reviews/{path.name}"


def test_a_changed_statement_fails_the_signature(repo, cli, simulator, tmp_path, alice):
    signed_review(cli, simulator, alice)
    path = segment_files(repo)[".intoto.json"]
    path.write_bytes(path.read_bytes().replace(b'"version"', b'"Version"'))
    v = verify(cli, allowed_signers(tmp_path / "a", alice.allowed_line()))
    assert v.code == 9
    assert signature_check(v)["detail"].startswith("the signature does not verify")


def test_a_statement_swapped_between_two_segments_fails(repo, cli, simulator, tmp_path, alice):
    signed_review(cli, simulator, alice, "--topic", "one")
    signed_review(cli, simulator, alice, "--topic", "two")
    reviews = repo / "reviews"
    one = next(reviews.glob("one_*.intoto.json"))
    two = next(reviews.glob("two_*.intoto.json"))
    for suffix in ("", ".sig"):
        data = Path(f"{one}{suffix}").read_bytes()
        Path(f"{one}{suffix}").write_bytes(Path(f"{two}{suffix}").read_bytes())
        Path(f"{two}{suffix}").write_bytes(data)
    v = verify(cli, allowed_signers(tmp_path / "a", alice.allowed_line()))
    assert v.code == 9
    details = [signature_check_of(r) for r in v.json()["receipts"]]
    assert all(
        d.startswith("the signed statement is another segment's (it covers reviews/")
        for d in details
    )


def _resign(files: dict[str, Path], key: Key, statement: dict[str, Any]) -> None:
    """The segment's statement replaced by ``statement``, signed again by ``key``: what a
    key holder (or another tool with the key) could write."""
    data = (json.dumps(statement, indent=2) + "\n").encode()
    files[".intoto.json"].write_bytes(data)
    sig = subprocess.run(
        ["ssh-keygen", "-q", "-Y", "sign", "-n", "deepseek-review", "-f", str(key.private)],
        input=data, capture_output=True, check=True,
    ).stdout  # fmt: skip
    files[".intoto.json.sig"].write_bytes(sig)


@pytest.mark.parametrize(
    ("variant", "also"),
    [
        ("same name, same digest", ""),
        ("same name, a wrong digest first", ""),
        ("same name, a wrong digest last", ""),
        ("./ before the name", " (also as ./{name})"),
        ("the name in upper case", " (also as {upper})"),
        ("a/../ inside the name", " (also as x/../{name})"),
    ],
)
def test_a_signed_statement_listing_a_subject_twice_fails_naming_both(
    repo, cli, simulator, tmp_path, alice, variant, also
):
    """Issue #29, item 14: a reader keeping the first digest and one keeping the last would
    vouch for different bytes, so neither is kept (the in-toto spec: names SHOULD be unique)."""
    signed_review(cli, simulator, alice)
    files = segment_files(repo)
    statement = json.loads(files[".intoto.json"].read_text())
    answer = statement["subject"][0]
    name = answer["name"]
    wrong = {"name": name, "digest": {"sha256": "0" * 64}}
    other = {
        "same name, same digest": [dict(answer)],
        "same name, a wrong digest first": [],
        "same name, a wrong digest last": [wrong],
        "./ before the name": [{**answer, "name": "./" + name}],
        "the name in upper case": [{**answer, "name": name.upper()}],
        "a/../ inside the name": [{**answer, "name": "x/../" + name}],
    }[variant]
    first = [wrong] if variant == "same name, a wrong digest first" else []
    statement["subject"] = first + statement["subject"] + other
    _resign(files, alice, statement)
    v = verify(cli, allowed_signers(tmp_path / "a", alice.allowed_line()))
    assert v.code == 9
    also = also.format(name=name, upper=name.upper())
    assert signature_check(v)["detail"] == (
        f"reviews/{files['.intoto.json'].name}: lists the subject {name} more than once{also}"
    )


def test_a_resigned_statement_listing_each_file_once_still_verifies(
    repo, cli, simulator, tmp_path, alice
):
    """The re-signing the duplicate tests use, without a duplicate: the statement holds."""
    signed_review(cli, simulator, alice)
    files = segment_files(repo)
    _resign(files, alice, json.loads(files[".intoto.json"].read_text()))
    v = verify(cli, allowed_signers(tmp_path / "a", alice.allowed_line()))
    assert v.code == 0, v.err
    assert signature_check(v)["status"] == "ok"


def signature_check_of(receipt: dict[str, Any]) -> str:
    return str(next(c["detail"] for c in receipt["checks"] if c["name"] == "signature"))


def test_a_receipt_edited_with_recomputed_hashes_is_caught_only_by_the_signature(
    repo, cli, simulator, tmp_path, alice
):
    signed_review(cli, simulator, alice)
    files = segment_files(repo)
    answer = files[".md"]
    answer.write_text("Looks fine to me.\n", encoding="utf-8")
    import hashlib

    new_sha = "sha256:" + hashlib.sha256(answer.read_bytes()).hexdigest()
    receipt = json.loads(files[".receipt.json"].read_text())
    receipt["answer_sha256"] = new_sha
    receipt["usage"] = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    files[".receipt.json"].write_text(json.dumps(receipt, indent=2) + "\n")
    record = json.loads(files[".request.json"].read_text())
    record["response"]["content_sha256"] = new_sha
    record["response"]["usage"] = receipt["usage"]
    files[".request.json"].write_text(json.dumps(record, indent=2) + "\n")
    unsigned_view = cli("verify", "--json")
    assert unsigned_view.code == 0, unsigned_view.err  # consistent: only a signature tells
    v = verify(cli, allowed_signers(tmp_path / "a", alice.allowed_line()))
    assert v.code == 9
    assert v.json()["receipts"][0]["failed"] == ["signature"]


# --------------------------------------------------------------------------- unsigned


def test_an_unsigned_segment_is_a_warning_once_allowed_signers_are_given(
    repo, cli, simulator, tmp_path, alice
):
    assert review(cli, simulator).code == 0
    v = verify(cli, allowed_signers(tmp_path / "a", alice.allowed_line()))
    assert v.code == 0
    assert signature_check(v) == {"name": "signature", "status": "warn", "detail": "unsigned"}


def test_require_signature_fails_an_unsigned_segment(repo, cli, simulator, tmp_path, alice):
    assert review(cli, simulator).code == 0
    v = verify(cli, allowed_signers(tmp_path / "a", alice.allowed_line()), "--require-signature")
    assert v.code == 9
    assert signature_check(v) == {"name": "signature", "status": "fail", "detail": "unsigned"}


def test_require_signature_without_allowed_signers_is_a_usage_error(repo, cli, simulator):
    assert review(cli, simulator).code == 0
    v = cli("verify", "--require-signature")
    assert v.code == 2
    assert v.err.strip() == (
        "deepseek-review: error: --require-signature needs --allowed-signers "
        "(or git's gpg.ssh.allowedSignersFile): whose signatures count?"
    )


def test_without_allowed_signers_a_signature_is_noted_not_checked(repo, cli, simulator, alice):
    signed_review(cli, simulator, alice)
    v = cli("verify", "--json")
    assert v.code == 0
    assert signature_check(v) == {
        "name": "signature", "status": "info", "detail": "signed; not checked (no allowed signers)"
    }  # fmt: skip


def test_unsigned_reviews_without_allowed_signers_report_no_signature_check(repo, cli, simulator):
    assert review(cli, simulator).code == 0
    v = cli("verify", "--json")
    assert [c["name"] for c in v.json()["receipts"][0]["checks"]] == [
        "schema", "answer", "chain", "context", "prompt"
    ]  # fmt: skip


def test_allowed_signers_from_git_config_is_used(
    repo, cli, simulator, tmp_path, alice, monkeypatch
):
    signed_review(cli, simulator, alice)
    signers = allowed_signers(tmp_path / "a", alice.allowed_line())
    git(repo, "config", "--global", "gpg.ssh.allowedSignersFile", str(signers))
    v = cli("verify", "--json", "--require-signature")
    assert v.code == 0, v.err
    assert signature_check(v)["status"] == "ok"


def test_a_deleted_request_record_of_a_signed_segment_fails_by_name(
    repo, cli, simulator, tmp_path, alice
):
    signed_review(cli, simulator, alice)
    record = segment_files(repo)[".request.json"]
    record.unlink()
    v = verify(cli, allowed_signers(tmp_path / "a", alice.allowed_line()))
    assert v.code == 9
    assert signature_check(v)["detail"] == f"missing since it was signed: reviews/{record.name}"


def test_the_commits_a_review_was_pinned_to_are_in_the_predicate():
    from deepseek_review.signing.statement import SegmentFiles, predicate

    head, base = "a" * 40, "b" * 40
    record = {"response": {"model": "m"}, "git": {"commits": {"base": base, "head": head}}}
    seg = SegmentFiles(
        "r/x.receipt.json",
        {
            "answer": ("r/x.md", b"answer\n"),
            "receipt": ("r/x.receipt.json", b'{"schema": "s"}'),
            "record": ("r/x.request.json", json.dumps(record).encode()),
        },
    )
    assert predicate(seg)["pinnedCommits"] == [
        {"role": "base", "commit": base}, {"role": "head", "commit": head}
    ]  # fmt: skip
