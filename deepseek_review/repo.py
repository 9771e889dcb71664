"""The repository root, and turning user paths into safe repo-relative POSIX paths.

Receipts name files relative to the repository root, so every path the tool reads or writes
goes through :func:`resolve_inside`, which refuses anything that would land outside the root
(absolute paths elsewhere, ``..``, symlinks that lead out).
"""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import subprocess
from pathlib import Path, PurePosixPath

from .errors import ConfigError, InputError


def git_executable() -> str | None:
    return shutil.which("git")


def git_output(cwd: Path, *args: str) -> bytes | None:
    """What ``git ARGS`` prints in ``cwd``; None when git is missing or the command fails."""
    git = git_executable()
    if git is None:
        return None
    try:
        out = subprocess.run([git, *args], cwd=cwd, capture_output=True, check=False)
    except OSError:
        return None
    return out.stdout if out.returncode == 0 else None


def git_toplevel(start: Path) -> Path | None:
    """The enclosing git work tree of ``start``, or None (not a repo, or git is missing)."""
    out = git_output(start, "rev-parse", "--show-toplevel")
    top = os.fsdecode(out).strip() if out is not None else ""
    return Path(top) if top else None


def find_repo_root(explicit: str | os.PathLike[str] | None = None, cwd: Path | None = None) -> Path:
    """``--repo-root``, else the enclosing git work tree, else the current folder."""
    here = Path.cwd() if cwd is None else cwd
    if explicit is not None:
        root = (here / Path(explicit)).resolve()
        if not root.is_dir():
            raise ConfigError(f"--repo-root {os.fspath(explicit)!s}: not a folder")
        return root
    top = git_toplevel(here)
    return (top if top is not None else here).resolve()


_UNSAFE_RE = re.compile(r"[\x00-\x1f\x7f]")


def has_unsafe_chars(rel: str) -> bool:
    """Control characters (newlines above all) cannot be framed or listed unambiguously."""
    return _UNSAFE_RE.search(rel) is not None


def to_relative(root: Path, path: Path) -> str:
    """``path`` (already resolved, inside ``root``) as a repo-relative POSIX string."""
    return PurePosixPath(path.relative_to(root).as_posix()).as_posix()


def resolve_inside(root: Path, user_path: str, *, what: str = "path") -> tuple[Path, str]:
    """Resolve ``user_path`` against ``root``; refuse it if it (or a symlink in it) leads out.

    Returns the resolved absolute path and the repo-relative POSIX path *as the user named
    it* (normalised, symlinks inside the repository kept as named), so receipts show the
    names people recognise.
    """
    if user_path == "" or user_path.strip() == "":
        raise InputError(f"{what} is empty")
    if "\x00" in user_path:
        raise InputError(f"{what} {user_path!r}: contains a NUL byte")
    raw = Path(user_path)
    candidate = raw if raw.is_absolute() else root / raw
    # Normalise lexically first (so "a/../b" is judged as "b"), then resolve symlinks.
    lexical = Path(os.path.normpath(candidate))
    resolved = lexical.resolve()
    try:
        lexical_rel = lexical.relative_to(root)
    except ValueError:
        # An absolute path may reach the root through a symlinked prefix (/tmp -> /private/tmp).
        try:
            lexical_rel = resolved.relative_to(root)
        except ValueError:
            raise InputError(f"{what} {user_path}: outside the repository root {root}") from None
    try:
        resolved.relative_to(root)
    except ValueError:
        raise InputError(
            f"{what} {user_path}: a symlink leads outside the repository root ({resolved})"
        ) from None
    rel = lexical_rel.as_posix()
    if rel in ("", "."):
        rel = "."
    return resolved, rel


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


def read_regular_file(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a regular file; :class:`OSError` ("not a regular file") for anything else.

    For files a receipt or a folder listing names: ``O_NONBLOCK`` keeps a FIFO planted under
    a receipt's name from hanging the open, and it is refused right after by its type.
    """
    fd = os.open(path, _READ_FLAGS)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        chunks = []
        while chunk := os.read(fd, max(st.st_size + 1, 1 << 16)):
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def files_unchanged_since(root: Path, rev: str, folders: list[str], *, what: str) -> set[str]:
    """Repo-relative paths under ``folders`` that ``rev`` holds and the work tree still has
    byte for byte: what a pull request did not add or touch, when ``rev`` is its base.

    Git answers both halves (``ls-tree`` at ``rev``, ``diff`` of ``rev`` against the work
    tree), so its own rules (line endings, filters) decide "unchanged".
    """
    if (
        rev.startswith("-")
        or git_output(root, "rev-parse", "--verify", "-q", rev + "^{commit}") is None
    ):
        raise ConfigError(f"{what} {rev!r}: not a commit of the repository at {root}")
    specs = ["--", *folders]
    listed = git_output(root, "ls-tree", "-r", "-z", "--name-only", "--full-tree", rev, *specs)
    changed = git_output(
        root,
        "diff",
        "--no-ext-diff",
        "--no-textconv",
        "--no-renames",
        "--name-only",
        "-z",
        rev,
        *specs,
    )
    if listed is None or changed is None:
        raise ConfigError(f"{what} {rev!r}: git could not compare it with the work tree")
    names = {os.fsdecode(n) for n in listed.split(b"\0") if n}
    return names - {os.fsdecode(n) for n in changed.split(b"\0") if n}
