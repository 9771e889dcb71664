"""What verify reports: a result per check, per receipt, per run."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from deepseek_review.options.table import default
from deepseek_review.records.receipt import CONTINUATION, PRIMARY

#: The check names, in the order they run and are reported.
CHECKS = ("schema", "answer", "chain", "context", "prompt")

#: What ``verify`` searches without a PATH: ``run``'s default output folder.
DEFAULT_FOLDER: str = default("output_dir")

REPORT_SCHEMA = "deepseek_review_verify_report_v1"

CheckStatus = Literal["ok", "warn", "fail", "info", "skip"]
ReceiptStatus = Literal["ok", "warn", "fail"]


@dataclass(frozen=True)
class CheckResult:
    """One check of one receipt. ``info`` and ``skip`` never fail a receipt."""

    name: str
    status: CheckStatus
    detail: str = ""

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "detail": self.detail}


@dataclass(frozen=True)
class ReceiptReport:
    receipt_path: str
    status: ReceiptStatus
    checks: list[CheckResult]
    kind: Literal["primary", "continuation"] | None = None
    """None when the receipt failed ``schema``."""
    answer_path: str | None = None
    signer: Any = None
    """Who signed the segment (a ``signature_checks.Signed``), when its signature checked out."""

    @property
    def failed(self) -> list[str]:
        return [c.name for c in self.checks if c.status == "fail"]

    @property
    def warnings(self) -> list[str]:
        return [c.name for c in self.checks if c.status == "warn"]

    def check(self, name: str) -> CheckResult:
        return next(c for c in self.checks if c.name == name)

    def to_json(self) -> dict[str, Any]:
        return {
            "receipt_path": self.receipt_path,
            "status": self.status,
            "kind": self.kind,
            "answer_path": self.answer_path,
            "failed": self.failed,
            "warnings": self.warnings,
            "checks": [c.to_json() for c in self.checks],
            **({"signer": self.signer.to_json()} if self.signer is not None else {}),
        }


@dataclass(frozen=True)
class VerifyReport:
    root: str
    strict: bool
    receipts: list[ReceiptReport]
    searched: list[str] = field(default_factory=list)
    """The PATHs as given (or the default folder), repo-relative."""
    orphans: list[str] = field(default_factory=list)
    """Answer files without their receipt in the folders searched: warned about, not
    verified (a run stopped between the answer and its receipt, or a stray file)."""

    @property
    def ok(self) -> bool:
        """No receipt failed (and, under ``strict``, no answer lies there without one)."""
        if self.strict and self.orphans:
            return False
        return all(r.status != "fail" for r in self.receipts)

    def count(self, status: ReceiptStatus) -> int:
        return sum(1 for r in self.receipts if r.status == status)

    @property
    def failed_checks(self) -> dict[str, int]:
        """How many receipts failed each check (check order)."""
        counts = dict.fromkeys((*CHECKS, "signature"), 0)
        for r in self.receipts:
            if r.status != "fail":  # only a failed check makes a receipt fail
                continue
            for name in r.failed:
                counts[name] += 1
        return {k: v for k, v in counts.items() if v}

    def to_json(self) -> dict[str, Any]:
        return {
            "report": REPORT_SCHEMA,
            "root": self.root,
            "strict": self.strict,
            "searched": self.searched,
            "ok": self.ok,
            "counts": {
                "receipts": len(self.receipts),
                "ok": self.count("ok"),
                "warn": self.count("warn"),
                "fail": self.count("fail"),
            },
            "failed_checks": self.failed_checks,
            "receipts": [r.to_json() for r in self.receipts],
            "orphans": list(self.orphans),
        }


#: How the prompt check's detail starts when the request was rebuilt from git objects
#: (:mod:`.pins`); here, with the reading of it, so that rendering a report needs no git.
REBUILT = "request rebuilt from git objects: "


def reread_note(checks: Iterable[CheckResult]) -> str | None:
    """How a receipt's request was re-read, for verify's text line (the prompt check's
    detail when it was rebuilt from git objects): ``re-read: a.py from commit abc1234``."""
    for c in checks:
        if c.name == "prompt" and c.status == "ok" and c.detail.startswith(REBUILT):
            return "re-read: " + c.detail[len(REBUILT) :]
    return None


def soft(strict: bool, name: str, detail: str) -> CheckResult:
    """A missing or changed context file, or an answer still cut off: a warning, a failure
    under ``strict``."""
    return CheckResult(name, "fail" if strict else "warn", detail)


def listing(items: Sequence[str], limit: int = 5) -> str:
    """Paths in a check's detail: the first ``limit`` of them, and how many more."""
    shown = ", ".join(items[:limit])
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


#: The passing results, made once (a run makes tens of thousands of them).
PASSED = {
    PRIMARY: CheckResult("schema", "ok", PRIMARY),
    CONTINUATION: CheckResult("schema", "ok", CONTINUATION),
    "answer": CheckResult("answer", "ok", "hash matches"),
    "chain": CheckResult("chain", "ok", "leads back to its primary"),
    "chain-primary": CheckResult("chain", "ok", "primary"),
    "context-continuation": CheckResult("context", "ok", "continuation: none of its own"),
    "prompt": CheckResult("prompt", "ok", "request rebuilt byte for byte"),
}

PASSED_BY_VALUE = {(c.name, c.status, c.detail): c for c in PASSED.values()}
