"""Signed reviews in tests: a key for alice, no ssh-agent of the machine, a signed review,
the files of a signed segment and verify's signature check."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.support.cli import Cli, review
from tests.support.sshkeys import Key, make_key


@pytest.fixture(autouse=True)
def no_agent(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test uses the machine's own ssh-agent."""
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)


@pytest.fixture
def alice(tmp_path: Path) -> Key:
    return make_key(tmp_path / "keys", "ed25519", "alice@example.com")


def signed_review(cli: Cli, sim: Any, key: Key, *extra: str) -> dict[str, Any]:
    r = review(cli, sim, "--sign", "--signing-key", str(key.private), *extra)
    assert r.code == 0, r.err
    out: dict[str, Any] = r.json()
    return out


def segment_files(repo: Path) -> dict[str, Path]:
    """The files of the one segment under reviews/, by suffix."""
    files = sorted((repo / "reviews").iterdir())
    stem = next(f.name[: -len(".receipt.json")] for f in files if f.name.endswith(".receipt.json"))
    return {f.name[len(stem) :]: f for f in files if f.name.startswith(stem)}


def verify(cli: Cli, signers: Path, *extra: str) -> Any:
    return cli("verify", "--allowed-signers", str(signers), "--json", *extra)


def signature_check(result: Any) -> dict[str, str]:
    receipt = result.json()["receipts"][0]
    return next(c for c in receipt["checks"] if c["name"] == "signature")
