"""The ``signature`` check: a segment's statement is signed by an allowed signer and still
describes the segment's files byte for byte.

Run after the other checks (it needs nothing from them), on every receipt when allowed
signers are given or signatures are required, else only on segments that carry a statement
or a signature (reported as not checked). A signed segment whose answer, receipt, request
record or reasoning changed by one byte fails here by name, whatever else was recomputed:
only the key holder can make a new signature.

Order of the work per segment, cheapest first: the signature's own fields (its key and
namespace, read in Python), the allowed signers (who, which namespace, when), the subjects
against the files (:func:`..signing.statement.claimed_subjects`), and only then the
signature itself (:mod:`..signing.verifier`, ``ssh-keygen -Y verify`` for key types it leaves).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from deepseek_review.errors import ConfigError
from deepseek_review.options.table import name_of
from deepseek_review.records.canonical import RECEIPT_DECODER
from deepseek_review.records.naming import sibling
from deepseek_review.signing import NAMESPACE
from deepseek_review.verification.files import Problem, RepoFiles
from deepseek_review.verification.reports import CheckResult, ReceiptReport, ReceiptStatus

NAME = "signature"


@dataclasses.dataclass(frozen=True)
class Signed:
    """Who signed a segment, as ``--json`` reports it."""

    principal: str
    fingerprint: str
    key_type: str

    def to_json(self) -> dict[str, str]:
        return {"principal": self.principal, "fingerprint": self.fingerprint,
                "key_type": self.key_type}  # fmt: skip


class SignatureChecks:
    """The signature check of one verify run (the allowed signers read once)."""

    def __init__(
        self,
        root: Path,
        allowed_signers: Path | None,
        *,
        require: bool = False,
        shown: str = "allowed signers",
        now: datetime | None = None,
    ) -> None:
        self.root = root
        self.allowed_signers = allowed_signers
        self.signers = None
        if allowed_signers is not None:
            from deepseek_review.signing import (
                allowed,  # the signing modules only where signatures count
            )

            self.signers = allowed.read(allowed_signers, shown)
        self.require = require
        self.now = now or datetime.now(UTC)
        self._listed: Collection[str] = ()
        self._signed: Collection[str] = ()
        self.files = RepoFiles(root)
        self._checked: dict[str, tuple[CheckResult | None, Signed | None]] = {}

    def know_listing(self, listed: Collection[str], signed: Collection[str]) -> None:
        """Folders listed whole (``listed``) and the statements and signatures seen in them
        (``signed``): a segment there with neither is unsigned without a look at the disk."""
        self._listed, self._signed = listed, signed

    def share_files(self, files: RepoFiles) -> None:
        """Read through the other checks' reader: every folder resolved once per run, and
        a digest they took (the answer's, the reasoning's) not taken again."""
        self.files = files

    def adopt(self, receipt_rel: str, result: CheckResult | None, signed: Signed | None) -> None:
        """The check of ``receipt_rel`` as a verify worker made it: :meth:`apply` uses it."""
        self._checked[receipt_rel] = (result, signed)

    def _surely_unsigned(self, receipt_rel: str) -> bool:
        """Whether the listing shows neither a statement nor a signature for the segment."""
        if receipt_rel.rpartition("/")[0] not in self._listed:
            return False
        if not self._signed:
            return True
        names = sibling(receipt_rel, "signature"), sibling(receipt_rel, "statement")
        return names[0] not in self._signed and names[1] not in self._signed

    @classmethod
    def configured(
        cls,
        root: Path,
        allowed_signers: str | None,
        require: bool | None,
        env: Mapping[str, str] | None,
    ) -> SignatureChecks:
        """From the operator's choices: the arguments, else the environment (and git's
        ``gpg.ssh.allowedSignersFile``); never the repository's config for the allowed
        signers (see :mod:`..signing.keys`)."""
        from deepseek_review.options.config import resolve, spellings
        from deepseek_review.options.table import naming_as
        from deepseek_review.signing.keys import allowed_signers as find_allowed

        settings = resolve(root, env=env)
        # What the environment or the config file set is blamed on them, not on a flag.
        unset = {"allowed_signers": allowed_signers, "require_signature": require}
        names = spellings({k: settings.items[k] for k, v in unset.items() if v is None})
        with naming_as(names):
            given = allowed_signers if allowed_signers is not None else settings["allowed_signers"]
            path = find_allowed(given, root)
            required = settings["require_signature"] if require is None else require
            if required and path is None:
                raise ConfigError(
                    f"{name_of('require_signature')} needs {name_of('allowed_signers')} "
                    "(or git's gpg.ssh.allowedSignersFile): whose signatures count?"
                )
        return cls(root, path, require=bool(required), shown=str(given or path))

    def apply(self, report: ReceiptReport) -> ReceiptReport:
        """``report`` with its ``signature`` check (none when there is nothing to say)."""
        done = self._checked.pop(report.receipt_path, None)
        result, signed = self.check(report.receipt_path) if done is None else done
        if result is None:
            return report
        checks = [c for c in report.checks if c.name != NAME] + [result]
        status: ReceiptStatus = "ok"
        if any(c.status == "fail" for c in checks):
            status = "fail"
        elif any(c.status == "warn" for c in checks):
            status = "warn"
        return dataclasses.replace(report, status=status, checks=checks, signer=signed)

    def _unsigned(self, detail: str) -> CheckResult | None:
        if self.require:
            return CheckResult(NAME, "fail", detail)
        if self.signers is not None:
            return CheckResult(NAME, "warn", detail)
        return None

    def check(self, receipt_rel: str) -> tuple[CheckResult | None, Signed | None]:
        if self._surely_unsigned(receipt_rel):
            return self._unsigned("unsigned"), None
        sig_rel = sibling(receipt_rel, "signature")
        statement_rel = sibling(receipt_rel, "statement")
        armored = self._read(sig_rel, "signature")
        if armored is None:
            if self._read(statement_rel, "statement") is not None:
                why = "a statement without its signature (stopped before signing: "
                return self._unsigned(why + "`deepseek-review sign` completes it)"), None
            return self._unsigned("unsigned"), None
        if self.signers is None:
            return CheckResult(NAME, "info", "signed; not checked (no allowed signers)"), None
        from deepseek_review.signing import allowed, sshsig

        if isinstance(armored, Problem):
            return CheckResult(NAME, "fail", armored.detail), None
        try:
            sig = sshsig.parse(armored)
        except sshsig.BadSignature as exc:
            return CheckResult(NAME, "fail", f"{sig_rel}: not a signature ({exc})"), None
        if sig.namespace != NAMESPACE:
            detail = f"signed for the {sig.namespace!r} namespace, not {NAMESPACE!r}"
            return CheckResult(NAME, "fail", detail), None
        principal, why = allowed.principal_for(self.signers, sig.public_key, self.now)
        if principal is None:
            return CheckResult(NAME, "fail", f"{why} ({sig.fingerprint})"), None
        statement = self._read(statement_rel, "statement")
        if statement is None:
            return CheckResult(NAME, "fail", f"{statement_rel}: missing beside its signature"), None
        if isinstance(statement, Problem):
            return CheckResult(NAME, "fail", statement.detail), None
        problem = self._statement_problem(receipt_rel, statement)
        if problem is None:
            problem = self._crypto_problem(statement, armored, principal)
        if problem is not None:
            return CheckResult(NAME, "fail", problem), None
        signed = Signed(principal, sig.fingerprint, sig.key_type)
        return CheckResult(NAME, "ok", f"signed by {principal} ({sig.fingerprint})"), signed

    def _crypto_problem(self, statement: bytes, armored: bytes, principal: str) -> str | None:
        """``ssh-keygen -Y verify`` over the statement (the reference verifier, one process per
        signature); None when the signature holds."""
        from deepseek_review.signing import sshsig

        assert self.allowed_signers is not None
        bad = sshsig.verify(
            statement, armored, allowed_signers=self.allowed_signers, principal=principal
        )
        return None if bad is None else f"the signature does not verify ({bad})"

    def _read(self, rel: str, what: str) -> bytes | Problem | None:
        """The bytes of a statement or signature; None when absent; why not when it is
        not a regular file inside the root (read by :attr:`files`, never followed out)."""
        got = self.files.read(rel, what=what, keep=False)
        return None if isinstance(got, Problem) and got.kind == "missing" else got

    def _subjects(self, receipt_rel: str) -> dict[str, object] | str:
        """The segment's files as they are now, name → digest object (as
        :func:`..signing.statement.subjects` makes them), or why they cannot be had. Hashed
        by :attr:`files`: each folder resolved once, a digest the other checks took reused."""
        from deepseek_review.signing.statement import SUBJECT_KINDS

        now: dict[str, object] = {}
        for kind in SUBJECT_KINDS:
            rel = sibling(receipt_rel, kind)
            got = self.files.hash(rel, what=kind, keep=False)
            if not isinstance(got, Problem):
                now[rel] = {"sha256": got.removeprefix("sha256:")}
            elif got.kind != "missing":
                return got.detail
            elif kind in ("receipt", "answer"):
                return f"{rel}: missing; cannot sign its segment"
        return now

    def _statement_problem(self, receipt_rel: str, raw: bytes) -> str | None:
        """Why the statement does not describe this segment's files as they are, or None."""
        from deepseek_review.signing.statement import (
            PREDICATE_TYPE,
            PREDICATE_TYPES,
            STATEMENT_TYPE,
            claimed_subjects,
        )

        statement_rel = sibling(receipt_rel, "statement")
        try:
            data: Any = RECEIPT_DECODER.decode(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError) as exc:
            return f"{statement_rel}: not valid JSON ({exc})"
        if not isinstance(data, dict) or data.get("_type") != STATEMENT_TYPE:
            return f"{statement_rel}: not an in-toto Statement v1"
        if data.get("predicateType") not in PREDICATE_TYPES:
            return f"{statement_rel}: predicateType is not {PREDICATE_TYPE}"
        now = self._subjects(receipt_rel)
        if isinstance(now, str):
            return now
        signed = claimed_subjects(data, statement_rel)
        if isinstance(signed, str):
            return signed
        if receipt_rel not in signed:
            shown = ", ".join(sorted(signed)[:2])
            return f"the signed statement is another segment's (it covers {shown})"
        missing = sorted(set(signed) - set(now))
        if missing:
            return f"missing since it was signed: {', '.join(missing)}"
        extra = sorted(set(now) - set(signed))
        if extra:
            return f"not covered by the signature: {', '.join(extra)}"
        changed = [name for name in now if signed[name] != now[name]]
        if changed:
            return f"changed since it was signed: {', '.join(changed)}"
        return None
