"""``run --findings``: the findings file written beside the segment that ends a chain.

The honest order is answer → findings → request record → receipt: the findings are derived
from the stitched answer (the answer file is already on disk and hashed) and the files as
sent; the file is written, and the record of that segment lists its path and sha256, before
the receipt commits the segment. ``verify`` re-derives it from the chain and compares bytes
(:func:`rederive`). A missing or invalid block is a warning here, and no file is written.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from deepseek_review.errors import InputError, ReviewError
from deepseek_review.finding.anchor import Reviewed
from deepseek_review.finding.derive import (
    Collected,
    ReviewFindings,
    chain_source,
    derive_text,
    extracted_review,
    is_extraction,
    is_self_check,
    merge,
    reviewed_texts,
    reviewed_version,
)
from deepseek_review.finding.export import output_version, pretty, to_json
from deepseek_review.finding.hunks import NewSide
from deepseek_review.finding.model import OUTPUT_VERSIONS
from deepseek_review.finding.self_check import checked, findings_of, scores
from deepseek_review.git.runner import read_regular_file, resolve_inside
from deepseek_review.records.canonical import sha256_tag
from deepseek_review.records.chain import find_chain, stitched_text
from deepseek_review.records.index import ReceiptIndex
from deepseek_review.records.lines import Lines
from deepseek_review.records.naming import sibling
from deepseek_review.records.parts import file_refs
from deepseek_review.records.request_record import RequestRecord
from deepseek_review.records.stored import ChainSegment
from deepseek_review.util.logs import log

#: Given the stitched text and the last answer's path: the findings file, or None.
Hook = Callable[[str, str], bytes | None]


#: The findings output version ``run --findings`` writes (:data:`.model.OUTPUT_VERSIONS`).
WRITTEN_VERSION = OUTPUT_VERSIONS[-1]


#: How a findings file's findings were obtained (its ``findings_from``): from a structured
#: extraction's reply, or from the block the review's answer ends with.
OBTAINED = ("structured", "block")


def sidecar_bytes(
    text: str,
    seen: Reviewed,
    review: str,
    version: int | None = None,
    obtained: str | None = None,
) -> bytes:
    """The findings file of a chain whose stitched answer is ``text`` (:class:`InputError`
    when it has no usable block). Its ``receipts`` is empty: the record names this file.
    ``version``: the output version's rules and shape (None: :data:`WRITTEN_VERSION`); version
    1 anchors by line numbers alone, and refuses a block with quotes (version 1 had none).
    ``obtained``: its ``findings_from`` (:data:`OBTAINED`; None: files written before it was
    said); ``structured``: ``text`` is a structured extraction's reply."""
    version = WRITTEN_VERSION if version is None else version
    structured = obtained == "structured"
    found = derive_text(text, seen, review, quotes=version >= 2, structured=structured)
    if version == 1 and any(a.finding.quote is not None for a in found):
        raise InputError("its findings block has quotes, which findings version 1 did not allow")
    review_findings = ReviewFindings(review, (), tuple(found))
    collected = Collected([review_findings], merge([review_findings]), [])
    data = to_json(collected, version)
    if obtained is not None:
        data = {**data, "findings_from": obtained}
    return pretty(data).encode("utf-8")


def maker(
    root: Path, files: Iterable[tuple[str, str, Lines | None]], change: NewSide | None = None
) -> Callable[[str, str, str], bytes]:
    """The findings file of a review, given (text, the answer it is shown on, how the text
    was obtained: :data:`OBTAINED`); :class:`InputError` when the text holds none. ``files``:
    (path, sha256, lines) of the context files as sent (their texts are read back and checked
    against the hash); ``change``: a diff review's change, as the request shows it
    (:func:`.hunks.change_in`)."""
    refs = {path: (sha, lines) for path, sha, lines in files}

    def make(text: str, review: str, obtained: str) -> bytes:
        seen = reviewed_texts(root, refs, change)
        return sidecar_bytes(text, seen, review, WRITTEN_VERSION, obtained)

    return make


def hook(
    root: Path, files: Iterable[tuple[str, str, Lines | None]], change: NewSide | None = None
) -> Hook:
    """The hook ``run --findings`` gives the segment writer (the answer's block; a missing
    or invalid one is a warning, and no file): :func:`maker`'s arguments."""
    make = maker(root, files, change)

    def from_block(text: str, review: str) -> bytes | None:
        try:
            return make(text, review, "block")
        except InputError as exc:
            log.warning("%s: %s", review, exc.message)
            return None

    return from_block


