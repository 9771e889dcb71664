"""File names: the stem a review's files share, the files a segment owns, and the inverse.

``<topic>_deepseek_<model>[_continuation]_<stamp>[-N]`` is a segment's *stem* (the naming
rule is frozen: the seed receipts use it); every file of the segment is the stem plus the
suffix of its kind in :data:`SEGMENT_FILES`. That table is the one definition of what a
segment owns: a new sidecar (a signature, findings) is one more row, and naming, claiming a
free stem, listing orphans and ``--resume-from``'s trust check all follow it.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable
from datetime import UTC, datetime
from functools import lru_cache
from pathlib import Path
from typing import NamedTuple

from deepseek_review.errors import OutputError
from deepseek_review.options.table import check


class SegmentFile(NamedTuple):
    """One kind of file a segment owns."""

    kind: str
    suffix: str
    resume_checked: bool
    """``batch --resume-from`` adopts a segment only if this file, when present, is
    committed unchanged in the trusted revision."""


#: Every file a segment may own, the answer first. The answer claims the stem (it is
#: written first); the receipt is the commit point (written last).
SEGMENT_FILES = (
    SegmentFile("answer", ".md", resume_checked=True),
    SegmentFile("receipt", ".receipt.json", resume_checked=True),
    SegmentFile("record", ".request.json", resume_checked=True),
    SegmentFile("reasoning", ".reasoning.md", resume_checked=False),
    SegmentFile("findings", ".findings.json", resume_checked=True),
    SegmentFile("statement", ".intoto.json", resume_checked=True),
    SegmentFile("signature", ".intoto.json.sig", resume_checked=True),
)
_BY_KIND = {f.kind: f for f in SEGMENT_FILES}
#: Longest first: ``.md`` is also the end of ``.reasoning.md``.
_BY_LENGTH = sorted(SEGMENT_FILES, key=lambda f: -len(f.suffix))

_SUFFIXES = tuple(f.suffix for f in _BY_LENGTH)
_SUFFIX_OF = {f.kind: f.suffix for f in SEGMENT_FILES}

ANSWER_SUFFIX = _BY_KIND["answer"].suffix
RECEIPT_SUFFIX = _BY_KIND["receipt"].suffix
RECORD_SUFFIX = _BY_KIND["record"].suffix
REASONING_SUFFIX = _BY_KIND["reasoning"].suffix
FINDINGS_SUFFIX = _BY_KIND["findings"].suffix
STATEMENT_SUFFIX = _BY_KIND["statement"].suffix
SIGNATURE_SUFFIX = _BY_KIND["signature"].suffix

#: Compiled on first use (by ``re``'s cache): ``verify`` names no model.
_MODEL_UNSAFE = r"[^A-Za-z0-9._-]+"


def split_name(name: str) -> tuple[str, str] | None:
    """``(stem, kind)`` of a segment's file name or path; None for any other name."""
    for f in _BY_LENGTH:
        if name.endswith(f.suffix) and len(name) > len(f.suffix):
            return name[: -len(f.suffix)], f.kind
    return None


def segment_files(stem: str) -> dict[str, str]:
    """Every file a segment with this stem (a name or a repo-relative path) may own, by kind."""
    return {f.kind: stem + f.suffix for f in SEGMENT_FILES}


#: A findings extraction's topic is its review's with this suffix (a self-check's with the
#: other): how ``findings`` finds them beside the review.
FINDINGS_TOPIC_SUFFIX = "-findings"
SELF_CHECK_TOPIC_SUFFIX = "-self-check"
#: The bundled template of a findings extraction (``run --findings-from structured``): a
#: review of a review's answer, whose reply is the findings as one JSON object; its name in
#: a receipt is how ``findings`` tells an extraction's chain.
EXTRACTION_TEMPLATE = "findings-extraction"


def sibling(name: str, kind: str) -> str:
    """The file of ``kind`` of the segment that owns ``name`` (a segment file's name or path)."""
    for suffix in _SUFFIXES:  # inlined split_name: verify asks this for every receipt
        if name.endswith(suffix) and len(name) > len(suffix):
            return name[: -len(suffix)] + _SUFFIX_OF[kind]
    raise ValueError(f"{name}: not a segment file name")


def sibling_paths(answer: Path) -> dict[str, Path]:
    """The files that belong to an answer ``<stem>.md``, by kind."""
    stem = answer.name[: -len(ANSWER_SUFFIX)]
    return {kind: answer.with_name(name) for kind, name in segment_files(stem).items()}


def resume_checked(stem: str) -> list[str]:
    """The files of a segment that ``--resume-from`` requires, when present, to be trusted."""
    return [stem + f.suffix for f in SEGMENT_FILES if f.resume_checked]


# --------------------------------------------------------------------------- stems


def check_topic(topic: str) -> str:
    """``topic`` if it can name files (the ``topic`` option's check), else a ConfigError."""
    return str(check("topic", topic))


