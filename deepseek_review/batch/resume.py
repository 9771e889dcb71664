"""Batch resume: what an earlier run of the same batch left in an output folder.

A folder's receipts are loaded once into the records index (:mod:`.records.index`); an entry
whose exact request (``prompt_sha256``, endpoint, topic) already has a chain there is not sent
again: a finished chain is skipped, a chain left cut off is continued. A chain that forks or
loops, or whose answers are missing or outside the repository, is not resumed from, and when
the trust rule is on (``--trusted-rev``/``--resume-from``, ``--allowed-signers``, ``CI=true``)
every segment of it must be admitted by the rule (:func:`believed_segments`). Answers
without a receipt are listed as orphans (never adopted).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

from deepseek_review.batch.manifest import PlannedEntry
from deepseek_review.chat.endpoint import canonical
from deepseek_review.errors import InputError, OutputError
from deepseek_review.git.runner import resolve_inside
from deepseek_review.records.index import Entry, ReceiptIndex
from deepseek_review.records.naming import RECEIPT_SUFFIX, orphan_files, topic_of
from deepseek_review.records.stored import ChainSegment, load_segment
from deepseek_review.util.logs import log


@dataclass
class FolderIndex:
    """The receipts of one output folder (loaded once per batch run) and what lies there."""

    receipts: ReceiptIndex[ChainSegment]
    primaries: dict[tuple[str, str], list[ChainSegment]] = field(default_factory=dict)
    by_prompt: dict[str, list[ChainSegment]] = field(default_factory=dict)
    """The primaries by ``prompt_sha256`` alone, whichever server answered (a pool)."""
    files: set[str] = field(default_factory=set)
    """Every file of the folder, repo-relative."""
    orphans: list[str] = field(default_factory=list)


def _resumable(root: Path, rel: str) -> Entry[ChainSegment] | None:
    """A receipt loaded in full for resuming; one that does not load is passed over."""
    try:
        seg = load_segment(root, rel)
    except InputError as exc:
        log.warning("%s: ignored for resuming (%s)", rel, exc.message)
        return None
    return Entry(rel, seg.answer_path, seg.receipt.previous_answer_path, seg)


def index_folder(root: Path, folder: Path) -> FolderIndex:
    """Every receipt in ``folder`` (loaded once per batch run), and its orphan answers."""
    idx = FolderIndex(ReceiptIndex(root, partial(_resumable, root), lazy=False))
    try:
        names = set(os.listdir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return idx
    except OSError as exc:
        raise OutputError(f"{folder}: cannot list ({exc.strerror or exc})") from None
    rel_dir = folder.relative_to(root).as_posix()
    prefix = "" if rel_dir in ("", ".") else rel_dir + "/"
    idx.files = {prefix + n for n in names}
    for name in sorted(names):
        entry = idx.receipts.get(prefix + name) if name.endswith(RECEIPT_SUFFIX) else None
        if entry is not None and entry.continues is None:
            seg = entry.item
            key = (seg.receipt.prompt_sha256, canonical(seg.receipt.endpoint))
            idx.primaries.setdefault(key, []).append(seg)
            idx.by_prompt.setdefault(key[0], []).append(seg)
    idx.orphans = [prefix + n for n in orphan_files(names)]
    return idx


def _walk(idx: FolderIndex, primary: ChainSegment) -> list[ChainSegment] | None:
    """The chain from ``primary`` forward; None if it forks or loops (not ours to guess)."""
    rels, broken = idx.receipts.walk_forward(primary.receipt_path)
    if broken is not None:
        log.warning("%s: its chain forks or loops; not resuming from it", primary.receipt_path)
        return None
    return [primary, *(idx.receipts.entries[r].item for r in rels)]


def _answer_inside(root: Path, answer_path: str) -> bool:
    """A receipt's answer is taken as done only if it is a file inside the repository: a
    hostile or stale receipt must not make a batch skip a review (or read outside the root)."""
    try:
        path, _ = resolve_inside(root, answer_path, what="answer_path")
    except InputError:
        return False
    return path.is_file()


def believed_segments(
    trusted_rev: str | None, root: Path, folders: list[Path]
) -> Callable[[str], bool] | None:
    """Which segments (by receipt) an earlier run left may be adopted: those the trust rule
    of :mod:`deepseek_review.trust.rule` admits when it is on (``--trusted-rev``, also spelled
    ``--resume-from``, ``--allowed-signers``, or ``CI=true``), as for every other reader of
    reviews (a ``split`` entry's parts too); None (the rule off): all of them."""
    from deepseek_review.trust.rule import TrustPolicy, admit, committed_unchanged

    policy = TrustPolicy.configured(trusted_rev)
    existing = [f.relative_to(root).as_posix() for f in folders if f.is_dir()]
    if not policy.enforced:
        return None
    if not existing:  # nothing to adopt; a revision that is not a commit is refused all the same
        if policy.trusted_rev is not None:
            committed_unchanged(root, policy.trusted_rev, [])
        return None
    admission, _ = admit(root, existing, policy)
    set_aside = admission.set_aside

    def believed(rel: str) -> bool:
        if admission.believed(rel):
            return True
        log.warning(
            "%s: set aside by the trust rule (%s); not resuming from it",
            rel,
            set_aside.get(rel, "it does not verify"),
        )
        return False

    return believed


def existing_chain(
    idx: FolderIndex,
    root: Path,
    planned: PlannedEntry,
    believed: Callable[[str], bool] | None = None,
    *,
    any_server: bool = False,
) -> list[ChainSegment] | None:
    """The chain of an earlier run of exactly this request, if one exists.

    A primary counts when its receipt's ``prompt_sha256`` and endpoint equal the plan's (with
    ``any_server``, a batch over a pool of interchangeable servers: whichever answered), its
    file name carries the entry's topic, its request record exists, and every answer file of
    its chain is there. A complete chain is preferred, then the longest, then the newest.
    """
    plan = planned.plan
    sha = plan.prepared.prompt_sha256
    if any_server:
        candidates = idx.by_prompt.get(sha, [])
    else:
        candidates = idx.primaries.get((sha, canonical(plan.endpoint.url)), [])
    chains = []
    for primary in candidates:
        if primary.record is None or topic_of(primary.answer_path) != planned.topic:
            continue
        chain = _walk(idx, primary)
        if chain is None:
            continue
        if not all(_answer_inside(root, s.answer_path) for s in chain):
            log.warning(
                "%s: an answer of its chain is missing or outside the repository; not "
                "resuming from it",
                primary.receipt_path,
            )
            continue
        if believed is not None and not all(believed(s.receipt_path) for s in chain):
            continue
        chains.append(chain)
    if not chains:
        return None
    return max(
        chains,
        key=lambda c: (c[-1].finish_reason != "length", len(c), c[0].receipt.created_at),
    )
