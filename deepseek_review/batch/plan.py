"""Preparing a batch: check and plan the manifest, index what earlier runs left, and decide
each entry (``new``, ``continue`` a chain left cut off, ``skip`` a finished one), before
anything is sent or written.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from deepseek_review.batch.manifest import PlannedEntry, PlannedManifest, Shard, plan_manifest
from deepseek_review.batch.resume import believed_segments, existing_chain, index_folder
from deepseek_review.batch.sizing import one_context_per_model, resized
from deepseek_review.chat.endpoint import Endpoint
from deepseek_review.chat.tokens import refuse_over_cap
from deepseek_review.chat.transport import tls_context
from deepseek_review.chat.types import RetryPolicy, Timeouts
from deepseek_review.context.gather import Output
from deepseek_review.context.places import refuse_git_data
from deepseek_review.errors import ReviewError
from deepseek_review.git.runner import find_repo_root, resolve_inside
from deepseek_review.ollama import pricing
from deepseek_review.options.table import check, default, name_of
from deepseek_review.records.storage import check_writable_dir, stale_temp_files
from deepseek_review.records.stored import ChainSegment
from deepseek_review.reviewing.plan import (
    ReviewOptions,
    ReviewPlan,
    plan_review,
    review_longest_name,
    review_worst_case,
)

Action = Literal["new", "continue", "skip"]
#: Temporary files older than this are left-overs of a killed writer and are removed.
STALE_TEMP_SECONDS = 60.0


@dataclass(frozen=True)
class BatchOptions:
    """A batch run, as plain values (the CLI builds this from its flags)."""

    manifest: str
    format: str | None = None
    overrides: Mapping[str, Any] = field(default_factory=dict)
    """Flags given to ``batch`` (entry keys): between the entry and ``[defaults]``."""
    repo_root: str | None = None
    shard: str | None = None
    """``K/N`` (0-based K): run only the entries whose topic hashes to shard K of N."""
    jobs: int = default("jobs")
    endpoints: tuple[Endpoint, ...] = ()
    """The servers of a pool (``--endpoint`` given more than once, with their keys): the
    entries whose endpoint is the operator's are spread over them (:mod:`.batch.pool`)."""
    jobs_per_endpoint: int | None = None
    fail_fast: bool = default("fail_fast")
    max_total_tokens: int | None = default("max_total_tokens")
    max_cost: float | None = default("max_cost")
    prices: Mapping[str, Any] = field(default_factory=dict)
    """The ``prices`` setting (:mod:`.ollama.pricing`): what ``max_cost`` counts in."""
    operator_prices: bool = False
    """``prices`` came from the operator (the environment), not the repository's config: only
    then may ``max_cost`` count with it (a repository could price its reviews at 0)."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    timeouts: Timeouts = field(default_factory=Timeouts)
    resume: bool = default("resume")
    """Adopt what earlier runs left (receipts of finished or cut-off chains)."""
    trusted_rev: str | None = None
    """Adopt only receipts, answers and records committed unchanged in this git revision: in
    CI on a pull request, the base branch, so receipts the change brings are not believed."""
    report: str | None = None
    """Where the report will be written (the CLI's ``--report``): never any entry's context."""

    def __post_init__(self) -> None:
        check("jobs", self.jobs)
        if self.max_total_tokens is not None:
            check("max_total_tokens", self.max_total_tokens)
        if self.max_cost is not None:
            check("max_cost", self.max_cost)
            pricing.check_trusted(self.operator_prices)
        pricing.parse(self.prices)
        if self.shard is not None:
            Shard.parse(self.shard)


@dataclass(frozen=True)
class Work:
    """One entry of the shard and what the batch will do with it."""

    planned: PlannedEntry
    action: Action
    existing: tuple[ChainSegment, ...] = ()
    """The chain already on disk (``skip`` and ``continue``)."""
    reason: str | None = None
    """Why a ``skip`` is skipped when not because its review is done (nothing new)."""

    @property
    def topic(self) -> str:
        return self.planned.topic


@dataclass(frozen=True)
class PreparedBatch:
    planned: PlannedManifest
    work: tuple[Work, ...]
    orphans: tuple[str, ...]
    removed_temp_files: tuple[str, ...] = ()


def remove_stale_temp_files(folder: Path, older_than: float = STALE_TEMP_SECONDS) -> list[Path]:
    """Remove ``.deepseek-review-*.tmp`` left by a killed writer (only old ones)."""
    removed = []
    cutoff = time.time() - older_than
    for path in stale_temp_files(folder):
        try:
            if path.stat().st_mtime < cutoff:
                path.unlink()
                removed.append(path)
        except OSError:
            continue
    return removed


def _report_output(options: BatchOptions) -> tuple[Output, ...]:
    """The report file as an :class:`Output`, when it lies inside the repository."""
    if options.report is None:
        return ()
    try:
        root = find_repo_root(options.repo_root)
    except ReviewError:
        return ()
    # Never into git's data, even the operator's: ``.git/hooks/pre-push`` would be a hook.
    real = Path(os.path.abspath(options.report)).resolve()
    refuse_git_data(root, options.report, real, what=name_of("report"))
    try:
        _, rel = resolve_inside(root, os.path.abspath(options.report), what=name_of("report"))
    except ReviewError:
        return ()
    return (Output(rel, "the batch report"),)


def _refuse_over_cap(work: list[Work]) -> None:
    """Refuse, before anything is sent, a batch whose reviews to run (new or continued) could
    together use more than the operator's ``max_run_tokens``: entries a pull request adds
    (or their ``max_tokens``) cannot run up the bill past it."""
    to_run = [w.planned for w in work if w.action != "skip"]
    cap = next((p.plan.options.max_run_tokens for p in to_run), None)
    if cap is not None:
        total = sum(_worst_case(p) for p in to_run)
        refuse_over_cap(cap, total, f"the batch ({len(to_run)} reviews to run)")


def _worst_case(p: PlannedEntry) -> int:
    """The most tokens an entry may use (a split entry's: every part and the synthesis)."""
    if p.split is None:
        return review_worst_case(p.plan.options, p.plan.token_estimate)
    from deepseek_review.reviewing.split_plan import worst_case

    return worst_case(p.split)


def _check_folders(planned: PlannedManifest, folders: list[Path]) -> None:
    """Refuse an output folder the entries writing there could not write their files into,
    tried with the longest name any of them would write."""
    for folder in folders:
        there = [p for p in planned.entries if p.plan.out_dir == folder]
        names = [review_longest_name(p.plan.options) for p in there]
        longest = max(names, key=lambda n: len(n.encode("utf-8")))
        first = there[names.index(longest)]
        shown = f"output_dir {first.plan.options.output_dir} (entry {first.topic})"
        check_writable_dir(folder, shown=shown, root=planned.root, longest=longest)


def _decide(
    planned: PlannedManifest,
    folders: list[Path],
    options: BatchOptions,
    own: tuple[PlannedEntry, ...],
) -> tuple[list[Work], list[str]]:
    """What to do with each entry (skip it: nothing new, or its review complete on disk;
    continue its truncated chain; or review it anew), and the orphan answers in ``folders``."""
    indexes = {folder: index_folder(planned.root, folder) for folder in folders}
    believed = believed_segments(options.trusted_rev, planned.root, folders)
    work = []
    for p, alone in zip(planned.entries, own, strict=True):
        if p.nothing_new is not None:
            work.append(Work(p, "skip", reason=p.nothing_new))
            continue
        if p.split is not None:  # its parts are resumed as run --split resumes them
            work.append(Work(p, "new"))
            continue
        pooled = len(options.endpoints) > 1 and p.plan.endpoint.source == "endpoint"
        chain = None
        if options.resume:
            idx = indexes[p.plan.out_dir]
            chain = existing_chain(idx, planned.root, p, believed, any_server=pooled)
            if chain is None and alone is not p:  # sent with the entry's own num_ctx step
                chain = existing_chain(idx, planned.root, alone, believed, any_server=pooled)
            for sized in resized(alone) if chain is None else ():  # or an earlier batch's
                chain = existing_chain(idx, planned.root, sized, believed, any_server=pooled)
                if chain is not None:
                    break
        if chain is None:
            work.append(Work(p, "new"))
        elif chain[-1].finish_reason == "length":
            work.append(Work(p, "continue", tuple(chain)))
        else:
            work.append(Work(p, "skip", tuple(chain)))
    return work, [o for idx in indexes.values() for o in idx.orphans]


def prepare_batch(
    options: BatchOptions, *, env: Mapping[str, str] | None = None, clean: bool = True
) -> PreparedBatch:
    """Check and plan the manifest, index what earlier runs left, and decide each entry.

    Raises :class:`~deepseek_review.batch.manifest.ManifestError` (nothing sent, nothing written)
    when the manifest has problems. ``clean`` removes stale temporary files of killed runs.
    """
    tls: list[threading.Thread] = []

    def plan(options: ReviewOptions, env: Mapping[str, str] | None, **kw: Any) -> ReviewPlan:
        planned = plan_review(options, env, check_output=False, **kw)  # folders: below
        if not tls and planned.endpoint.url.startswith("https:"):
            # Load the CA bundle in the background while the rest is planned, so it is ready
            # for the first request; a batch of plain-http endpoints never loads it.
            tls.append(threading.Thread(target=tls_context, name="tls-context", daemon=True))
            tls[0].start()
        return planned

    planned = plan_manifest(
        Path(options.manifest),
        fmt=options.format,
        overrides=options.overrides,
        shard=Shard.parse(options.shard) if options.shard else None,
        repo_root=options.repo_root,
        retry=options.retry,
        timeouts=options.timeouts,
        env=env,
        plan=plan,
        outputs=_report_output(options),
        pool=tuple(ep.url for ep in options.endpoints),
    )
    own = planned.entries  # as ``run`` would send each (resume finds those too)
    planned = replace(planned, entries=one_context_per_model(own))
    folders = list(dict.fromkeys(p.plan.out_dir for p in planned.entries))
    _check_folders(planned, folders)  # before anything is sent (a dry run finds it too)
    removed: list[str] = []
    if clean:
        for folder in folders:
            for path in remove_stale_temp_files(folder):
                removed.append(path.relative_to(planned.root).as_posix())
    work, orphans = _decide(planned, folders, options, own)
    _refuse_over_cap(work)
    for thread in tls:
        thread.join()
    return PreparedBatch(planned, tuple(work), tuple(orphans), tuple(removed))
