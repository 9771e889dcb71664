"""The in-toto Statement v1 of one segment: its files as subjects, its receipt as predicate.

Deterministic: the same segment files give the same bytes, so ``sign`` can complete a segment
whose statement was written but not signed (a crash between the two) by rebuilding it and
comparing. The subjects are every file of the segment (answer, receipt, request record,
reasoning when kept), named by their repository-relative path and digested with sha256, as
the resource descriptor spec asks of immutable artifacts. The predicate
(:data:`PREDICATE_TYPE`, schema ``schemas/deepseek-review-signed-review-v1.schema.json``)
carries the receipt, the request record's digest, the tool's version, the commits the context
was pinned to (when the record names any) and the model the server reported.
"""

from __future__ import annotations

import hashlib
import posixpath
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deepseek_review._version import __version__
from deepseek_review.errors import InputError
from deepseek_review.git.runner import read_regular_file, resolve_inside
from deepseek_review.records.canonical import RECEIPT_DECODER, RECORD_DECODER, pretty_json
from deepseek_review.records.naming import SEGMENT_FILES, sibling
from deepseek_review.util.project import FORMER_SIGNED_REVIEW, SIGNED_REVIEW

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = SIGNED_REVIEW
"""This project's URI for it (:mod:`util.project`), its JSON Schema's ``$id``; a change of shape
is a new version (``/v2``)."""
#: The predicate types a statement may carry and still verify: this one, and the one signed
#: statements of earlier versions carry (their signature covers it).
PREDICATE_TYPES = (PREDICATE_TYPE, FORMER_SIGNED_REVIEW)

#: The segment files a statement covers, in subject order (not the statement nor its sig).
SUBJECT_KINDS = tuple(f.kind for f in SEGMENT_FILES if f.kind not in ("statement", "signature"))


@dataclass(frozen=True)
class SegmentFiles:
    """The bytes of a segment's files as read now, by kind (absent kinds left out)."""

    receipt_path: str
    files: Mapping[str, tuple[str, bytes]]
    """kind → (repository-relative path, bytes)."""

    @classmethod
    def read(cls, root: Path, receipt_rel: str) -> SegmentFiles:
        """Read every file of the segment that exists; the receipt and its answer must."""
        found: dict[str, tuple[str, bytes]] = {}
        for kind in SUBJECT_KINDS:
            rel = sibling(receipt_rel, kind)
            path, rel = resolve_inside(root, rel, what=kind)
            try:
                found[kind] = (rel, read_regular_file(path))
            except FileNotFoundError:
                if kind in ("receipt", "answer"):
                    raise InputError(f"{rel}: missing; cannot sign its segment") from None
            except OSError as exc:
                raise InputError(f"{rel}: cannot read ({exc.strerror or exc})") from None
        return cls(receipt_rel, found)


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _json(raw: bytes, decoder: Any, rel: str) -> Any:
    try:
        return decoder.decode(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{rel}: not valid JSON ({exc})") from None


def predicate(seg: SegmentFiles) -> dict[str, Any]:
    """What a signer claims about the segment, beyond its files' digests."""
    receipt_rel, receipt_raw = seg.files["receipt"]
    receipt = _json(receipt_raw, RECEIPT_DECODER, receipt_rel)
    if not isinstance(receipt, dict):
        raise InputError(f"{receipt_rel}: not a receipt (not a JSON object)")
    out: dict[str, Any] = {
        "receipt": receipt,
        "tool": {"name": "deepseek-review", "version": __version__},
        "requestRecord": None,
        "serverModel": None,
        "pinnedCommits": [],
    }
    if "record" in seg.files:
        record_rel, record_raw = seg.files["record"]
        out["requestRecord"] = {"name": record_rel, "digest": {"sha256": sha256_hex(record_raw)}}
        record = _json(record_raw, RECORD_DECODER, record_rel)
        response = record.get("response") if isinstance(record, dict) else None
        model = response.get("model") if isinstance(response, dict) else None
        out["serverModel"] = model if isinstance(model, str) else None
        out["pinnedCommits"] = _pinned(record)
    return out


def _pinned(record: Any) -> list[dict[str, str]]:
    """The commits the context was pinned to: the record's ``git.commits`` (``base``,
    ``head``, ``merge_base``; written by reviews pinned to git), as ``{"role", "commit"}``;
    records without pins give none."""
    git = record.get("git") if isinstance(record, dict) else None
    commits = git.get("commits") if isinstance(git, dict) else None
    if not isinstance(commits, dict):
        return []
    return [
        {"role": role, "commit": commit}
        for role, commit in commits.items()
        if isinstance(role, str) and isinstance(commit, str)
    ]


def subjects(seg: SegmentFiles) -> list[dict[str, Any]]:
    return [
        {"name": rel, "digest": {"sha256": sha256_hex(data)}}
        for kind in SUBJECT_KINDS
        if kind in seg.files
        for rel, data in [seg.files[kind]]
    ]


def _same_file(name: str) -> str:
    """What a subject name points at on any file system: ``./`` and ``a/../`` resolved,
    ``\\`` as ``/``, case and Unicode normalisation folded (macOS, Windows)."""
    path = posixpath.normpath(name.replace("\\", "/"))
    return unicodedata.normalize("NFC", path).casefold()


def claimed_subjects(statement: Mapping[str, Any], statement_rel: str) -> dict[str, Any] | str:
    """A statement's subjects as name -> digest object, or why not (one line naming the
    statement). A file listed twice, under one name or two spellings of it, is refused: the
    in-toto spec asks names to be unique, and a reader keeping the first and one keeping
    the last would vouch for different bytes."""
    claimed = statement.get("subject")
    if not isinstance(claimed, list) or not all(
        isinstance(s, dict) and isinstance(s.get("name"), str) for s in claimed
    ):
        return f"{statement_rel}: its subjects are not name/digest objects"
    out: dict[str, Any] = {}
    seen: dict[str, str] = {}
    for subject in claimed:
        name = subject["name"]
        first = seen.setdefault(_same_file(name), name)
        if first != name or name in out:
            also = "" if first == name else f" (also as {name})"
            return f"{statement_rel}: lists the subject {first} more than once{also}"
        out[name] = subject.get("digest")
    return out


def build(seg: SegmentFiles) -> dict[str, Any]:
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects(seg),
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate(seg),
    }


def statement_bytes(seg: SegmentFiles) -> bytes:
    """The statement as written (and signed): indented JSON, keys in a fixed order."""
    return pretty_json(build(seg))
