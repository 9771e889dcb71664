"""The in-process sshsig verifier agrees with ``ssh-keygen -Y verify`` on every key type the
tests can make, for good signatures and bad ones (issue #14: checked against ssh-keygen)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from deepseek_review.signing import verifier
from tests.sshkeys import Key, allowed_signers, make_key, needs_openssh

pytestmark = needs_openssh
KINDS = ["ed25519", "rsa", "ecdsa-256", "ecdsa-384", "ecdsa-521"]
MESSAGE = b'{"_type": "https://in-toto.io/Statement/v1"}\n'


def _key(tmp_path: Path, kind: str) -> Key:
    if kind.startswith("ecdsa-"):
        path = tmp_path / f"id_{kind}"
        bits = kind.split("-")[1]
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ecdsa", "-b", bits, "-N", "", "-C", "a@x", "-f", str(path)],
            check=True,
        )
        return Key(path, "a@x")
    return make_key(tmp_path, kind, "a@x")


def _sign(key: Key, data: bytes, namespace: str = "deepseek-review") -> bytes:
    return subprocess.run(
        ["ssh-keygen", "-q", "-Y", "sign", "-n", namespace, "-f", str(key.private)],
        input=data, capture_output=True, check=True,
    ).stdout  # fmt: skip


def _ssh_keygen_accepts(key: Key, tmp_path: Path, data: bytes, sig: bytes) -> bool:
    signers = allowed_signers(tmp_path / "allowed", key.allowed_line())
    (tmp_path / "x.sig").write_bytes(sig)
    done = subprocess.run(
        ["ssh-keygen", "-Y", "verify", "-f", str(signers), "-I", "a@x", "-n", "deepseek-review",
         "-s", str(tmp_path / "x.sig")],
        input=data, capture_output=True,
    )  # fmt: skip
    return done.returncode == 0


@pytest.mark.parametrize("kind", KINDS)
def test_a_good_signature_is_accepted_by_both(tmp_path, kind):
    key = _key(tmp_path, kind)
    sig = _sign(key, MESSAGE)
    assert _ssh_keygen_accepts(key, tmp_path, MESSAGE, sig)
    assert verifier.verify(MESSAGE, sig, "deepseek-review") is True


@pytest.mark.parametrize("kind", KINDS)
def test_a_changed_message_is_refused_by_both(tmp_path, kind):
    key = _key(tmp_path, kind)
    sig = _sign(key, MESSAGE)
    changed = MESSAGE.replace(b"v1", b"v2")
    assert not _ssh_keygen_accepts(key, tmp_path, changed, sig)
    assert verifier.verify(changed, sig, "deepseek-review") is False


@pytest.mark.parametrize("kind", KINDS)
def test_another_namespace_is_refused_by_both(tmp_path, kind):
    key = _key(tmp_path, kind)
    sig = _sign(key, MESSAGE, namespace="git")
    assert not _ssh_keygen_accepts(key, tmp_path, MESSAGE, sig)
    assert verifier.verify(MESSAGE, sig, "deepseek-review") is False


@pytest.mark.parametrize("kind", ["ed25519", "rsa", "ecdsa-256"])
def test_a_signature_with_a_flipped_byte_is_refused_by_both(tmp_path, kind):
    import base64

    key = _key(tmp_path, kind)
    lines = _sign(key, MESSAGE).splitlines()
    blob = bytearray(base64.b64decode(b"".join(lines[1:-1])))
    blob[-5] ^= 0x01  # inside the signature bytes, at the end of the blob
    armored = b"\n".join([lines[0], base64.b64encode(bytes(blob)), lines[-1]]) + b"\n"
    assert not _ssh_keygen_accepts(key, tmp_path, MESSAGE, armored)
    assert verifier.verify(MESSAGE, armored, "deepseek-review") is False


def test_the_ssh_keygen_route_agrees_where_the_verifier_steps_aside(
    repo, cli, simulator, tmp_path, monkeypatch
):
    """Key types the in-process verifier does not handle (security keys) go to ssh-keygen:
    forced here for an ed25519 key, whose good and changed statements it judges alike."""
    from tests.conftest import run_review

    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    monkeypatch.setattr(verifier, "verify", lambda *a, **k: None)
    key = make_key(tmp_path / "keys", "ed25519", "a@x")
    assert run_review(cli, simulator, "--sign", "--signing-key", str(key.private)).code == 0
    signers = allowed_signers(tmp_path / "allowed", key.allowed_line())
    assert cli("verify", "--allowed-signers", str(signers)).code == 0
    statement = next((repo / "reviews").glob("*.intoto.json"))
    statement.write_bytes(statement.read_bytes().replace(b'"tool"', b'"Tool"'))
    v = cli("verify", "--allowed-signers", str(signers), "--json")
    assert v.code == 9
    detail = next(c for c in v.json()["receipts"][0]["checks"] if c["name"] == "signature")
    assert (
        detail["detail"]
        == "the signature does not verify (Signature verification failed: incorrect signature)"
    )
