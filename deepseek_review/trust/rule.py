"""The trust rule: which review files found on disk a command may believe.

A review file this run did not write (answer, receipt, request record, statement, signature,
findings) may have been planted: on a pull request everything committed is the change's. A
segment is **admitted** when it verifies (as ``verify`` checks it) and, once the operator
turned the rule on, something the operator trusts vouches for it:

- it is signed by a key in the operator's allowed signers (``--allowed-signers``), or
- its files are committed unchanged in the revision the operator names (``--trusted-rev``,
  git decides: ``ls-tree REV`` minus ``diff REV``; ``batch --resume-from`` is the same), or
- no file of it is tracked by git (neither ``HEAD`` nor the index holds it): it was written in
  this work tree, by this run or an earlier step of the same job, never by a commit.

The rule is on when ``--trusted-rev`` or ``--allowed-signers`` is given (flag or environment)
or the environment says ``CI=true``; otherwise every segment that verifies is admitted, as a
local user expects. Only the command line and the environment turn it on or off: never a file
under review. Every consumer (``findings``, ``attest``, ``show``, ``continue``,
``--since-last-review``, batch resume) asks here, and prints :meth:`Admission.note`.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from deepseek_review.errors import InputError, VerificationFailed
from deepseek_review.git.runner import files_unchanged_since, git_facts, git_output
from deepseek_review.options.table import OPTIONS, name_of
from deepseek_review.records.chain import find_chain
from deepseek_review.records.index import ReceiptIndex
from deepseek_review.records.naming import RECEIPT_SUFFIX, resume_checked, sibling
from deepseek_review.records.stored import ChainSegment

if TYPE_CHECKING:
    from deepseek_review.verification.reports import VerifyReport

#: Values of ``CI`` that turn the rule on (GitHub, GitLab and most CI systems set ``true``).
_CI_TRUE = frozenset({"true", "1", "yes"})
#: What the command line gave (``--trusted-rev``, ``--allowed-signers``) for the consumers a
#: command reaches deep inside (``--since-last-review`` while a review is planned, ``continue``):
#: set by the command line only, for one command (:func:`given_on_the_command_line`).
_COMMAND_LINE: dict[str, str] = {}


@contextmanager
def given_on_the_command_line(
    trusted_rev: str | None, allowed_signers: str | None
) -> Iterator[None]:
    """Inside, :meth:`TrustPolicy.configured` takes these before the environment."""
    given = {"trusted_rev": trusted_rev, "allowed_signers": allowed_signers}
    before = dict(_COMMAND_LINE)
    _COMMAND_LINE.update({k: v for k, v in given.items() if v is not None})
    try:
        yield
    finally:
        _COMMAND_LINE.clear()
        _COMMAND_LINE.update(before)


@dataclass(frozen=True)
class TrustPolicy:
    """What the operator trusts: a revision, an allowed-signers file, and whether the rule is
    on (either of them given, or ``CI=true``)."""

    trusted_rev: str | None = None
    allowed_signers: str | None = None
    ci: bool = False

    @property
    def enforced(self) -> bool:
        return self.trusted_rev is not None or self.allowed_signers is not None or self.ci

    @classmethod
    def configured(
        cls,
        trusted_rev: str | None = None,
        allowed_signers: str | None = None,
        env: Mapping[str, str] | None = None,
    ) -> TrustPolicy:
        """From the arguments, else the command line's flags, else the environment
        (``DEEPSEEK_REVIEW_TRUSTED_REV``, ``DEEPSEEK_REVIEW_ALLOWED_SIGNERS``, ``CI``); never
        from a file under review."""
        e = os.environ if env is None else env

        def given(value: str | None, key: str) -> str | None:
            if value is not None:
                return value
            if key in _COMMAND_LINE:
                return _COMMAND_LINE[key]
            return e.get(OPTIONS[key].env_name or "", "").strip() or None

        return cls(
            given(trusted_rev, "trusted_rev"),
            given(allowed_signers, "allowed_signers"),
            e.get("CI", "").strip().lower() in _CI_TRUE,
        )


@dataclass
class Admission:
    """The segments (by receipt) a command may believe, and why each other one was set
    aside."""

    admitted: set[str] = field(default_factory=set)
    set_aside: dict[str, str] = field(default_factory=dict)
    details: dict[str, str] = field(default_factory=dict)
    """For a segment that does not verify: its first failed check's words."""
    unverified: dict[str, str] = field(default_factory=dict)
    """When the rule is not in force (local use): segments admitted although they do not
    verify, with why. Read and shown as they are, but never what a gate passes on or what
    ``--since-last-review`` skips by."""

    def believed(self, rel: str) -> bool:
        """Admitted and verified: what may decide anything."""
        return rel in self.admitted and rel not in self.unverified

    def first(self) -> str | None:
        """The first segment set aside (in name order) and why, in full."""
        if not self.set_aside:
            return None
        rel = min(self.set_aside)
        return f"{rel}: {self.details.get(rel) or self.set_aside[rel]}"

    def note(self) -> str | None:
        """One line: what was set aside and why, per reason (None: nothing was)."""
        if not self.set_aside:
            return None
        folders = sorted({rel.rpartition("/")[0] or "." for rel in self.set_aside})
        where = ", ".join(f + "/" for f in folders[:3]) + (" ..." if len(folders) > 3 else "")
        parts = [
            f"{n} segment{'s' if n != 1 else ''}: {why}"
            for why, n in Counter(self.set_aside.values()).most_common()
        ]
        return f"set aside in {where}: " + "; ".join(parts)


