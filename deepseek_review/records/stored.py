"""A segment as stored: its receipt and, when there is one, its request record.

``show``, ``continue`` and batch resume load segments through here; ``verify`` reads the same
files through its own per-run cache but with the same parsers (:func:`.receipt.parse_receipt`,
:meth:`.request_record.RequestRecord.load`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from deepseek_review.errors import InputError
from deepseek_review.git.runner import resolve_inside
from deepseek_review.records.naming import ANSWER_SUFFIX, RECEIPT_SUFFIX, sibling
from deepseek_review.records.receipt import Receipt, read_file
from deepseek_review.records.request_record import RequestRecord


@dataclass(frozen=True)
class ChainSegment:
    """A receipt, where it lives, and its request record when there is one."""

    receipt_path: str
    receipt: Receipt
    record: RequestRecord | None

    @property
    def answer_path(self) -> str:
        return self.receipt.answer_path

    @property
    def record_path(self) -> str:
        return sibling(self.receipt_path, "record")

    @property
    def finish_reason(self) -> str | None:
        return None if self.record is None else self.record.response.finish_reason

    @property
    def usage_reported(self) -> bool:
        """False when its record says the server reported no usage (the receipt's zeros are
        then not a count); receipts of other tools, without a record, are taken as counts."""
        return self.record is None or self.record.response.usage_reported is not False


def no_such_path(user_path: str) -> InputError:
    """The one wording for a path the user named that does not exist, as they wrote it."""
    return InputError(f"{user_path}: no such file or folder")


def receipt_for(root: Path, user_path: str, *, folders: bool = False) -> str:
    """The receipt a user named: a receipt, or an answer ``<stem>.md`` whose receipt is
    beside it (:class:`InputError` otherwise; ``folders``: the message allows folders too)."""
    path, rel = resolve_inside(root, user_path, what="path")
    if not path.exists() and not path.is_symlink():
        raise no_such_path(user_path)
    if rel.endswith(RECEIPT_SUFFIX):
        return rel
    if rel.endswith(ANSWER_SUFFIX):  # any *.md: a reasoning file is not taken for its answer
        receipt = rel[: -len(ANSWER_SUFFIX)] + RECEIPT_SUFFIX
        path, _ = resolve_inside(root, receipt, what="receipt")
        if not path.is_file():
            raise InputError(f"{rel}: no receipt beside it ({receipt})")
        return receipt
    also = ", an answer (*.md) or a folder" if folders else " or an answer (*.md)"
    raise InputError(f"{rel}: expected a receipt (*{RECEIPT_SUFFIX}){also}")


def load_record(root: Path, receipt_rel: str) -> RequestRecord | None:
    """The request record beside a receipt, None when there is none (other emitters)."""
    rel = sibling(receipt_rel, "record")
    path, _ = resolve_inside(root, rel, what="request record")
    raw = read_file(path, rel)
    return None if raw is None else RequestRecord.load(raw, rel)


def load_segment(root: Path, receipt_rel: str) -> ChainSegment:
    path, rel = resolve_inside(root, receipt_rel, what="receipt")
    receipt = Receipt.load(path, shown=rel)
    return ChainSegment(receipt_path=rel, receipt=receipt, record=load_record(root, rel))
