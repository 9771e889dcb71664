"""``sign``: sign the segments that exist (reviews written without ``--sign``, or a run
stopped between a receipt and its signature).

Only segments that pass verification and that the trust rule admits (:mod:`trust.rule`) are
signed: a signature vouches for the files as they are, so a segment whose answer no longer
matches its receipt (or that fails any other check), or one a pull request planted, is
refused, not blessed. Warnings (a context file changed since) do not stop signing: the
segment's own files are intact.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from deepseek_review.signing.segments import SigningKey, sign_segment
from deepseek_review.trust.rule import TrustPolicy, admit


@dataclass(frozen=True)
class SignReport:
    """What ``sign`` did, per receipt."""

    signed: list[str] = field(default_factory=list)
    already: list[str] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    """(receipt, why): segments that fail verification, left unsigned."""

    def to_json(self) -> dict[str, object]:
        return {
            "signed": self.signed,
            "already_signed": self.already,
            "refused": [{"receipt_path": r, "why": why} for r, why in self.refused],
        }


def sign_existing(
    root: Path, paths: Sequence[str], key: SigningKey, *, default_folder: str
) -> SignReport:
    """Sign every verified, unsigned segment under ``paths`` (receipts, answers, folders)
    that the trust rule admits (its flags from the environment: ``DEEPSEEK_REVIEW_TRUSTED_REV``,
    ``DEEPSEEK_REVIEW_ALLOWED_SIGNERS``, ``CI``)."""
    report = SignReport()
    admission, checked = admit(
        root, list(paths), TrustPolicy.configured(), default_folder=default_folder
    )
    for r in checked.receipts:
        if r.status == "fail":
            why = "; ".join(f"{c.name}: {c.detail}" for c in r.checks if c.status == "fail")
            report.refused.append((r.receipt_path, why))
            continue
        if r.receipt_path not in admission.admitted:
            why = admission.set_aside[r.receipt_path]
            report.refused.append((r.receipt_path, f"set aside by the trust rule: {why}"))
            continue
        done = sign_segment(root, r.receipt_path, key)
        (report.signed if done == "signed" else report.already).append(r.receipt_path)
    refused = {rel for rel, _ in report.refused}
    for rel, why in sorted(admission.set_aside.items()):
        if rel not in refused:  # set aside before verifying: not in the report
            report.refused.append((rel, f"set aside by the trust rule: {why}"))
    return report
