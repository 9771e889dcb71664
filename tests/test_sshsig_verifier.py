"""The in-process sshsig verifier agrees with ``ssh-keygen -Y verify`` on every key type the
tests can make, for good signatures and bad ones (issue #14: checked against ssh-keygen)."""

from __future__ import annotations

import base64
import hashlib
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import padding

from deepseek_review.signing import sshsig, verifier
from tests.support.sshkeys import (
    HAVE_OPENSSL,
    KINDS,
    MESSAGE,
    Key,
    allowed_signers,
    armor,
    key_of_kind,
    make_key,
    needs_openssh,
    sign_message,
    small_rsa_key,
)

pytestmark = needs_openssh


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
    key = key_of_kind(tmp_path, kind)
    sig = sign_message(key, MESSAGE)
    assert _ssh_keygen_accepts(key, tmp_path, MESSAGE, sig)
    assert verifier.verify(MESSAGE, sig, "deepseek-review") is True


@pytest.mark.parametrize("kind", KINDS)
def test_a_changed_message_is_refused_by_both(tmp_path, kind):
    key = key_of_kind(tmp_path, kind)
    sig = sign_message(key, MESSAGE)
    changed = MESSAGE.replace(b"v1", b"v2")
    assert not _ssh_keygen_accepts(key, tmp_path, changed, sig)
    assert verifier.verify(changed, sig, "deepseek-review") is False


@pytest.mark.parametrize("kind", KINDS)
def test_another_namespace_is_refused_by_both(tmp_path, kind):
    key = key_of_kind(tmp_path, kind)
    sig = sign_message(key, MESSAGE, namespace="git")
    assert not _ssh_keygen_accepts(key, tmp_path, MESSAGE, sig)
    assert _refused(sig)


@pytest.mark.parametrize("kind", ["ed25519", "rsa", "ecdsa-256"])
def test_a_signature_with_a_flipped_byte_is_refused_by_both(tmp_path, kind):
    key = key_of_kind(tmp_path, kind)
    lines = sign_message(key, MESSAGE).splitlines()
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
    from tests.support.cli import review

    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    monkeypatch.setattr(verifier, "verify", lambda *a, **k: None)
    key = make_key(tmp_path / "keys", "ed25519", "a@x")
    assert review(cli, simulator, "--sign", "--signing-key", str(key.private)).code == 0
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


def _s(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _crafted(key: Key, *, reserved: bytes = b"", after_sig: bytes = b"",
             after_blob: bytes = b"") -> bytes:  # fmt: skip
    """An sshsig signature of MESSAGE made here (not by ssh-keygen) with ``key``, its blob
    bent as asked; the signed data holds ``reserved`` as the blob does."""
    private: Any = serialization.load_ssh_private_key(key.private.read_bytes(), None)
    key_blob = base64.b64decode(key.public.read_text().split()[1])
    head = _s(b"deepseek-review") + _s(reserved) + _s(b"sha512")
    signed = b"SSHSIG" + head + _s(hashlib.sha512(MESSAGE).digest())
    if key_blob.startswith(_s(b"ssh-rsa")):
        raw = private.sign(signed, padding.PKCS1v15(), hashes.SHA512())
        sig_blob = _s(b"rsa-sha2-512") + _s(raw) + after_sig
    else:
        sig_blob = _s(b"ssh-ed25519") + _s(private.sign(signed)) + after_sig
    blob = b"SSHSIG" + struct.pack(">I", 1) + _s(key_blob) + head + _s(sig_blob) + after_blob
    return armor(blob)


def _refused(sig: bytes) -> bool:
    """The in-process verdict is no: False, or a signature it cannot read (which ``verify``
    reports as ``the signature does not verify (why)``)."""
    try:
        return verifier.verify(MESSAGE, sig, "deepseek-review") is False
    except sshsig.BadSignature:
        return True


CRAFTED = {
    "a reserved field that is not empty": {"reserved": b"x"},
    "bytes after the signature's last field": {"after_blob": _s(b"more")},
    "bytes after the signature inside its signature field": {"after_sig": b"\0"},
}


def test_a_signature_made_here_as_ssh_keygen_makes_it_is_accepted_by_both(tmp_path):
    """The control for the crafted signatures below: unbent, both accept it."""
    key = key_of_kind(tmp_path, "ed25519")
    sig = _crafted(key)
    assert _ssh_keygen_accepts(key, tmp_path, MESSAGE, sig)
    assert verifier.verify(MESSAGE, sig, "deepseek-review") is True


@pytest.mark.parametrize("bent", list(CRAFTED))
@pytest.mark.parametrize("kind", ["ed25519", "rsa"])
def test_a_signature_ssh_keygen_cannot_read_is_refused_by_both(tmp_path, bent, kind):
    key = key_of_kind(tmp_path, kind)
    sig = _crafted(key, **CRAFTED[bent])
    assert not _ssh_keygen_accepts(key, tmp_path, MESSAGE, sig)
    assert _refused(sig)


@pytest.mark.parametrize("prefix", [b"\n", b" ", b"# sig\n"])
def test_anything_before_the_armor_header_is_refused_by_both(tmp_path, prefix):
    key = key_of_kind(tmp_path, "ed25519")
    sig = prefix + sign_message(key, MESSAGE)
    assert not _ssh_keygen_accepts(key, tmp_path, MESSAGE, sig)
    assert _refused(sig)


def test_text_after_the_armor_footer_is_ignored_by_both(tmp_path):
    key = key_of_kind(tmp_path, "ed25519")
    sig = sign_message(key, MESSAGE) + b"trailing words\n"
    assert _ssh_keygen_accepts(key, tmp_path, MESSAGE, sig)
    assert verifier.verify(MESSAGE, sig, "deepseek-review") is True


@pytest.mark.skipif(not HAVE_OPENSSL, reason="openssl makes the small RSA key")
def test_an_rsa_key_under_1024_bits_is_refused_by_both(tmp_path):
    """ssh-keygen will not make one, nor read one; the in-process check must not either."""
    key = small_rsa_key(tmp_path, "a@x")
    sig = _crafted(key)
    assert not _ssh_keygen_accepts(key, tmp_path, MESSAGE, sig)
    assert _refused(sig)
