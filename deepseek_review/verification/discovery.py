"""Finding the receipts a PATH names: receipts, answers, folders searched recursively."""

from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..errors import InputError
from ..records.naming import RECEIPT_SUFFIX, name_order, unreceipted_answers
from ..records.stored import receipt_for
from ..repo import resolve_inside
from .reports import DEFAULT_FOLDER

# --------------------------------------------------------------------------- discovery


def _walk(top: str, orphans: list[str]) -> Iterator[str]:
    """Receipt files below ``top`` (absolute), as paths relative to it; symlinked folders
    are not entered (they could lead out of the repository, or loop). The answers found
    without their receipt are added to ``orphans`` (relative to ``top`` too)."""
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            with os.scandir(os.path.join(top, rel_dir) if rel_dir else top) as it:
                entries = list(it)
        except OSError:
            continue
        prefix = f"{rel_dir}/" if rel_dir else ""
        answers: set[str] = set()
        for e in entries:
            rel = prefix + e.name
            if e.name.endswith(RECEIPT_SUFFIX):
                if not e.is_dir(follow_symlinks=False):
                    answers.add(e.name)
                    yield rel
            elif e.name.endswith(".md"):
                if e.is_file(follow_symlinks=False):
                    answers.add(e.name)
            elif e.is_dir(follow_symlinks=False) and e.name != ".git":
                stack.append(rel)
        orphans.extend(prefix + n for n in unreceipted_answers(answers))


@dataclass(frozen=True)
class Discovery:
    receipts: list[str]
    """The receipts found (sorted, unique), repo-relative."""
    shown: list[str]
    """The PATHs as repo-relative strings."""
    scanned: set[str]
    """Folders whose receipts are all listed (the chain index need not scan them again)."""
    orphans: list[str]
    """Answer files without their receipt in the folders searched (never verified)."""


def discover(root: Path, paths: Sequence[str], default_folder: str = DEFAULT_FOLDER) -> Discovery:
    """Receipts named by ``paths`` (receipts, answers, folders; repo-relative or absolute).

    Raises :class:`InputError` for a PATH that does not exist or is outside the root. With
    no PATH, the default folder is searched, and its absence means no receipts.
    """
    found: set[str] = set()
    shown: list[str] = []
    scanned: set[str] = set()
    orphans: set[str] = set()
    for user_path in paths or [default_folder]:
        path, rel = resolve_inside(root, user_path, what="PATH")
        shown.append(rel)
        if path.is_dir():
            prefix = "" if rel == "." else rel + "/"
            unclaimed: list[str] = []
            for sub in _walk(str(path), unclaimed):
                found.add(prefix + sub)
                scanned.add((prefix + sub).rpartition("/")[0])
            orphans.update(prefix + o for o in unclaimed)
            scanned.add("" if rel == "." else rel)
        elif path.is_file() or (path.exists() and not path.is_dir()):
            found.add(receipt_for(root, rel, folders=True))
        elif paths:
            raise InputError(f"{user_path}: no such file or folder")
    return Discovery(sorted(found), shown, scanned, sorted(orphans, key=name_order))
