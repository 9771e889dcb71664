"""``--since-last-review``: narrow a change to what is new since the last review of its topic.

The newest primary receipt of the same topic in the output folder is found, and the commit
its request record pinned as the head of its change. When that commit is an ancestor of the
change's head, only what changed since it is reviewed; when it is not (a rebase, a
force-push) the whole range is, and the tool says so. The range is worked out from the
records and git, never guessed.
"""

from __future__ import annotations

from pathlib import Path

from .errors import InputError
from .gitdiff import Range
from .gitread import is_ancestor, is_oid, short
from .logs import log
from .options import name_of
from .records.index import receipts_in
from .records.naming import sibling, topic_of
from .records.request_record import RequestRecord
from .repo import read_regular_file


def last_reviewed_head(root: Path, folder: str, topic: str) -> tuple[str, str] | None:
    """(commit, record path) of the newest review of ``topic`` in ``folder`` that pinned a
    change's head; None when there is none. Records that cannot be read are passed over."""
    best: tuple[str, str, str] | None = None
    for rel in receipts_in(root, folder):
        name = rel.rpartition("/")[2]
        if topic_of(name) != topic or "_continuation_" in name:
            continue
        record_rel = sibling(rel, "record")
        try:
            record = RequestRecord.load(read_regular_file(root / record_rel), record_rel)
        except (InputError, OSError):
            continue
        commits = record.git.get("commits") if record.git else None
        diff = record.git.get("diff") if record.git else None
        head = commits.get("head") if isinstance(commits, dict) else None
        if not isinstance(head, str) or not is_oid(head) or not isinstance(diff, dict):
            continue
        key = record.created_at or ""
        if best is None or key > best[0]:
            best = (key, head, record_rel)
    return None if best is None else (best[1], best[2])


def narrow(root: Path, folder: str, topic: str, rng: Range) -> Range:
    """``rng`` narrowed to what changed since the last review of ``topic``."""
    found = last_reviewed_head(root, folder, topic)
    if found is None:
        log.info("no earlier review of topic %s in %s: reviewing the whole change", topic, folder)
        return rng
    last, where = found
    if last == rng.head:
        raise InputError(
            f"{name_of('since_last_review')}: nothing new since the last review ({where} "
            f"pinned {short(last)}, the head of the change)"
        )
    if not is_ancestor(root, last, rng.head):
        log.warning(
            "the last review (%s) pinned %s, which is not an ancestor of %s (a rebase or a "
            "force-push?): reviewing the whole change",
            where,
            short(last),
            short(rng.head),
        )
        return rng
    log.info("reviewing what changed since %s, which the last review (%s) pinned", last, where)
    return Range(last, rng.head, None, f"{short(last)}..{short(rng.head)}")
