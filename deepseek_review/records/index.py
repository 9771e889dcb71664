"""One index of receipts: who claims an answer, who continues it, and chains walked once.

Receipts only link backwards (``previous_answer_path``); an index of the receipts of the
folders involved gives both directions. ``show``/``continue`` (:func:`records.chain.find_chain`),
batch resume and ``verify`` each load receipts their own way (a cheap look at two fields, a
full load, a load that keeps the problems) and index them here, so forks, loops, answers
claimed twice and answers nobody claims are found by the same walks everywhere.

An :class:`Entry` is what the index needs of a receipt: the answer it claims (None when it
claims nothing: it is not valid) and the answer it says it continues (even when it is not
valid: ``continue`` must not fork a chain through a broken receipt either).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Generic, Literal, NamedTuple, TypeVar

from deepseek_review.errors import InputError
from deepseek_review.git.runner import resolve_inside
from deepseek_review.records.naming import RECEIPT_SUFFIX

T = TypeVar("T")


@dataclass(slots=True)
class Entry(Generic[T]):
    """A receipt as the index knows it, with what its loader made of it (read-only by
    convention; a verify run makes one per receipt)."""

    rel: str
    answer: str | None
    """The answer it claims; None when it claims none (not a valid receipt)."""
    continues: str | None
    """The ``previous_answer_path`` it names, valid or not."""
    item: T


class Break(NamedTuple):
    """Where a walk along a chain stopped before its end."""

    kind: Literal["link", "unclaimed", "claimed-twice", "loop", "fork"]
    at: str
    """The answer at which it stopped."""
    rels: tuple[str, ...] = ()
    """The receipts involved: the claimants, the continuations of a fork."""
    detail: str = ""
    """The link check's words (kind ``link``)."""


#: Checks one link of a chain (an answer a receipt continues): None, or what is wrong.
LinkCheck = Callable[[str], str | None]
#: Told every receipt a walk takes, in order; may raise to stop the walk.
Visit = Callable[[str], None]


def folder_of(rel: str) -> str:
    return rel.rpartition("/")[0]


def receipts_in(root: Path, folder: str) -> list[str]:
    """The receipts of a folder (repo-relative, sorted); none when it cannot be listed."""
    return files_in(root, folder, RECEIPT_SUFFIX)


def files_in(root: Path, folder: str, suffix: str) -> list[str]:
    """The files of a folder whose names end in ``suffix`` (repo-relative, sorted); none when
    it cannot be listed."""
    try:
        base, rel_folder = resolve_inside(root, folder or ".", what="folder")
        names = sorted(n for n in os.listdir(base) if n.endswith(suffix))
    except (InputError, OSError):
        return []
    prefix = "" if rel_folder in ("", ".") else rel_folder + "/"
    return [prefix + n for n in names]


