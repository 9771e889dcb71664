"""Finding the receipts a PATH names: receipts, answers, folders searched recursively."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import NamedTuple

from deepseek_review.git.runner import resolve_inside
from deepseek_review.records.naming import (
    RECEIPT_SUFFIX,
    SIGNATURE_SUFFIX,
    STATEMENT_SUFFIX,
    name_order,
    unreceipted_answers,
)
from deepseek_review.records.stored import no_such_path, receipt_for
from deepseek_review.verification.reports import DEFAULT_FOLDER

# --------------------------------------------------------------------------- discovery


_SIGNED = (STATEMENT_SUFFIX, SIGNATURE_SUFFIX)


class _Listing(NamedTuple):
    """What a walk saw beyond the receipts (paths relative to the folder walked)."""

    orphans: list[str]
    """Answers without their receipt."""
    folders: list[str]
    """Folders listed whole."""
    signed: list[str]
    """Entries named like a segment's statement or signature, of any file type."""


def _walk(top: str, seen: _Listing) -> Iterator[str]:
    """Receipt files below ``top`` (absolute), as paths relative to it; symlinked folders
    are not entered (they could lead out of the repository, or loop). What else it sees
    goes into ``seen``."""
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            with os.scandir(os.path.join(top, rel_dir) if rel_dir else top) as it:
                entries = list(it)
        except OSError:
            continue
        seen.folders.append(rel_dir)
        prefix = f"{rel_dir}/" if rel_dir else ""
        answers: set[str] = set()
        for e in entries:
            name = e.name
            if name.endswith(RECEIPT_SUFFIX):
                if not e.is_dir(follow_symlinks=False):
                    answers.add(name)
                    yield prefix + name
            elif name.endswith(".md"):
                if e.is_file(follow_symlinks=False):
                    answers.add(name)
            else:
                if name.endswith(_SIGNED):
                    seen.signed.append(prefix + name)
                if e.is_dir(follow_symlinks=False) and name != ".git":
                    stack.append(prefix + name)
        seen.orphans.extend(prefix + n for n in unreceipted_answers(answers))


class Discovery(NamedTuple):
    receipts: list[str]
    """The receipts found (sorted, unique), repo-relative."""
    shown: list[str]
    """The PATHs as repo-relative strings."""
    scanned: set[str]
    """Folders whose receipts are all listed (the chain index need not scan them again)."""
    orphans: list[str]
    """Answer files without their receipt in the folders searched (never verified)."""
    listed: set[str]
    """Folders listed whole (repo-relative, ``""`` for the root)."""
    signed: set[str]
    """The entries of ``listed`` folders named like a statement or a signature: any other
    such file of those folders did not exist when they were listed."""


def discover(root: Path, paths: Sequence[str], default_folder: str = DEFAULT_FOLDER) -> Discovery:
    """Receipts named by ``paths`` (receipts, answers, folders; repo-relative or absolute).

    Raises :class:`InputError` for a PATH that does not exist or is outside the root. With
    no PATH, the default folder is searched, and its absence means no receipts.
    """
    found: set[str] = set()
    shown: list[str] = []
    scanned: set[str] = set()
    orphans: set[str] = set()
    listed: set[str] = set()
    signed: set[str] = set()
    for user_path in paths or [default_folder]:
        path, rel = resolve_inside(root, user_path, what="PATH")
        shown.append(rel)
        if path.is_dir():
            top = "" if rel == "." else rel
            prefix = top + "/" if top else ""
            seen = _Listing([], [], [])
            for sub in _walk(str(path), seen):
                found.add(prefix + sub)
                scanned.add((prefix + sub).rpartition("/")[0])
            orphans.update(prefix + o for o in seen.orphans)
            listed.update(prefix + f if f else top for f in seen.folders)
            signed.update(prefix + n for n in seen.signed)
            scanned.add(top)
        elif path.is_file() or (path.exists() and not path.is_dir()):
            found.add(receipt_for(root, rel, folders=True))
        elif paths:
            raise no_such_path(user_path)
    receipts = sorted(found)
    return Discovery(receipts, shown, scanned, sorted(orphans, key=name_order), listed, signed)
