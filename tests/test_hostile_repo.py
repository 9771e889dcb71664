"""The repository under review is untrusted: it cannot make the tool read what it must not,
run programs, smuggle names into the prompt, or get its prompt text written world-readable.

Every test builds a real git repository that attacks the tool (committed symlinks into
``.git/`` or to git-ignored files, a ``core.fsmonitor`` program in ``.git/config``, file names
with bidi overrides and line separators, a file swapped for a symlink just before it is
opened) and shows the attack fails: the secret planted in ``.git/config``
(``http.extraheader``, where CI keeps its checkout token) or in a git-ignored ``.env`` reaches
no request, no output and no file; the program does not run; the name is refused, escaped.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.simulator import Simulator
from tests.conftest import files_under, git

Cli = Callable[..., Any]

#: Planted secrets: a fake CI checkout token in .git/config, a fake key in an ignored .env.
TOKEN = "ghs_FAKEcheckoutTOKEN0do0not0leak0A1"
ENV_SECRET = "envFAKEsecret0do0not0leak0B2"


def commit_all(root: Path) -> None:
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-qm", "x")


@pytest.fixture
def hostile(repo: Path) -> Path:
    """The repo fixture, with CI's token in .git/config, an ignored .env, an ignored folder,
    and committed symlinks to them: docs/cfg -> ../.git/config, docs/env -> ../.env,
    docs/gitdir -> ../.git (a folder), docs/private -> ../private (an ignored folder)."""
    git(repo, "config", "http.https://github.com/.extraheader", f"AUTHORIZATION: basic {TOKEN}")
    (repo / ".env").write_text(f"API_TOKEN={ENV_SECRET}\n", encoding="utf-8")
    (repo / "private").mkdir()
    (repo / "private" / "key.txt").write_text(f"key {ENV_SECRET}\n", encoding="utf-8")
    with (repo / ".gitignore").open("a", encoding="utf-8") as fh:
        fh.write(".env\nprivate/\n")
    (repo / "docs" / "cfg").symlink_to("../.git/config")
    (repo / "docs" / "env").symlink_to("../.env")
    (repo / "docs" / "gitdir").symlink_to("../.git", target_is_directory=True)
    (repo / "docs" / "private").symlink_to("../private", target_is_directory=True)
    commit_all(repo)
    return repo


def run_against(cli: Cli, simulator: Simulator, *args: str) -> Any:
    return cli(
        "run", "-p", "Review.", "--endpoint", simulator.base_url, "--retry-wait", "0.01", *args
    )


def files_holding(root: Path, secret: str) -> set[str]:
    """Every regular file under ``root`` (links not followed, .git/ skipped) holding ``secret``."""
    found = set()
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git"]
        for name in names:
            path = Path(folder) / name
            if not path.is_symlink() and secret.encode() in path.read_bytes():
                found.add(path.relative_to(root).as_posix())
    return found


def assert_not_leaked(r: Any, simulator: Simulator, root: Path) -> None:
    """Neither secret is in a request, on stdout/stderr, or in any file but where it was put."""
    for secret in (TOKEN, ENV_SECRET):
        for req in simulator.chat_requests():
            assert secret.encode() not in req.body
        assert secret not in r.out
        assert secret not in r.err
    assert files_holding(root, TOKEN) == set()
    assert files_holding(root, ENV_SECRET) == {".env", "private/key.txt"}


def assert_refused(r: Any, simulator: Simulator, root: Path, *words: str, code: int = 3) -> None:
    """Exit ``code``, one error line holding every word, nothing sent, nothing written."""
    assert r.code == code, (r.code, r.err)
    lines = r.err.strip().splitlines()
    assert len(lines) == 1, r.err
    assert lines[0].startswith("deepseek-review: error: "), r.err
    for word in words:
        assert word in lines[0], (word, r.err)
    assert "Traceback" not in r.err
    assert simulator.chat_requests() == []
    assert files_under(root / "reviews") == []


def sent_paths(simulator: Simulator) -> str:
    """The user message of the one request the simulator received."""
    (req,) = simulator.chat_requests()
    body = json.loads(req.body)
    return "\n".join(m["content"] for m in body["messages"])


# --------------------------------------------------------------------------- 17: file modes


@pytest.fixture
def umask() -> Iterator[Callable[[int], None]]:
    """Set the process umask for the test (the CLI runs in-process); restored after."""
    old = os.umask(0o022)

    def set_mask(mask: int) -> None:
        os.umask(mask)

    try:
        yield set_mask
    finally:
        os.umask(old)


def modes(root: Path) -> dict[str, int]:
    """Permission bits of each written file, by kind."""
    out = {}
    for path in (root / "reviews").iterdir():
        kind = next(
            k
            for k in (".receipt.json", ".request.json", ".reasoning.md", ".md")
            if path.name.endswith(k)
        )
        out[kind] = stat.S_IMODE(path.stat().st_mode)
    return out


@pytest.mark.parametrize("mask", [0o022, 0o000], ids=["umask-022", "umask-000"])
def test_answers_and_receipts_are_at_most_0644_and_records_0600(
    repo, make_simulator, cli, umask, mask
):
    sim = make_simulator(reasoning_words=5)
    umask(mask)
    r = run_against(cli, sim, "-c", "docs/spec.md", "--keep-reasoning")
    assert r.code == 0, r.err
    assert modes(repo) == {
        ".md": 0o644,
        ".receipt.json": 0o644,
        ".request.json": 0o600,
        ".reasoning.md": 0o600,
    }


def test_a_stricter_umask_is_kept_for_every_file(repo, make_simulator, cli, umask):
    sim = make_simulator(reasoning_words=5)
    umask(0o077)
    r = run_against(cli, sim, "-c", "docs/spec.md", "--keep-reasoning")
    assert r.code == 0, r.err
    assert set(modes(repo).values()) == {0o600}
