"""The in-process verifier builds each signer's key object once per run (issue #14's cost
goal): a key seen before must still refuse what it did not sign, and never stand in for
another key."""

from __future__ import annotations

from pathlib import Path

import pytest

from deepseek_review.signing import sshsig, verifier
from tests.support.sshkeys import KINDS, MESSAGE, armor, key_of_kind, needs_openssh, sign_message

pytestmark = needs_openssh


@pytest.mark.parametrize("kind", KINDS)
def test_a_key_already_used_still_refuses_a_changed_message(tmp_path: Path, kind: str) -> None:
    sig = sign_message(key_of_kind(tmp_path, kind), MESSAGE)
    assert verifier.verify(MESSAGE, sig, "deepseek-review") is True
    assert verifier.verify(MESSAGE, sig, "deepseek-review") is True
    assert verifier.verify(MESSAGE + b" ", sig, "deepseek-review") is False


@pytest.mark.parametrize("kind", ["ed25519", "rsa", "ecdsa-256"])
def test_a_signature_naming_one_key_but_made_by_another_is_refused(
    tmp_path: Path, kind: str
) -> None:
    (tmp_path / "one").mkdir()
    (tmp_path / "two").mkdir()
    first = sign_message(key_of_kind(tmp_path / "one", kind), MESSAGE)
    second = sign_message(key_of_kind(tmp_path / "two", kind), MESSAGE)
    assert verifier.verify(MESSAGE, first, "deepseek-review") is True  # its key now known
    key_one, key_two = sshsig.parse(first).public_key, sshsig.parse(second).public_key
    blob_two = sshsig.unarmor(second)
    # the second signature's blob with the first key's public key put in its place
    forged = blob_two.replace(len(key_two).to_bytes(4, "big") + key_two,
                              len(key_one).to_bytes(4, "big") + key_one)  # fmt: skip
    assert forged != blob_two
    armored = armor(forged)
    assert verifier.verify(MESSAGE, armored, "deepseek-review") is False
