"""``--since-last-review``: narrow a change to what is new since the last review of its topic.

Of the primary receipts of the same topic in the output folder that the trust rule admits
(:mod:`trust.rule`), the one whose pinned head commit comes last on the way to the change's head
(git's history decides, never a record's own ``created_at``) is found. When that commit is an
ancestor of the change's head, only what changed since it is reviewed; when it is not (a rebase, a
force-push) the whole range is, and the tool says so. The range is worked out from the
records and git, never guessed.
"""

from __future__ import annotations

from pathlib import Path

from deepseek_review.errors import InputError, NothingNew, ReviewError
from deepseek_review.git.diff import Range
from deepseek_review.git.objects import is_ancestor, is_oid, short
from deepseek_review.git.runner import read_regular_file
from deepseek_review.options.table import name_of
from deepseek_review.records.index import files_in, receipts_in
from deepseek_review.records.naming import sibling, topic_of
from deepseek_review.records.request_record import RequestRecord
from deepseek_review.records.split_record import SPLIT_SUFFIX, load_split
from deepseek_review.trust.rule import TrustPolicy, admit
from deepseek_review.util.logs import log


def reviewed_heads(root: Path, folder: str, topic: str) -> list[tuple[str, str]]:
    """(commit, record path) of every review of ``topic`` in ``folder`` that the trust rule
    admits (:mod:`trust.rule`) and whose request record pinned a change's head; a split review
    of ``topic`` (``run --split``) counts, with its split record's path, when all its parts
    are done and every part's record pinned the same head. Records that cannot be read are
    passed over; a record's own dates are never read."""
    receipts = [
        rel
        for rel in receipts_in(root, folder)
        if topic_of(rel.rpartition("/")[2]) == topic and "_continuation_" not in rel
    ]
    splits = _finished_splits(root, folder, topic)
    if not receipts and not splits:
        return []
    admission, _ = admit(
        root, receipts + [r for _, parts in splits for r in parts], TrustPolicy.configured()
    )
    note = admission.note()
    if note is not None:
        log.warning("%s: %s", name_of("since_last_review"), note)
    out = []
    for rel in receipts:
        head = _pinned_head(root, rel) if admission.believed(rel) else None
        if head is not None:
            out.append((head, sibling(rel, "record")))
    for split_rel, parts in splits:  # every part admitted, all of one head
        heads = {_pinned_head(root, rel) if admission.believed(rel) else None for rel in parts}
        if len(heads) == 1 and (head := heads.pop()) is not None:
            out.append((head, split_rel))
    return out


def _pinned_head(root: Path, receipt: str) -> str | None:
    """The head of the change the request record of ``receipt`` pinned; None when it pinned
    none or cannot be read."""
    record_rel = sibling(receipt, "record")
    try:
        record = RequestRecord.load(read_regular_file(root / record_rel), record_rel)
    except (InputError, OSError):
        return None
    commits = record.git.get("commits") if record.git else None
    diff = record.git.get("diff") if record.git else None
    head = commits.get("head") if isinstance(commits, dict) else None
    if isinstance(head, str) and is_oid(head) and isinstance(diff, dict):
        return head
    return None


def _finished_splits(root: Path, folder: str, topic: str) -> list[tuple[str, list[str]]]:
    """(split record path, its parts' first receipts) of every split review of ``topic`` in
    ``folder`` whose parts and synthesis are all done; records that do not load are passed
    over (``verify`` reports them)."""
    out = []
    prefix = folder.rstrip("/") + "/" if folder not in ("", ".") else ""
    for rel in files_in(root, folder, SPLIT_SUFFIX):
        try:
            data = load_split(root, rel)
        except ReviewError:
            continue
        parts = data["parts"]
        done = all(p.get("status") == "done" and p.get("receipts") for p in parts)
        if data.get("topic") != topic or not done or data["synthesis"].get("status") != "done":
            continue
        firsts = [p["receipts"][0] for p in parts]
        if all(r.startswith(prefix) for r in firsts):
            out.append((rel, firsts))
    return out


def last_reviewed_head(root: Path, folder: str, topic: str, head: str) -> tuple[str, str] | None:
    """(commit, record path) of the last review of ``topic`` in ``folder`` on the way to
    ``head``: of the pinned heads that are ancestors of ``head`` (or ``head`` itself), the one
    every other is an ancestor of, by git's history (never by a record's ``created_at``, which
    its writer chose). None when no admitted review pinned such a commit; when some pinned
    only commits off ``head``'s history, the first of them (the caller says so)."""
    found = reviewed_heads(root, folder, topic)
    on_path = [f for f in found if f[0] == head or is_ancestor(root, f[0], head)]
    if not on_path:
        return found[0] if found else None
    best = on_path[0]
    for cand in on_path[1:]:
        if cand[0] != best[0] and is_ancestor(root, best[0], cand[0]):
            best = cand
    return best


def narrow(root: Path, folder: str, topic: str, rng: Range) -> Range:
    """``rng`` narrowed to what changed since the last review of ``topic``."""
    found = last_reviewed_head(root, folder, topic, rng.head)
    if found is None:
        log.info("no earlier review of topic %s in %s: reviewing the whole change", topic, folder)
        return rng
    last, where = found
    if last == rng.head:
        raise NothingNew(
            f"nothing new since the last review ({where} pinned {short(last)}, the head of "
            f"the change; {name_of('since_last_review')}): nothing was sent"
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
