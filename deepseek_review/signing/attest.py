"""``attest``: the predicate of a GitHub artifact attestation over a run's reviews.

``actions/attest`` signs one in-toto Statement per invocation, its subjects the files that
``subject-path`` names (the answers) and its predicate a JSON file (``predicate-path``) of
the type ``predicate-type`` says: :data:`ATTEST_PREDICATE_TYPE`, schema
``schemas/deepseek-review-attested-reviews-v1.schema.json``. One invocation covers many
segments, so the predicate lists, per segment, its files (name and sha256, as a statement's
subjects) and the same predicate a signed segment's statement carries. Only segments that
verify are attested: a signature vouches for the files as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .. import __version__
from ..errors import InputError, VerificationFailed
from ..project import ATTESTED_REVIEWS
from ..verification import verify
from ..verification.reports import listing
from .statement import SegmentFiles, predicate, subjects

ATTEST_PREDICATE_TYPE = ATTESTED_REVIEWS


def attest_predicate(root: Path, paths: Sequence[str], *, default_folder: str) -> dict[str, Any]:
    """The predicate over every segment under ``paths``; :class:`VerificationFailed` when
    any of them fails verification, :class:`InputError` when there are none."""
    checked = verify(list(paths), root=root, default_folder=default_folder)
    if not checked.receipts:
        raise InputError(f"no receipts found in {', '.join(checked.searched)}: nothing to attest")
    failed = [r.receipt_path for r in checked.receipts if r.status == "fail"]
    if failed:
        n = len(failed)
        raise VerificationFailed(
            f"{n} segment{'s fail' if n != 1 else ' fails'} verification, so none is attested: "
            f"{listing(failed)} (see `deepseek-review verify`)"
        )
    reviews = []
    for r in checked.receipts:
        seg = SegmentFiles.read(root, r.receipt_path)
        reviews.append({"subject": subjects(seg), "predicate": predicate(seg)})
    return {"tool": {"name": "deepseek-review", "version": __version__}, "reviews": reviews}
