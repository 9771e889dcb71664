"""``attest``: the predicate of a GitHub artifact attestation over a run's reviews.

``actions/attest`` signs one in-toto Statement per invocation, its subjects the files that
``subject-path`` names (the answers) and its predicate a JSON file (``predicate-path``) of
the type ``predicate-type`` says: :data:`ATTEST_PREDICATE_TYPE`, schema
``schemas/deepseek-review-attested-reviews-v1.schema.json``. One invocation covers many
segments, so the predicate lists, per segment, its files (name and sha256, as a statement's
subjects) and the same predicate a signed segment's statement carries. Only segments that
verify and that the trust rule admits (:mod:`trust.rule`) are attested: a signature vouches for
the files as they are, and a pull request's planted review is not this workflow's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from deepseek_review._version import __version__
from deepseek_review.errors import InputError, VerificationFailed
from deepseek_review.signing.statement import SegmentFiles, predicate, subjects
from deepseek_review.trust.rule import TrustPolicy, admit
from deepseek_review.util.project import ATTESTED_REVIEWS
from deepseek_review.verification.reports import listing

ATTEST_PREDICATE_TYPE = ATTESTED_REVIEWS


def attest_predicate(
    root: Path,
    paths: Sequence[str],
    *,
    default_folder: str,
    policy: TrustPolicy | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The predicate over every segment under ``paths`` that the trust rule admits
    (:mod:`deepseek_review.trust.rule`); the others are listed in its ``left_out`` with why.
    :class:`VerificationFailed` when any segment fails verification, :class:`InputError` when
    there are none, or none is admitted."""
    policy = TrustPolicy.configured(env=env) if policy is None else policy
    admission, checked = admit(root, paths, policy, default_folder=default_folder, env=env)
    if not checked.receipts and not admission.set_aside:
        raise InputError(f"no receipts found in {', '.join(checked.searched)}: nothing to attest")
    failed = [r.receipt_path for r in checked.receipts if r.status == "fail"]
    if failed:
        n = len(failed)
        raise VerificationFailed(
            f"{n} segment{'s fail' if n != 1 else ' fails'} verification, so none is attested: "
            f"{listing(failed)} (see `deepseek-review verify`)"
        )
    note = admission.note()
    if not admission.admitted:
        raise InputError(f"nothing to attest: {note}")
    reviews = []
    for r in checked.receipts:
        if r.receipt_path not in admission.admitted:
            continue
        seg = SegmentFiles.read(root, r.receipt_path)
        reviews.append({"subject": subjects(seg), "predicate": predicate(seg)})
    out: dict[str, Any] = {
        "tool": {"name": "deepseek-review", "version": __version__},
        "reviews": reviews,
    }
    if admission.set_aside:
        out["left_out"] = [
            {"receipt_path": rel, "reason": why} for rel, why in sorted(admission.set_aside.items())
        ]
    return out
