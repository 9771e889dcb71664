"""Pins: what a request record says the prompt was built from, in git's immutable terms.

A record's optional ``git`` object holds the commits (``base``, ``head``, ``merge_base``), the
diff's settings and hash when the review was of a change, and for each context file either
the blob it was read from (``blob``, with the ``commit`` that holds it) or, when it was not
committed, nothing more than the hash of its working-tree bytes (``worktree``). ``verify``
and ``continue`` read pinned files from git's objects (:func:`pinned_reader`), so a review
pinned to commits rebuilds after the working tree moved on.

For a plain working-tree review every context file identical to its blob in ``HEAD`` is
pinned to that blob (:func:`auto_pin`); the blob id is computed here from the bytes sent.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from deepseek_review.context.types import ContextFile
from deepseek_review.errors import MissingObject
from deepseek_review.git.objects import (
    UNSHALLOW_HINT,
    BlobStore,
    blob_id,
    is_oid,
    object_format,
    oid_format,
    short,
)
from deepseek_review.git.runner import git_facts, git_output, in_git_work_tree
from deepseek_review.records.canonical import sha256_tag
from deepseek_review.records.lines import valid_lines
from deepseek_review.util.textsafe import plural

if TYPE_CHECKING:
    from deepseek_review.records.rebuild import Reader


class FilePin(NamedTuple):
    """Where a context file's bytes can be read again."""

    path: str
    blob: str | None = None
    commit: str | None = None
    """The commit (or index tree) whose blob it is."""
    worktree: str | None = None
    """``sha256:`` of its working-tree bytes, when it was not committed."""
    lines: tuple[int, int] | None = None
    """Only these lines of the pinned file were sent (blob and hash are the whole file's)."""

    @property
    def how(self) -> str:
        """How verify re-reads it: ``commit abc1234`` or ``working tree``."""
        if self.blob is None:
            return "working tree"
        return f"commit {short(self.commit)}" if self.commit else f"blob {short(self.blob)}"

    def to_json(self) -> dict[str, Any]:
        if self.blob is None:
            d: dict[str, Any] = {"path": self.path, "worktree": self.worktree}
        else:
            d = {"path": self.path, "blob": self.blob, "commit": self.commit}
        if self.lines is not None:
            d["lines"] = list(self.lines)
        return d


def pin_of(f: ContextFile, blob: str, commit: str | None) -> FilePin:
    """A context file read from ``blob`` (of ``commit``) pinned to it, with its lines."""
    return FilePin(f.path, blob, commit, None, None if f.lines is None else f.lines.span)


def head_commit(root: Path) -> str | None:
    """The commit ``HEAD`` named when the repository was first asked about (no process of
    its own: :func:`deepseek_review.git.runner.git_facts` asked with the root)."""
    return git_facts(root).head


#: Per repository root and the ``HEAD`` :func:`git.runner.git_facts` read: the blob of every file
#: that commit holds. A batch pins each entry's files against it without asking git again; a
#: pin stays true if HEAD moves meanwhile (those bytes are that blob of that commit), and once
#: the facts are read again (``forget_git_facts``) a new HEAD gets its own listing.
_HEAD_BLOBS: dict[tuple[Path, str], dict[str, str]] = {}


def _head_blobs(root: Path) -> tuple[str | None, dict[str, str]]:
    head = head_commit(root) if in_git_work_tree(root) else None
    if head is None:
        return None, {}
    got = _HEAD_BLOBS.get((root, head))
    if got is not None:
        return head, got
    out = git_output(root, "-c", "core.quotePath=false", "ls-tree", "-r", "-z", "--full-tree", head)
    # Decoded whole, as os.fsdecode decodes each name; a line is ``<mode> <type> <oid>\t<path>``
    # and git writes the mode in six octal digits: a blob's line has " blob " at 6 to 12.
    text = (out or b"").decode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors())
    blobs = {
        line[tab + 1 :]: line[12:tab]
        for line in text.split("\0")
        if line[6:12] == " blob "
        for tab in (line.find("\t"),)
        if tab > 12
    }
    return head, _HEAD_BLOBS.setdefault((root, head), blobs)


