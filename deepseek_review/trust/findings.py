"""``findings``: the findings of the reviews the trust rule admits, exported and gated.

Only here do findings meet the trust rule: deriving, anchoring and rendering them
(:mod:`deepseek_review.finding`) knows nothing of which reviews count.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from pathlib import Path

from deepseek_review.errors import (
    ConfigError,
    FindingsGate,
    InputError,
    OutputError,
    VerificationFailed,
)
from deepseek_review.finding.baseline import compare, only_new, read_baseline
from deepseek_review.finding.derive import (
    Believed,
    Collected,
    asks_for_none,
    chain_findings,
    is_extraction,
    is_self_check,
    merge,
    problem_path,
    supersede,
)
from deepseek_review.finding.export import FORMATS, check_choice, render
from deepseek_review.finding.extract import FindingsRefused
from deepseek_review.finding.model import SEVERITIES, Anchored, rank
from deepseek_review.git.runner import resolve_inside
from deepseek_review.records.chain import chain_index, find_chain
from deepseek_review.records.index import ReceiptIndex
from deepseek_review.records.naming import FINDINGS_TOPIC_SUFFIX, SELF_CHECK_TOPIC_SUFFIX, sibling
from deepseek_review.records.storage import write_replacing
from deepseek_review.records.stored import ChainSegment, no_such_path
from deepseek_review.trust.rule import Admission, TrustPolicy, admit
from deepseek_review.verification import discover


def collect(
    root: Path, paths: Sequence[str], policy: TrustPolicy | None = None
) -> tuple[Collected, Admission]:
    """The findings of every chain the paths name (receipts, answers or folders) that the
    trust rule admits (:mod:`deepseek_review.trust.rule`; ``policy`` None: from the environment).

    A path that names one review and has no usable block is an :class:`InputError`; in a
    folder, such a chain is listed in ``problems`` and the others are still exported, unless
    its block was refused over a limit (:class:`.extract.FindingsRefused`): then nothing is.
    """
    policy = TrustPolicy.configured() if policy is None else policy
    out = Collected()
    # The folders the paths lie in: a chain's other segments are beside the one named.
    folders = []
    for user_path in paths:
        path, rel = resolve_inside(root, user_path, what="PATH")
        if not path.exists() and not path.is_symlink():
            raise no_such_path(user_path)
        folders.append(rel if path.is_dir() else (rel.rpartition("/")[0] or "."))
    admission, _ = admit(root, list(dict.fromkeys(folders)), policy)
    done: set[str] = set(admission.set_aside)
    index = chain_index(root, admission.admitted)
    failed: set[str] = set()  # the reviews a findings extraction failed for
    for user_path in paths:
        single = not resolve_inside(root, user_path, what="PATH")[0].is_dir()
        for receipt in discover(root, [user_path]).receipts:
            if receipt in done:
                if single and receipt in admission.set_aside:
                    why = admission.set_aside[receipt]
                    raise VerificationFailed(f"{receipt}: set aside by the trust rule: {why}")
                continue
            try:
                chain = find_chain(root, receipt, index=index)
            except InputError as exc:
                if single:
                    raise
                out.problems.append((receipt, exc.message))
                done.add(receipt)
                continue
            done.update(s.receipt_path for s in chain)
            refined = 0
            believed = admission.believed
            if single:  # its findings extraction and self-check, as a folder reads them
                for later in _refinements(root, chain, admission.admitted, index, done):
                    done.update(s.receipt_path for s in later)
                    refined += _read_chain(root, later, out, failed, believed, single=False)
            _read_chain(root, chain, out, failed, believed, single=single and not refined)
    supersede(out, failed)
    out.findings = merge(out.reviews)
    out.set_aside = dict(admission.set_aside)
    return out, admission


@dataclass(frozen=True)
class FindingsExport:
    """What ``findings`` produced: the collected findings, the export text, and the
    findings at or above ``fail_on`` (the gate)."""

    collected: Collected
    admission: Admission
    """What the trust rule admitted, and what it set aside with why."""
    format: str
    text: str
    fail_on: str | None
    output: Path | None
    only_new: bool = False
    """Only the findings new against the baseline were kept (and are gated)."""
    gated: tuple[Anchored, ...] = ()
    """The findings at or above ``fail_on`` before ``--min-severity`` and ``--max-findings``
    left any out: what is shown is limited on request, what gates is not."""

    @property
    def gate(self) -> list[Anchored]:
        """The findings at or above ``fail_on`` (with ``only_new``: the new ones alone; absent
        ones never count; those left out of the export count too)."""
        return list(self.gated)

    def raise_for_gate(self) -> None:
        """:class:`FindingsGate` (exit 13) when a finding is at or above ``fail_on``, or when
        any review under the paths was not read: a segment the trust rule set aside, a chain
        that forks, breaks or has no usable findings block. A gate passes only on reviews it
        read whole, so files nobody vouches for can never make it pass."""
        if self.fail_on is None:
            return
        gate = self.gate
        if gate:
            counts = Counter(a.finding.severity for a in gate)
            listed = ", ".join(f"{counts[s]} {s}" for s in SEVERITIES if counts[s])
            new = "new " if self.only_new else ""
            raise FindingsGate(f"{new}findings at or above {self.fail_on}: {listed}")
        admission = self.admission
        note = admission.note()
        if note is not None:
            raise FindingsGate(f"the gate cannot pass: {note} (first: {admission.first()})")
        if admission.unverified:
            rel = min(admission.unverified)
            n = len(admission.unverified)
            raise FindingsGate(
                f"the gate cannot pass: {n} segment{'s' if n != 1 else ''} "
                f"{'do' if n != 1 else 'does'} not verify (first: {rel}: "
                f"{admission.unverified[rel]}: {admission.details[rel]})"
            )
        unread = [p for p in self.collected.problems if p[0] not in self.collected.without_block]
        if unread:
            path, why = unread[0]
            more = f" (and {len(unread) - 1} more)" if len(unread) > 1 else ""
            raise FindingsGate(f"the gate cannot pass: {path}: {why}{more}")


def _read_chain(
    root: Path,
    chain: list[ChainSegment],
    out: Collected,
    failed: set[str],
    believed: Believed,
    *,
    single: bool,
) -> int:
    """Add a chain's findings to ``out`` (1), or its problem (0; ``single``: raised, as for a
    review named alone)."""
    try:
        out.reviews.append(chain_findings(root, chain, believed))
        return 1
    except InputError as exc:
        if single or isinstance(exc, FindingsRefused):  # no gate passes without it
            raise InputError(f"{chain[-1].answer_path}: {exc.message}") from None
        last = problem_path(root, chain)
        if "the answer has no ```json block" in exc.message:  # extract's words
            out.without_block.add(last)
            if asks_for_none(chain):
                out.not_asked.add(last)
                return 0
        own = chain[-1].answer_path  # an extraction's, when listed under its review
        if last != own:
            failed.add(last)
        out.problems.append((last, exc.message if last == own else f"{own}: {exc.message}"))
        return 0


def _refinements(
    root: Path,
    chain: list[ChainSegment],
    admitted: Collection[str],
    index: ReceiptIndex[None],
    done: Collection[str],
) -> list[list[ChainSegment]]:
    """The chains beside a review that refine its findings: its findings extractions (their
    context is exactly its answers) and the self-checks of its findings files or of theirs
    (their context is that file), admitted by the trust rule, in name order."""
    folder = chain[-1].receipt_path.rpartition("/")[0] or "."
    answers = [s.answer_path for s in chain]
    read = {sibling(chain[-1].receipt_path, "findings")}
    found: list[list[ChainSegment]] = []
    for suffix in (
        FINDINGS_TOPIC_SUFFIX,
        SELF_CHECK_TOPIC_SUFFIX,
    ):  # extractions first: their files are read
        for rel in discover(root, [folder]).receipts:
            name = rel.rpartition("/")[2]
            if rel in done or rel not in admitted or f"{suffix}_" not in name:
                continue
            try:
                later = find_chain(root, rel, index=index)
            except InputError:
                continue
            files = list(later[0].receipt.context_files or ())
            if suffix == FINDINGS_TOPIC_SUFFIX:
                refines = is_extraction(later) and files == answers
            else:
                refines = is_self_check(later) and len(files) == 1 and files[0] in read
            if refines:
                found.append(later)
                read.add(sibling(later[-1].receipt_path, "findings"))
    return found


def export(
    root: Path,
    paths: Sequence[str],
    fmt: str,
    output: Path | None,
    fail_on: str | None,
    policy: TrustPolicy | None = None,
    baseline: str | None = None,
    new_only: bool = False,
    min_severity: str | None = None,
    max_findings: int | None = None,
) -> FindingsExport:
    """Collect (the reviews the trust rule admits), compare with ``baseline`` when given
    (:func:`baseline_findings`; ``new_only``: keep the new findings alone), render, and write
    ``output`` when given (replaced atomically: an export is meant to be rewritten); the gate
    is left to :meth:`FindingsExport.raise_for_gate`."""
    check_choice(fmt, list(FORMATS), "findings format")
    check_choice(fail_on, SEVERITIES, "findings severity")
    check_choice(min_severity, SEVERITIES, "min_severity")
    if max_findings is not None and (type(max_findings) is not int or max_findings < 1):
        raise ConfigError(f"max_findings {max_findings!r}: expected a whole number >= 1")
    if new_only and baseline is None:
        raise ConfigError("--only-new needs --baseline (new against what?)")
    policy = TrustPolicy.configured() if policy is None else policy
    before = None if baseline is None else baseline_findings(root, baseline, policy)
    collected, admission = collect(root, paths, policy)
    if before is not None:
        compare(collected, before)
        if new_only:
            only_new(collected)
    gated = tuple(collected.at_or_above(fail_on)) if fail_on is not None else ()
    limit(collected, min_severity, max_findings)
    text = render(collected, fmt)
    if output is not None:
        try:
            write_replacing(output, text.encode("utf-8"))
        except OSError as exc:
            raise OutputError(f"{output}: cannot write ({exc.strerror or exc})") from None
    return FindingsExport(collected, admission, fmt, text, fail_on, output, new_only, gated)


def limit(collected: Collected, min_severity: str | None, max_findings: int | None) -> None:
    """Leave out of the export the findings below ``min_severity`` and, of the rest, all but
    the ``max_findings`` most severe (the findings are ranked most severe first), counting
    each in :attr:`Collected.left_out`: never dropped without saying so."""
    kept = collected.findings
    if min_severity is not None:
        below = [a for a in kept if rank(a.finding.severity) > rank(min_severity)]
        if below:
            collected.left_out["below_min_severity"] = len(below)
            kept = [a for a in kept if rank(a.finding.severity) <= rank(min_severity)]
    if max_findings is not None and len(kept) > max_findings:
        collected.left_out["over_max_findings"] = len(kept) - max_findings
        kept = kept[:max_findings]
    collected.findings = kept


def baseline_findings(root: Path, baseline: str, policy: TrustPolicy) -> list[Anchored]:
    """The findings of a baseline: a SARIF log or findings JSON file (an absolute path, or
    relative to the root), or a folder of reviews, read like ``findings`` reads its paths:
    through the trust rule, so a review nobody vouches for cannot make a finding look old."""
    path = Path(baseline) if Path(baseline).is_absolute() else root / baseline
    if path.is_dir():
        _, rel = resolve_inside(root, baseline, what="--baseline")  # a folder of this repository
        collected, _ = collect(root, [rel], policy)
        return collected.findings
    return read_baseline(path, baseline)
