"""Finding a review's chain of segments from its receipts: primary → c1 → c2 → ...

The walks are the records index's (:mod:`.records.index`), over a cheap look at the receipts
of the folders involved; the segments of the chain are loaded and validated in full. A chain
that forks (two continuations of one segment), loops, or points at a segment without a
receipt is refused with a message naming the segment.
"""

from __future__ import annotations

from collections.abc import Collection
from functools import partial
from pathlib import Path

from deepseek_review.errors import InputError, VerificationFailed
from deepseek_review.git.runner import read_regular_file, resolve_inside
from deepseek_review.records.canonical import sha256_tag
from deepseek_review.records.index import Break, Entry, ReceiptIndex
from deepseek_review.records.stored import ChainSegment, load_segment, receipt_for
from deepseek_review.util import safejson


def _glance(root: Path, rel: str) -> Entry[None] | None:
    """A receipt's two path fields, read without validating it (enough to walk the chains of
    a folder); the segments of the chain are then loaded in full. A receipt that is not JSON
    claims nothing (``verify`` reports it)."""
    try:
        data = safejson.loads(read_regular_file(root / rel), what="receipt")
    except (OSError, ValueError):  # refused too
        return None
    if not isinstance(data, dict):
        return None
    answer, previous = data.get("answer_path"), data.get("previous_answer_path")
    return Entry(
        rel,
        answer if isinstance(answer, str) else None,
        previous if isinstance(previous, str) else None,
        None,
    )


def chain_index(
    root: Path, admitted: Collection[str] | None = None, exclude: Collection[str] = ()
) -> ReceiptIndex[None]:
    """An index for :func:`find_chain` that many calls may share (each folder glanced at
    once: finding every chain of a folder stays linear). ``admitted``: only these receipts
    are indexed, ``exclude``: not these (the trust rule's, :mod:`trust.rule`): a set-aside
    receipt neither continues nor claims anything."""
    if admitted is None and not exclude:
        return ReceiptIndex(root, partial(_glance, root))

    def glance(rel: str) -> Entry[None] | None:
        if rel in exclude or (admitted is not None and rel not in admitted):
            return None
        return _glance(root, rel)

    return ReceiptIndex(root, glance)


def find_chain(
    root: Path,
    user_path: str,
    *,
    index: ReceiptIndex[None] | None = None,
) -> list[ChainSegment]:
    """The whole chain ``user_path`` belongs to, primary first, every segment validated.

    A chain that forks, loops, or continues an answer claimed by no receipt or by several
    is refused (:class:`InputError`) naming where. ``index``: one shared with other calls
    (:func:`chain_index`). Which of its segments count is the trust rule's to say
    (:func:`deepseek_review.trust.rule.trusted_chain`).
    """
    start = load_segment(root, receipt_for(root, user_path))
    index = chain_index(root) if index is None else index
    previous = start.receipt.previous_answer_path
    if start.receipt_path not in index.entries:
        index.add(Entry(start.receipt_path, start.answer_path, previous, None))
    chain = [start]

    def load(rel: str) -> None:
        chain.append(load_segment(root, rel))

    def link(answer: str) -> None:
        # Refused by name before its folder is looked at (a receipt may be hostile).
        resolve_inside(root, answer, what=f"{chain[-1].receipt_path}: previous_answer_path")

    if previous is not None:
        _, broken = index.walk_back(
            previous,
            seen={start.answer_path},
            link=link,
            visit=load,
        )
        if broken is not None:
            raise InputError(_refusal(broken, chain))
        chain.reverse()
    _, broken = index.walk_forward(
        start.receipt_path, seen={s.answer_path for s in chain}, visit=load
    )
    if broken is not None:
        raise InputError(_refusal(broken, chain))
    return chain


def _refusal(broken: Break, chain: list[ChainSegment]) -> str:
    """Why a chain is refused, naming where (``chain``: the segments loaded, the last one
    loaded last)."""
    if broken.kind == "unclaimed":
        return f"{chain[-1].receipt_path}: continues {broken.at}, which has no receipt"
    if broken.kind == "claimed-twice":
        return f"{broken.at}: claimed by more than one receipt ({', '.join(broken.rels)})"
    if broken.kind == "fork":
        return f"{broken.at}: continued more than once ({', '.join(broken.rels)})"
    # Forward, the receipt that came back; back, the one in the chain claiming the answer.
    looped = broken.rels or [s.receipt_path for s in chain if s.answer_path == broken.at]
    return f"{looped[0]}: the chain loops back on itself"


def read_answer(root: Path, seg: ChainSegment) -> str:
    """A segment's answer text, after checking its bytes against the receipt."""
    try:
        path, _ = resolve_inside(root, seg.answer_path, what="answer")
        data = read_regular_file(path)
    except FileNotFoundError:
        raise VerificationFailed(f"{seg.answer_path}: answer file is missing") from None
    except OSError as exc:
        raise VerificationFailed(
            f"{seg.answer_path}: cannot read ({exc.strerror or exc})"
        ) from None
    except InputError as exc:
        raise VerificationFailed(f"{seg.receipt_path}: {exc.message}") from None
    if sha256_tag(data) != seg.receipt.answer_sha256:
        raise VerificationFailed(
            f"{seg.answer_path}: does not match answer_sha256 in {seg.receipt_path} "
            "(the answer was changed after the review)"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise VerificationFailed(f"{seg.answer_path}: not UTF-8") from None


def stitched_text(root: Path, chain: list[ChainSegment]) -> str:
    """The whole answer of a chain, every segment's hash checked first."""
    return "".join(read_answer(root, s) for s in chain)
