"""Finding a review's chain of segments from its receipts: primary → c1 → c2 → ...

Receipts only link backwards (``previous_answer_path``). Walking back from any segment finds the
primary; walking forward needs the receipts beside each segment, which are indexed once. A
chain that forks (two continuations of one segment), loops, or points at a segment without a
receipt is refused with a message naming the segment.
"""

from __future__ import annotations

from pathlib import Path

from . import safejson
from .errors import InputError, VerificationFailed
from .records.canonical import sha256_tag
from .records.naming import RECEIPT_SUFFIX
from .records.stored import ChainSegment, load_segment, receipt_for
from .repo import read_regular_file, resolve_inside


def _receipts_in(root: Path, folder_rel: str) -> list[str]:
    folder, _ = resolve_inside(root, folder_rel or ".", what="folder")
    try:
        names = sorted(p.name for p in folder.iterdir() if p.name.endswith(RECEIPT_SUFFIX))
    except OSError:
        return []
    prefix = "" if folder_rel in ("", ".") else folder_rel.rstrip("/") + "/"
    return [prefix + n for n in names]


def _folder(rel: str) -> str:
    return rel.rsplit("/", 1)[0] if "/" in rel else ""


class _Index:
    """Which receipts claim which answer, and which continue it: read lazily, per folder.

    Only the two path fields of each receipt are read here (a cheap JSON parse), so a folder
    of thousands of receipts costs milliseconds; the receipts that end up in the chain are
    then loaded and validated in full. A receipt that is not JSON is skipped here: it claims
    nothing (``verify`` reports it).
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.owners: dict[str, list[str]] = {}
        self.children: dict[str, list[str]] = {}
        self._scanned: set[str] = set()

    def scan(self, folder: str) -> None:
        if folder in self._scanned:
            return
        self._scanned.add(folder)
        for rel in _receipts_in(self.root, folder):
            try:
                data = safejson.loads(read_regular_file(self.root / rel), what="receipt")
            except (OSError, ValueError):  # refused too: it claims nothing (verify reports it)
                continue
            if not isinstance(data, dict):
                continue
            answer, previous = data.get("answer_path"), data.get("previous_answer_path")
            if isinstance(answer, str):
                self.owners.setdefault(answer, []).append(rel)
            if isinstance(previous, str):
                self.children.setdefault(previous, []).append(rel)


def _one(rels: list[str], what: str) -> str | None:
    if len(rels) > 1:
        raise InputError(f"{what} ({', '.join(sorted(rels))})")
    return rels[0] if rels else None


def find_chain(root: Path, user_path: str) -> list[ChainSegment]:
    """The whole chain ``user_path`` belongs to, primary first, every segment validated."""
    start = load_segment(root, receipt_for(root, user_path))
    index = _Index(root)
    chain = [start]
    seen = {start.answer_path}
    # Back to the primary.
    while chain[0].receipt.is_continuation:
        prev_path = chain[0].receipt.previous_answer_path or ""
        # Refused by name before its folder is looked at (a receipt may be hostile).
        resolve_inside(root, prev_path, what=f"{chain[0].receipt_path}: previous_answer_path")
        index.scan(_folder(prev_path))
        rel = _one(
            index.owners.get(prev_path, []), f"{prev_path}: claimed by more than one receipt"
        )
        if rel is None:
            raise InputError(
                f"{chain[0].receipt_path}: continues {prev_path}, which has no receipt"
            )
        prev = load_segment(root, rel)
        if prev.answer_path in seen:
            raise InputError(f"{prev.receipt_path}: the chain loops back on itself")
        seen.add(prev.answer_path)
        chain.insert(0, prev)
    # Forward to the last segment.
    while True:
        index.scan(_folder(chain[-1].receipt_path))
        rels = [
            r for r in index.children.get(chain[-1].answer_path, []) if r != chain[-1].receipt_path
        ]
        rel = _one(rels, f"{chain[-1].answer_path}: continued more than once")
        if rel is None:
            return chain
        nxt = load_segment(root, rel)
        if nxt.answer_path in seen:
            raise InputError(f"{nxt.receipt_path}: the chain loops back on itself")
        seen.add(nxt.answer_path)
        chain.append(nxt)


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