class ReceiptIndex(Generic[T]):
    """The receipts of some folders of ``root``, loaded by ``load`` (None: not a receipt
    to index at all), each at most once; a folder is scanned the first time it is asked about
    (an answer's folder when its claimants are asked for). ``lazy`` False: only what was
    added or got, no folder scanned."""

    def __init__(
        self, root: Path, load: Callable[[str], Entry[T] | None], *, lazy: bool = True
    ) -> None:
        self.root = root
        self.load = load
        self.lazy = lazy
        self.entries: dict[str, Entry[T]] = {}
        self._owners: dict[str, list[str]] = {}
        self._continuers: dict[str, list[str]] = {}
        self._valid_continuers: dict[str, list[str]] = {}
        self._scanned: set[str] = set()
        self._loaded: set[str] = set()
        self._heads: dict[str, tuple[str, int] | None] = {}

    # -- filling

    def add(self, entry: Entry[T]) -> Entry[T]:
        self.entries[entry.rel] = entry
        self._loaded.add(entry.rel)
        if entry.answer is not None:
            self._owners.setdefault(entry.answer, []).append(entry.rel)
        if entry.continues is not None:
            self._continuers.setdefault(entry.continues, []).append(entry.rel)
            if entry.answer is not None:
                self._valid_continuers.setdefault(entry.continues, []).append(entry.rel)
        return entry

    def get(self, rel: str) -> Entry[T] | None:
        """The entry of ``rel``, loaded on first use."""
        if rel not in self._loaded:
            self._loaded.add(rel)
            entry = self.load(rel)
            if entry is not None:
                self.add(entry)
        return self.entries.get(rel)

    def mark_scanned(self, folders: Iterable[str]) -> None:
        """Folders whose every receipt was added already."""
        self._scanned.update(folders)

    def scan(self, folder: str) -> None:
        """Load every receipt of ``folder`` (once)."""
        if folder in self._scanned or not self.lazy:
            return
        self._scanned.add(folder)
        for rel in receipts_in(self.root, folder):
            self.get(rel)

    # -- asking

    def owners(self, answer: str) -> list[str]:
        """The receipts claiming ``answer`` (its folder scanned on a miss)."""
        if answer not in self._owners:
            self.scan(folder_of(answer))
        return self._owners.get(answer, [])

    def continuers(self, answer: str, *, valid: bool = False) -> list[str]:
        """The receipts that say they continue ``answer``, or only the valid ones (its folder
        scanned on a miss: a continuation is written beside the segment it continues)."""
        if answer not in self._continuers:
            self.scan(folder_of(answer))
        return (self._valid_continuers if valid else self._continuers).get(answer, [])

    def continued(self, answer: str) -> bool:
        """Whether a valid receipt already indexed continues ``answer`` (no scan)."""
        return answer in self._valid_continuers

    # -- walking

    def head(self, rel: str) -> tuple[str, int]:
        """Where a walk back from ``rel`` ends, and after how many receipts: each step goes to
        the one receipt claiming the answer the last one continues, and stops at a primary,
        at an answer claimed by none or several, or before a receipt already passed.

        Memoised per answer where no loop is involved, so listing 10,000 segments of one
        chain in order costs one walk.
        """
        entry = self.entries[rel]
        if entry.answer is None or entry.continues is None:
            return rel, 0
        path: list[tuple[str, Entry[T]]] = []
        cur = entry.continues
        tail: tuple[str, int] | None = None
        while True:
            if cur in self._heads:
                tail = self._heads[cur]
                break
            owners = self.owners(cur)
            if len(owners) != 1:
                break
            owner = self.entries[owners[0]]
            if owner is entry or any(owner is o for _, o in path):  # a loop: not memoised
                back, _ = self.walk_back(entry.continues, seen={entry.answer})
                return (back[-1], len(back)) if back else (rel, 0)
            path.append((cur, owner))
            if owner.continues is None:
                break
            cur = owner.continues
        for answer, owner in reversed(path):
            tail = (owner.rel, 1) if tail is None else (tail[0], tail[1] + 1)
            self._heads[answer] = tail
        return tail or (rel, 0)

    def walk_back(
        self,
        answer: str,
        *,
        seen: Collection[str] = (),
        link: LinkCheck | None = None,
        visit: Visit | None = None,
        memo: dict[str, Break | None] | None = None,
    ) -> tuple[list[str], Break | None]:
        """From the receipt claiming ``answer`` back to a primary: the receipts passed, and
        where the walk broke (None: it reached a primary).

        Every answer on the way must pass ``link`` and be claimed by exactly one receipt, and
        none may come twice (``seen``: answers already in the chain). ``memo`` (answer → how
        a walk from it ended) makes a run over 10,000 segments of one chain one walk.
        """
        rels: list[str] = []
        walked: list[str] = []
        been = set(seen)
        cur: str | None = answer
        result: Break | None = None
        while cur is not None:
            if memo is not None and cur in memo:
                result = memo[cur]
                break
            if cur in been:
                result = Break("loop", cur)
                break
            been.add(cur)
            walked.append(cur)
            problem = link(cur) if link else None
            if problem is not None:
                result = Break("link", cur, detail=problem)
                break
            owners = self.owners(cur)
            if len(owners) != 1:
                kind: Literal["unclaimed", "claimed-twice"] = (
                    "claimed-twice" if owners else "unclaimed"
                )
                result = Break(kind, cur, tuple(sorted(owners)))
                break
            rels.append(owners[0])
            if visit:
                visit(owners[0])
            entry = self.entries[owners[0]]
            cur = entry.continues
        if memo is not None:
            for a in walked:
                memo[a] = result
        return rels, result

    def walk_forward(
        self, rel: str, *, seen: Collection[str] = (), visit: Visit | None = None
    ) -> tuple[list[str], Break | None]:
        """From ``rel`` forward through the receipts continuing each answer in turn: the
        receipts passed, and the fork or loop that stopped the walk (None: it reached the
        end). Any receipt that says it continues an answer counts (the index's loader decides
        which are in it)."""
        rels: list[str] = []
        entry = self.entries[rel]
        been = set(seen) | {entry.answer or ""}
        while entry.answer is not None:
            nxt = [r for r in self.continuers(entry.answer) if r != entry.rel]
            if not nxt:
                return rels, None
            if len(nxt) > 1:
                return rels, Break("fork", entry.answer, tuple(sorted(nxt)))
            if visit:
                visit(nxt[0])
            following = self.entries[nxt[0]]
            if following.answer in been:
                return rels, Break("loop", following.answer or "", (following.rel,))
            rels.append(following.rel)
            been.add(following.answer or "")
            entry = following
        return rels, None