def model_slug(model: str) -> str:
    """The model name as it appears in file names (``deepseek-v3.1:671b`` → ``…-671b``)."""
    slug = re.sub(_MODEL_UNSAFE, "-", model).strip("-.")
    return slug or "model"


def utc_stamp(now: datetime | None = None) -> str:
    return (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")


def stem_for(topic: str, model: str, stamp: str, *, continuation: bool) -> str:
    """``<topic>_deepseek_<model>[_continuation]_<stamp>``, as the seed repository names them."""
    middle = "_continuation" if continuation else ""
    return f"{topic}_deepseek_{model_slug(model)}{middle}_{stamp}"


def topic_of(answer_path: str) -> str | None:
    """The topic a file name was made from by :func:`stem_for`; None for other names."""
    name = answer_path.rsplit("/", 1)[-1]
    topic, sep, _ = name.partition("_deepseek_")
    return topic if sep and topic else None


def longest_name(topic: str, stems: Iterable[tuple[str, bool]]) -> str:
    """The longest file name a review may write, for ``(model, is_continuation)`` pairs:
    the stem with the largest clash suffix and the longest extension."""
    stamp = utc_stamp(datetime(2000, 1, 1, tzinfo=UTC))
    longest = _BY_LENGTH[0].suffix
    names = [stem_for(topic, m, stamp, continuation=c) + "-9999" + longest for m, c in stems]
    return max(names, key=lambda n: len(n.encode("utf-8")), default="")


@lru_cache(maxsize=1 << 16)  # a listing sorts by it: each chain's head is asked many times
def name_order(path: str) -> tuple[str, str, int, str]:
    """A sort key that orders the files :func:`claim_answer` names as it made them.

    Plain string order puts ``…Z-10.md`` before ``…Z-2.md`` and both before ``…Z.md`` (the
    first of them). The naming rule is frozen (receipts and the seed fixtures use it), so
    listings sort with this key instead: folder, stem without ``-N``, N (1 for none), suffix.
    """
    folder, _, name = path.rpartition("/")
    # String tests, not a regex (verify sorts every receipt by this): the longest suffix the
    # name ends with, then an ``-N`` (N from 1, ASCII digits) before it; a base holding a
    # newline is no such name. ``tests/verification/test_verify_schema.py`` holds it to the regex
    # ``(?P<base>.*?)(?:-(?P<n>[1-9][0-9]*))?(?P<suffix>…)``.
    for suffix in _SUFFIXES:
        if name.endswith(suffix):
            stem = name[: len(name) - len(suffix)]
            base, dash, n = stem.rpartition("-")
            if not (dash and n and n[0] != "0" and n.isascii() and n.isdigit()):
                base, n = stem, ""
            if "\n" in base:
                break
            return folder, base, int(n or 1), suffix
    return folder, name, 0, ""


def unreceipted_answers(names: Collection[str]) -> list[str]:
    """The answer files of a folder listing (names :func:`stem_for` makes) whose receipt is
    not beside them: a run stopped between the answer and its receipt, the commit point."""
    out = []
    for n in names:
        # Most answers have their receipt: one string test spares them the parse below.
        if not n.endswith(ANSWER_SUFFIX) or n[: -len(ANSWER_SUFFIX)] + RECEIPT_SUFFIX in names:
            continue
        split = split_name(n)
        if split is None or split[1] != "answer" or topic_of(n) is None:
            continue
        if split[0] + RECEIPT_SUFFIX not in names:
            out.append(n)
    return sorted(out)


def orphan_files(names: Collection[str]) -> list[str]:
    """The files of the segments of a folder listing that have no receipt, answer first
    per segment (:func:`unreceipted_answers`): left by a run stopped before its receipt."""
    out = []
    for answer in unreceipted_answers(names):
        stem = answer[: -len(ANSWER_SUFFIX)]
        out += [name for name in segment_files(stem).values() if name in names]
    return out


def claim_answer(folder: Path, stem: str, data: bytes, *, shown_folder: str) -> Path:
    """Write the answer under the first free name ``stem``, ``stem-2``, ...

    The answer is written first and is the claim on the name: any other file of a segment
    already present under a candidate stem also makes it taken, so stale files are never
    mixed in.
    """
    from deepseek_review.records.storage import (
        write_new,  # here: readers of names (verify, show) write nothing
    )

    for n in range(1, 10_000):
        name = stem if n == 1 else f"{stem}-{n}"
        files = segment_files(name)
        answer = folder / files.pop("answer")
        if any((folder / other).exists() for other in files.values()):
            continue
        try:
            write_new(answer, data)
        except FileExistsError:
            continue
        except OSError as exc:
            raise OutputError(
                f"{shown_folder}/{answer.name}: cannot write ({exc.strerror or exc})"
            ) from None
        return answer
    raise OutputError(f"{shown_folder}: no free file name for {stem}")