def auto_pin(root: Path, files: Sequence[ContextFile]) -> list[FilePin]:
    """Each file identical to its blob in ``HEAD`` pinned to that blob; the others to their
    working-tree hash. Outside git, or before the first commit, every file is the latter."""
    head, blobs = _head_blobs(root) if files else (None, {})
    new = tuple.__new__  # the named tuple without its Python-level __new__ (equal)
    if not blobs:
        return [_worktree(f) for f in files]
    fmt = object_format(root)
    pins = []
    for f in files:
        blob = blobs.get(f.path)
        whole = f.whole or f  # a range: the whole file's blob, and its lines
        if blob is not None and blob_id(whole.text.encode("utf-8"), fmt) == blob:
            span = None if f.lines is None else f.lines.span
            pins.append(new(FilePin, (f.path, blob, head, None, span)))
        else:
            pins.append(_worktree(f))
    return pins


def _worktree(f: ContextFile) -> FilePin:
    """A file not committed as sent: the hash of its working-tree bytes (the whole file's)."""
    if f.lines is None:
        return tuple.__new__(FilePin, (f.path, None, None, f.sha256, None))
    return FilePin(f.path, worktree=(f.whole or f).sha256, lines=f.lines.span)


def file_pins(git: Mapping[str, Any] | None) -> dict[str, FilePin]:
    """The file pins of a record's ``git`` object, by path; malformed entries (a record may
    be hostile) are not pins: those files are read from the working tree."""
    out: dict[str, FilePin] = {}
    entries = git.get("files") if isinstance(git, Mapping) else None
    for e in entries if isinstance(entries, list) else ():
        if not isinstance(e, dict) or not isinstance(e.get("path"), str):
            continue
        blob, commit = e.get("blob"), e.get("commit")
        lines = valid_lines(e.get("lines"))
        if isinstance(blob, str) and is_oid(blob):
            good_commit = commit if isinstance(commit, str) and is_oid(commit) else None
            out[e["path"]] = FilePin(e["path"], blob=blob, commit=good_commit, lines=lines)
        else:
            out[e["path"]] = FilePin(e["path"], worktree=str(e.get("worktree")), lines=lines)
    return out


class PinnedBytes(NamedTuple):
    """The bytes of a record's pinned files, and the pins whose bytes could not be had."""

    found: dict[str, bytes]
    missing: list[FilePin]
    in_repository: bool
    """Whether git could be asked at all (outside a repository there is no fix to name)."""
    from_git: frozenset[str]
    """The paths read from git's objects (the others are the working tree's bytes)."""
    pinned: frozenset[str]
    """Every pinned path (read from here); other references are the working tree's."""

    def reader(self, tree: Reader) -> Reader:
        """The record's references: pinned files as found here, the rest through ``tree``."""

        def read(path: str) -> bytes | None:
            return self.found.get(path) if path in self.pinned else tree(path)

        return read


class TreeHashes:
    """The blob id and sha256 of each working-tree file, computed once: a verify run checks
    thousands of records that pin the same few files (its reader returns the same bytes for a
    path all run long)."""

    def __init__(self) -> None:
        self._ids: dict[tuple[str, str], str] = {}
        self._sha256: dict[str, str] = {}

    def blob_id(self, path: str, data: bytes, fmt: str) -> str:
        got = self._ids.get((path, fmt))
        if got is None:
            got = self._ids[path, fmt] = blob_id(data, fmt)
        return got

    def sha256(self, path: str, data: bytes) -> str:
        got = self._sha256.get(path)
        if got is None:
            got = self._sha256[path] = sha256_tag(data)
        return got