def committed_unchanged(root: Path, rev: str, folders: Iterable[str]) -> set[str]:
    """The files under ``folders`` (repo-relative) committed in ``rev`` and unchanged in the
    work tree since (:func:`deepseek_review.git.runner.files_unchanged_since`)."""
    return files_unchanged_since(root, rev, sorted(set(folders)), what=name_of("trusted_rev"))


def tracked(root: Path, folders: Iterable[str]) -> set[str]:
    """The files under ``folders`` that git tracks: in ``HEAD`` or in the index. Outside a
    git work tree, none; inside one, a listing git refuses is an error, never "none" (that
    would admit every file as written here)."""
    specs = ["--", *sorted(set(folders))]
    own_top = git_facts(root).top
    for folder in specs[1:]:
        top = git_facts(root / folder).top if (root / folder).is_dir() else own_top
        if top is not None and own_top is not None and top != own_top:
            # Inside another repository (a submodule a commit named, a nested clone): its
            # files are another repository's commits, never "written here".
            raise InputError(
                f"{folder}: inside another git repository ({top}); its review files cannot be "
                "told apart from committed ones: move the output folder out of it"
            )
    listed = git_output(root, "ls-files", "-z", "--full-name", *specs)
    if listed is None:
        if git_output(root, "rev-parse", "--is-inside-work-tree") is None:
            return set()
        raise InputError(f"git could not list the tracked files of {', '.join(specs[1:])}")
    out = {os.fsdecode(n) for n in listed.split(b"\0") if n}
    at_head = git_output(root, "ls-tree", "-r", "-z", "--name-only", "--full-tree", "HEAD", *specs)
    if at_head is not None:  # None: no commit yet
        out |= {os.fsdecode(n) for n in at_head.split(b"\0") if n}
    return out


def segment_files(receipt: str, present: Collection[str]) -> list[str]:
    """The files of a receipt's segment that must be vouched for: every file of its stem the
    naming table lists (:func:`.records.naming.resume_checked`) that is there. The answer is
    bound by the receipt's hash, so a vouched-for receipt vouches for it too."""
    stem = receipt[: -len(RECEIPT_SUFFIX)]
    return [f for f in resume_checked(stem) if f == receipt or f in present]


def _present(root: Path, folders: Iterable[str]) -> set[str]:
    out: set[str] = set()
    for folder in folders:
        try:
            names = os.listdir(root / folder if folder else root)
        except OSError:
            continue
        prefix = folder + "/" if folder else ""
        out |= {prefix + n for n in names}
    return out


def vouched(
    root: Path, policy: TrustPolicy, receipts: Sequence[str], signed: Collection[str] = ()
) -> dict[str, str | None]:
    """For each receipt (all of which verify): None when something the operator trusts vouches
    for its segment, else why nothing does. ``signed``: the receipts whose segment is signed
    by an allowed signer (verify's ``signature`` check)."""
    folders = {r.rpartition("/")[0] for r in receipts}
    present = _present(root, folders)
    specs = {f or "." for f in folders}  # the root's own receipts: git's "." ("" is no path)
    committed = (
        committed_unchanged(root, policy.trusted_rev, specs) if policy.trusted_rev else set()
    )
    known = tracked(root, specs)
    out: dict[str, str | None] = {}
    for rel in receipts:
        files = segment_files(rel, present)
        if rel in signed or (policy.trusted_rev and all(f in committed for f in files)):
            out[rel] = None
        elif not any(f in known for f in files):
            out[rel] = None  # written in this work tree, not brought by a commit
        else:
            out[rel] = _why_not(policy)
    return out