def rederive(
    root: Path,
    chain: Sequence[ChainSegment],
    text: str,
    version: int | None = None,
    obtained: str | None = None,
) -> tuple[bytes | None, str]:
    """The findings file of output ``version`` the chain ending with ``chain[-1]`` would get
    now, or None with why it cannot be re-derived (a context file is no longer as reviewed).
    A findings extraction's file (``obtained``: how the file says they were obtained) comes
    from its reply, or from the block of the review it read (:func:`.derive.chain_source`)."""
    review = chain[-1].answer_path
    if is_extraction(chain):
        src = chain_source(root, chain)
        seen, review = src.seen, src.review
        if obtained == "block":
            text = stitched_text(root, extracted_review(root, chain))
    else:
        seen = reviewed_version(root, chain)
    if seen.unavailable:
        return None, next(iter(seen.unavailable.values()))
    try:
        return sidecar_bytes(text, seen, review, version, obtained), ""
    except InputError as exc:
        return None, exc.message


def check_sidecar(
    root: Path, receipt_rel: str, record: RequestRecord, index: ReceiptIndex[None] | None = None
) -> tuple[str, str]:
    """``verify``'s look at the findings file a record lists: ("ok" | "fail" | "soft",
    detail). Its hash must be the record's, and the findings re-derived from the chain up
    to this segment must be the same bytes ("soft" when a context file is no longer as
    reviewed, so they cannot be re-derived)."""
    assert record.findings is not None
    path, digest = record.findings
    expected = sibling(receipt_rel, "findings")
    if path != expected:
        return "fail", f"the request record names findings {path!r}; the tool writes {expected}"
    try:
        data = read_regular_file(resolve_inside(root, path, what="findings")[0])
    except FileNotFoundError:
        return "fail", f"{path}: findings file is missing"
    except (OSError, InputError) as exc:
        return "fail", f"{path}: cannot read ({getattr(exc, 'message', exc)})"
    if sha256_tag(data) != digest:
        return "fail", f"{path} does not match the record's sha256 (changed after the review)"
    version, obtained = output_version(data), _field(data, "findings_from")
    if version is None or obtained not in (None, *OBTAINED):
        return "fail", f"{path} is not a findings file of a version this tool reads"
    try:
        chain = find_chain(root, receipt_rel, index=index)
        chain = chain[: [s.receipt_path for s in chain].index(receipt_rel) + 1]
        again: bytes | None
        if is_self_check(chain):
            again, why = _recheck(root, chain, stitched_text(root, chain), data), ""
        else:
            again, why = rederive(root, chain, stitched_text(root, chain), version, obtained)
    except ReviewError as exc:
        return "fail", f"{path}: cannot re-derive ({exc.message})"
    if again is None:
        return "soft", f"{path}: not re-derived: {why}"
    if again != data:
        return "fail", f"{path} is not what the answer gives (re-derived findings differ)"
    return "ok", f"findings file (version {version}) re-derived from the answer: identical"


def _field(data: bytes, key: str) -> object:
    """A findings file's top-level ``key`` (None when it has none, or is not JSON)."""
    from deepseek_review.util import safejson

    try:
        parsed = safejson.loads(data, what="findings")
    except ValueError:
        return None
    return parsed.get(key) if isinstance(parsed, dict) else None


def checked_bytes(data: bytes, where: str, reply: str, threshold: int) -> bytes:
    """The findings file of a self-check (:mod:`.self_check`) whose context was the findings
    file ``data`` (at ``where``) and whose answer is ``reply``."""
    findings = findings_of(data, where)
    return pretty(checked(findings, scores(reply, findings), threshold)).encode("utf-8")


def _recheck(root: Path, chain: Sequence[ChainSegment], text: str, data: bytes) -> bytes:
    """The findings file a self-check chain gives now (:class:`InputError` when it cannot):
    from the findings file it read, as the record references it, and its threshold."""
    from deepseek_review.records.rebuild import repo_reader

    record = chain[0].record
    assert record is not None
    ((path, ref),) = file_refs(record.messages).items()
    source = repo_reader(root)(path)
    if source is None or sha256_tag(source) != ref.sha256:
        raise InputError(f"{path} is no longer as the self-check read it")
    check = _field(data, "self_check")
    threshold = check.get("threshold") if isinstance(check, dict) else None
    if type(threshold) is not int:
        raise InputError("it has no self-check threshold")
    return checked_bytes(source, path, text, threshold)


def counts_beside(root: Path, answer_path: str) -> dict[str, int] | None:
    """The finding counts by severity of the findings file beside an answer (a batch
    report's per-entry counts); None when there is none or it is not one of ours."""
    from deepseek_review.finding.model import SEVERITIES
    from deepseek_review.util import safejson

    try:
        path, _ = resolve_inside(root, sibling(answer_path, "findings"), what="findings")
        data = safejson.loads(read_regular_file(path), what="findings")
    except (OSError, ValueError, InputError):
        return None
    if output_version(data) is None:
        return None
    counts = data.get("counts") if isinstance(data, dict) else None
    if not isinstance(counts, dict) or any(type(counts.get(s)) is not int for s in SEVERITIES):
        return None
    return {s: counts[s] for s in SEVERITIES}
