"""How ``verify --allowed-signers`` reads a signed segment's files (issue #14's cost goal):
through verify's own reader, so nothing is followed out of the repository, each folder is
resolved once per run, a digest the answer check took is not taken again, and the
checks run in the verify workers when there are workers."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.support.signing import (
    segment_files,
    signature_check,
    signed_review,
    verify,
)
from tests.support.sshkeys import Key, allowed_signers, needs_openssh

pytestmark = needs_openssh
Cli = Callable[..., Any]


def _moved_out(path: Path, outside: Path) -> Path:
    """Move ``path`` out of the repository and leave a symlink to it in its place."""
    outside.mkdir(exist_ok=True)
    target = outside / path.name
    shutil.move(path, target)
    path.symlink_to(target)
    return target


@pytest.mark.parametrize(("suffix", "kind"), [(".intoto.json", "statement"),
                                              (".intoto.json.sig", "signature")])  # fmt: skip
def test_a_statement_or_signature_symlinked_out_of_the_repository_fails_by_name(
    repo: Path, cli: Cli, simulator: Any, tmp_path: Path, alice: Key, suffix: str, kind: str
) -> None:
    signed_review(cli, simulator, alice)
    path = segment_files(repo)[suffix]
    _moved_out(path, tmp_path / "outside")  # the same bytes, read from outside the root
    v = verify(cli, allowed_signers(tmp_path / "a", alice.allowed_line()))
    assert v.code == 9
    detail = signature_check(v)["detail"]
    assert detail.startswith(f"{kind} reviews/{path.name}: a symlink leads outside"), detail


def test_a_subject_symlinked_out_of_the_repository_fails_by_name(
    repo: Path, cli: Cli, simulator: Any, tmp_path: Path, alice: Key
) -> None:
    signed_review(cli, simulator, alice)
    path = segment_files(repo)[".request.json"]
    _moved_out(path, tmp_path / "outside")
    v = verify(cli, allowed_signers(tmp_path / "a", alice.allowed_line()))
    assert v.code == 9
    detail = signature_check(v)["detail"]
    assert detail.startswith(f"record reviews/{path.name}: a symlink leads outside"), detail


def test_signature_checks_resolve_each_folder_once_not_each_file(
    repo: Path, cli: Cli, simulator: Any, tmp_path: Path, alice: Key,
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    for topic in ("one", "two", "three"):
        signed_review(cli, simulator, alice, "--topic", topic)
    signers = allowed_signers(tmp_path / "a", alice.allowed_line())
    resolved: list[str] = []
    real_realpath = os.path.realpath

    def counting_realpath(path: Any, *args: Any, **kwargs: Any) -> Any:
        resolved.append(os.fspath(path))
        return real_realpath(path, *args, **kwargs)

    monkeypatch.setattr(os.path, "realpath", counting_realpath)
    v = verify(cli, signers, "--jobs", "1")
    assert v.code == 0, v.err
    assert [r["status"] for r in v.json()["receipts"]] == ["ok", "ok", "ok"]
    assert str(repo / "reviews") in resolved
    in_reviews = [p for p in resolved if p.startswith(str(repo / "reviews") + "/")]
    assert in_reviews == []  # each segment file is opened in its resolved folder


def test_signatures_checked_in_worker_processes_give_the_report_of_one_process(
    repo: Path, cli: Cli, simulator: Any, tmp_path: Path, alice: Key
) -> None:
    for topic in ("one", "two", "three"):
        signed_review(cli, simulator, alice, "--topic", topic)
    answer = sorted((repo / "reviews").glob("*.md"))[1]
    answer.write_bytes(answer.read_bytes() + b"tampered\n")
    (sorted((repo / "reviews").glob("*.intoto.json.sig"))[2]).unlink()
    signers = allowed_signers(tmp_path / "a", alice.allowed_line())
    one = verify(cli, signers, "--jobs", "1")
    workers = verify(cli, signers, "--jobs", "2")
    assert (one.code, workers.code) == (9, 9)
    assert workers.json() == one.json()
    details = [c["detail"] for r in one.json()["receipts"] for c in r["checks"]
               if c["name"] == "signature"]  # fmt: skip
    assert sorted(details)[0].startswith("a statement without its signature")
    assert any(d.startswith("changed since it was signed") for d in details)
    assert any(d.startswith("signed by alice@example.com") for d in details)
