"""Reading git's objects: commits a user names, trees, and blobs by id.

Every command goes through :func:`git.runner.git_output` (nothing the repository names runs). A
revision the user gives is checked with ``rev-parse --verify --end-of-options`` before it is
used anywhere, so it can never be read as an option. What is not in the clone (a shallow
clone, a pruned branch) is a :class:`.errors.MissingObject` naming the fix.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from deepseek_review.errors import InputError, MissingObject
from deepseek_review.git.runner import (
    check_refusal,
    git_command,
    git_env,
    git_facts,
    git_output,
    in_git_work_tree,
)

#: How to get what a shallow or partial clone lacks.
UNSHALLOW_HINT = (
    "fetch the full history: git fetch --unshallow (in GitHub Actions: actions/checkout "
    "with fetch-depth: 0)"
)
_OID_RE = re.compile(r"\A(?:[0-9a-f]{40}|[0-9a-f]{64})\Z")
#: What a name read from stdin one a line cannot hold (and a revision never does).
_UNSAFE_REV = re.compile(r"[\0\n\r]")


def is_oid(text: str) -> bool:
    """A full object id (SHA-1 or SHA-256), lowercase: what records hold."""
    return _OID_RE.match(text) is not None


def short(oid: str) -> str:
    return oid[:7]


@cache
def object_format(root: Path) -> str:
    """``sha1`` or ``sha256``: how the repository names its objects (known from the root's
    discovery; asked on its own only where that could not tell)."""
    known = git_facts(root).object_format
    if known is not None:
        return known
    out = git_output(root, "rev-parse", "--show-object-format")
    return os.fsdecode(out).strip() if out else "sha1"


def blob_id(data: bytes, fmt: str = "sha1") -> str:
    """The id git gives a blob of ``data`` (computed here: ``hash-object`` would run the
    repository's clean filters)."""
    import hashlib

    h = hashlib.sha256() if fmt == "sha256" else hashlib.sha1()
    h.update(b"blob %d\0" % len(data))
    h.update(data)
    return h.hexdigest()


def is_shallow(root: Path) -> bool:
    out = git_output(root, "rev-parse", "--is-shallow-repository")
    return out is not None and out.strip() == b"true"


def resolve_commit(root: Path, rev: str, what: str) -> str:
    """The commit id ``rev`` names; :class:`InputError` (3) naming ``what`` and the value
    when it names none, :class:`MissingObject` (16) when the clone is shallow (it may be
    a commit that was not fetched)."""
    if not in_git_work_tree(root):
        raise InputError(f"{what} {rev}: the repository root {root} is not a git work tree")
    if not rev or rev.startswith("-") or "\0" in rev or rev != rev.strip():
        raise InputError(f"{what} {rev!r}: not a revision")
    out = git_output(root, "rev-parse", "--verify", "-q", "--end-of-options", rev + "^{commit}")
    if out is None:
        if is_shallow(root):
            raise MissingObject(
                f"{what} {rev}: no such commit in this shallow clone", hint=UNSHALLOW_HINT
            )
        raise InputError(f"{what} {rev}: not a commit of the repository at {root}")
    return os.fsdecode(out).strip()


def resolve_commits(root: Path, revs: Sequence[str], what: str) -> list[str]:
    """The commit id each of ``revs`` names, asked of one ``cat-file --batch-check`` (which
    reads names as ``rev-parse --verify`` does, from stdin: none can be an option); when one
    does not name a commit, :func:`resolve_commit` of each in turn says which and why."""
    plain = in_git_work_tree(root) and all(
        rev and not rev.startswith("-") and rev == rev.strip() and not _UNSAFE_REV.search(rev)
        for rev in revs
    )
    if plain:
        names = "".join(f"{rev}^{{commit}}\n" for rev in revs).encode()
        out = git_output(root, "cat-file", "--batch-check=%(objectname) %(objecttype)", stdin=names)
        lines = os.fsdecode(out).splitlines() if out is not None else []
        oids = [oid for oid, _, kind in (line.partition(" ") for line in lines) if kind == "commit"]
        if len(oids) == len(revs) == len(lines) and all(is_oid(o) for o in oids):
            return oids
    return [resolve_commit(root, rev, what) for rev in revs]


def merge_base(root: Path, a: str, b: str, what: str) -> str:
    """The merge base of commits ``a`` and ``b`` (ids); :class:`MissingObject` when history
    is cut (shallow) or :class:`InputError` when they share none."""
    out = git_output(root, "merge-base", a, b)
    if out is None:
        if is_shallow(root):
            raise MissingObject(
                f"{what}: the merge base of {short(a)} and {short(b)} is not in this shallow clone",
                hint=UNSHALLOW_HINT,
            )
        raise InputError(f"{what}: {short(a)} and {short(b)} have no common ancestor")
    return os.fsdecode(out).split()[0]


def is_ancestor(root: Path, a: str, b: str) -> bool:
    return git_output(root, "merge-base", "--is-ancestor", a, b) is not None


@dataclass(frozen=True)
class TreeEntry:
    """One entry of ``git ls-tree``: what it is and the object it names."""

    mode: str
    kind: str
    """``blob``, ``tree`` or ``commit`` (a submodule)."""
    oid: str
    path: str


def tree_entries(root: Path, commit: str, pathspecs: list[str]) -> list[TreeEntry]:
    """The files of ``commit`` (an id) under ``pathspecs``, recursively, in git's order."""
    out = git_output(
        root,
        *("-c", "core.quotePath=false", "ls-tree", "-r", "-z", "--full-tree", commit),
        *("--", *pathspecs),
    )
    if out is None:
        raise MissingObject(f"commit {short(commit)}: its tree cannot be read", hint=UNSHALLOW_HINT)
    entries = []
    for line in out.split(b"\0"):
        if not line:
            continue
        meta, _, path = line.partition(b"\t")
        mode, kind, oid = os.fsdecode(meta).split(" ")
        entries.append(TreeEntry(mode, kind, oid, os.fsdecode(path)))
    return entries


def read_blobs(root: Path, oids: list[str]) -> dict[str, bytes]:
    """The bytes of each blob (one ``cat-file --batch``); a blob not in the repository is
    left out of the answer (the caller names it)."""
    wanted = list(dict.fromkeys(o for o in oids if is_oid(o)))
    if not wanted:
        return {}
    out = git_output(root, "cat-file", "--batch", stdin="".join(o + "\n" for o in wanted).encode())
    if out is None:
        return {}
    found: dict[str, bytes] = {}
    pos = 0
    for oid in wanted:
        end = out.index(b"\n", pos)
        header = out[pos:end].split(b" ")
        pos = end + 1
        if len(header) != 3 or header[1] != b"blob":  # "<oid> missing", or not a blob
            continue
        size = int(header[2])
        found[oid] = out[pos : pos + size]
        pos += size + 1  # the blob, then a newline
    return found


def oid_format(oid: str) -> str:
    """``sha1`` or ``sha256``, by the length of a full object id (no repository needed)."""
    return "sha256" if len(oid) == 64 else "sha1"


class BlobStore:
    """Blobs by id through one ``git cat-file --batch`` process, started on first need and
    kept until :meth:`close`: a verify run reads every blob it needs through one process,
    whatever the number of records. Outside a git work tree it reads nothing."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._proc: subprocess.Popen[bytes] | None = None
        self._dead = False

    @property
    def in_repository(self) -> bool:
        """Whether there is a repository to read blobs from at all."""
        return in_git_work_tree(self.root)

    def _process(self) -> subprocess.Popen[bytes] | None:
        if self._proc is None and not self._dead:
            argv = git_command(self.root, ["cat-file", "--batch"]) if self.in_repository else None
            if argv is None:
                self._dead = True
                return None
            self._proc = subprocess.Popen(
                argv,
                cwd=self.root,
                env=git_env(),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
            )
        return self._proc

    def read(self, oids: Sequence[str]) -> dict[str, bytes]:
        """The bytes of each of ``oids`` git has (a blob it lacks is left out)."""
        found: dict[str, bytes] = {}
        for oid in dict.fromkeys(o for o in oids if is_oid(o)):
            data = self._one(oid)
            if data is not None:
                found[oid] = data
        return found

    def _one(self, oid: str) -> bytes | None:
        proc = self._process()
        if proc is None or proc.stdin is None or proc.stdout is None:
            return None
        try:
            proc.stdin.write(oid.encode("ascii") + b"\n")
            proc.stdin.flush()
            header = proc.stdout.readline().split(b" ")
            if len(header) != 3:  # "<oid> missing"; or git stopped (EOF)
                if header == [b""]:
                    self._stopped(proc)
                return None
            size = int(header[2])
            data = proc.stdout.read(size + 1)[:size]  # the object, then a newline
        except (OSError, ValueError):
            self._stopped(proc)
            return None
        return data if header[1] == b"blob" else None

    def _stopped(self, proc: subprocess.Popen[bytes]) -> None:
        """git ended early: a repository it refuses is the refusal's error; else nothing more
        is read through it."""
        self._dead = True
        err = self._end(proc)
        check_refusal(self.root, proc.returncode or 1, err)

    def close(self) -> None:
        """Stop the process (it ends when its input closes); reading again starts a new one."""
        if self._proc is not None:
            self._end(self._proc)

    def _end(self, proc: subprocess.Popen[bytes]) -> bytes:
        """Close ``proc``'s input, wait for it, and return what it wrote on stderr."""
        self._proc = None
        with contextlib.suppress(OSError):
            if proc.stdin is not None:
                proc.stdin.close()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        err = proc.stderr.read() if proc.stderr is not None else b""
        for stream in (proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        return err


def read_blob(root: Path, oid: str, path: str) -> bytes:
    """The bytes of one blob a record pins for ``path``; :class:`MissingObject` without it."""
    data = read_blobs(root, [oid]).get(oid)
    if data is None:
        raise MissingObject(
            f"context file {path}: blob {short(oid)} is not in the repository",
            hint=UNSHALLOW_HINT,
        )
    return data