def pinned_bytes(
    root: Path,
    git: Mapping[str, Any] | None,
    tree: Reader,
    blobs: BlobStore | None = None,
    hashes: TreeHashes | None = None,
    pins: Mapping[str, FilePin] | None = None,
) -> PinnedBytes:
    """Each pinned file's bytes: the working tree's (read through ``tree``) when they are the
    pinned blob, since the blob id is their hash; otherwise the blob's, from git's objects
    (``blobs``: one ``cat-file`` a whole run shares; None: one for this record). So a copy of
    the files without ``.git`` verifies by hashes, and git is asked only for files that moved."""
    hashes = hashes or TreeHashes()
    by_path = file_pins(git) if pins is None else pins  # ``pins``: already read by the caller
    wanted_pins = [p for p in by_path.values() if p.blob is not None]
    pinned = frozenset(p.path for p in wanted_pins)
    found: dict[str, bytes] = {}
    wanted: list[FilePin] = []
    for pin in wanted_pins:
        data = tree(pin.path)
        oid = pin.blob or ""
        if data is not None and hashes.blob_id(pin.path, data, oid_format(oid)) == oid:
            found[pin.path] = data
        else:
            wanted.append(pin)
    store = BlobStore(root) if blobs is None and wanted else blobs
    if not wanted or store is None:
        return PinnedBytes(found, [], True, frozenset(), pinned)
    try:
        got = store.read([pin.blob or "" for pin in wanted])
    finally:
        if blobs is None:
            store.close()
    missing = []
    for pin in wanted:
        data = got.get(pin.blob or "")
        if data is None:
            missing.append(pin)
        else:
            found[pin.path] = data
    from_git = frozenset(p.path for p in wanted) - {p.path for p in missing}
    return PinnedBytes(found, missing, store.in_repository, from_git, pinned)


def pinned_reader(
    root: Path, git: Mapping[str, Any] | None, fallback: Reader, blobs: BlobStore | None = None
) -> Reader:
    """A reader of a record's references: pinned files as :func:`pinned_bytes` finds them,
    the rest through ``fallback`` (the working tree). A pinned file neither has is a
    :class:`MissingObject` naming the file and, inside git, the fix."""
    if not any(p.blob for p in file_pins(git).values()):
        return fallback
    got = pinned_bytes(root, git, fallback, blobs)
    if got.missing:
        gone = got.missing[0]
        if got.in_repository:
            raise MissingObject(
                f"context file {gone.path}: blob {short(gone.blob or '')} ({gone.how}) "
                "is not in the repository",
                hint=UNSHALLOW_HINT,
            )
        raise MissingObject(
            f"context file {gone.path}: changed since the review, and there is no git "
            f"repository here to read its pinned blob {short(gone.blob or '')} from"
        )
    return got.reader(fallback)


def receipt_paths(files: Sequence[str], git: Mapping[str, Any] | None) -> list[str]:
    """What a receipt's ``context_files`` lists: the changed paths a diff showed, then the
    whole files, each once."""
    diff = git.get("diff") if isinstance(git, Mapping) else None
    shown = diff.get("shown") if isinstance(diff, Mapping) else None
    first = [p for p in shown if isinstance(p, str)] if isinstance(shown, list) else []
    return list(dict.fromkeys([*first, *files]))


def change_lines(git: Mapping[str, Any] | None, lines: int | None = None) -> list[str]:
    """What ``--dry-run`` says of the change under review: its commits, the paths shown and
    (given) the patch's ``lines``."""
    diff = git.get("diff") if isinstance(git, Mapping) else None
    if not isinstance(git, Mapping) or not isinstance(diff, Mapping):
        return []
    c = git.get("commits") or {}
    base, head = str(c.get("base") or "")[:7], str(c.get("head") or "")[:7]
    shown = [p for p in diff.get("shown") or () if isinstance(p, str)]
    count = plural(len(shown), "file")
    if lines is not None:
        count += f" ({plural(lines, 'line')})"
    return [f"change         {count}, {base} to {head}", *(f"  {p}" for p in shown)]