def _why_not(policy: TrustPolicy) -> str:
    rev = (
        f"not committed unchanged in {policy.trusted_rev}"
        if policy.trusted_rev
        else f"committed (no {name_of('trusted_rev')} vouches for it)"
    )
    who = "not signed by an allowed signer" if policy.allowed_signers else "not signed"
    return f"{rev} and {who}"


def admit(
    root: Path,
    paths: Sequence[str],
    policy: TrustPolicy,
    *,
    default_folder: str | None = None,
    env: Mapping[str, str] | None = None,
) -> tuple[Admission, VerifyReport]:
    """Verify the receipts under ``paths`` and apply the trust rule; the verify report too
    (of the receipts verified: those nothing could vouch for are set aside first, and no
    chain walk of the verification sees them, so a planted continuation cannot make a
    genuine review fail its chain or findings check).

    Signatures are checked against the policy's allowed signers; a signed segment whose
    signature does not count is set aside and the rest verified again without it.
    """
    from deepseek_review.verification import DEFAULT_FOLDER, discover, verify
    from deepseek_review.verification.signature_checks import SignatureChecks

    folder = default_folder or DEFAULT_FOLDER
    checks = None
    if policy.allowed_signers is not None:
        checks = SignatureChecks.configured(root, policy.allowed_signers, False, env)
    excluded: dict[str, str] = {}
    if policy.enforced:
        found = discover(root, list(paths), folder)
        may_be_signed = found.signed if checks is not None else set()
        for rel, why in vouched(root, policy, found.receipts).items():
            if why is not None and sibling(rel, "signature") not in may_be_signed:
                excluded[rel] = why
    for _ in range(2):
        report = verify(
            list(paths),
            root=root,
            default_folder=folder,
            signatures=checks,
            exclude=frozenset(excluded),
        )
        out = Admission(set_aside=dict(excluded))
        more = _judge(root, report, policy, out)
        if not more:
            break
        excluded |= more  # again, without the segments whose signature does not count
        if checks is not None:
            checks = SignatureChecks.configured(root, policy.allowed_signers, False, env)
    return out, report


def _judge(root: Path, report: VerifyReport, policy: TrustPolicy, out: Admission) -> dict[str, str]:
    """Each verified receipt admitted or set aside (into ``out``). Returns the receipts that
    were verified only for their signature and are set aside: the others must be verified
    again without them (they were in the chain walks)."""
    passed: list[str] = []
    more: dict[str, str] = {}
    for r in report.receipts:
        if r.status != "fail":
            passed.append(r.receipt_path)
            continue
        why = "does not verify (" + ", ".join(r.failed) + ")"
        failed = [c for c in r.checks if c.status == "fail"]
        out.details[r.receipt_path] = f"{failed[0].name}: {failed[0].detail}"
        if not policy.enforced:  # local use: read as it is, but it decides nothing
            out.admitted.add(r.receipt_path)
            out.unverified[r.receipt_path] = why
            continue
        out.set_aside[r.receipt_path] = why
        if "signature" in r.failed:
            more[r.receipt_path] = why
    if not policy.enforced:  # local use: the operator's own files, read as they are
        out.admitted.update(passed)
        return {}
    signed = {r.receipt_path for r in report.receipts if r.signer is not None}
    for rel, unvouched in vouched(root, policy, passed, signed).items():
        if unvouched is None:
            out.admitted.add(rel)
        else:
            out.set_aside[rel] = more[rel] = unvouched
    return more


def trusted_chain(
    root: Path, user_path: str, policy: TrustPolicy, index: ReceiptIndex[None] | None = None
) -> list[ChainSegment]:
    """The whole chain ``user_path`` belongs to (:func:`.records.chain.find_chain`), with the
    trust rule, when in force, applied to its segments: a chain with a segment it sets aside
    is refused (:class:`VerificationFailed`) naming the segment and why, so nothing it did not
    admit is shown or continued as part of a review."""
    chain = find_chain(root, user_path, index=index)
    if not policy.enforced:
        return chain
    admission, _ = admit(root, [s.receipt_path for s in chain], policy)
    for seg in chain:
        if seg.receipt_path not in admission.admitted:
            why = admission.set_aside.get(seg.receipt_path, "not among the reviews checked")
            raise VerificationFailed(
                f"{seg.receipt_path} (answer {seg.answer_path}): set aside by the trust rule: {why}"
            )
    return chain
