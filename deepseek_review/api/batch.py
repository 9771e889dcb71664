"""The library calls of ``batch``: plan a manifest, run it (see :mod:`.api`)."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepseek_review.api.run import PathArg

if TYPE_CHECKING:
    from deepseek_review.batch.run import BatchOptions, BatchReport, EventFn, PreparedBatch
    from deepseek_review.batch.spread import PoolSpread


@dataclass(frozen=True)
class BatchPlan:
    """A checked and planned batch, ready to run: what ``batch --dry-run`` shows."""

    prepared: PreparedBatch
    options: BatchOptions
    report: Path | None = None
    """Where :func:`execute_batch` writes the JSON report (checked to be writable)."""

    @property
    def api_key(self) -> str | None:
        """A key some entry's endpoint gets, if any."""
        keys = (w.planned.plan.endpoint.api_key for w in self.prepared.work)
        return next((k for k in keys if k), None)

    def spread(self) -> PoolSpread | None:
        """With several servers: every server of the pool with its concurrency, the affinity
        groups in the order they run, and the server each entry is expected to start on
        (:mod:`deepseek_review.batch.spread`); None with one."""
        from deepseek_review.batch.spread import expected_spread

        o = self.options
        return expected_spread(self.prepared.work, o.endpoints, o.jobs, o.jobs_per_endpoint)


def plan_batch(
    manifest: PathArg,
    *,
    env: Mapping[str, str] | None = None,
    repo_root: PathArg | None = None,
    overrides: Mapping[str, Any] | None = None,
    clean: bool = True,
    **options: Any,
) -> BatchPlan:
    """Check and plan every entry of ``manifest`` and decide what each needs (new, continue,
    skip), sending nothing. Raises :class:`ManifestError` listing every problem.

    Keywords are ``batch``'s options in snake_case; those of a review (``model``,
    ``endpoint``, ``max_tokens``, ...) apply to every entry that does not set them, as do
    ``overrides``. ``clean`` removes temporary files killed runs left."""
    from deepseek_review.batch.run import check_report_path, prepare_batch, remove_stale_temp_files
    from deepseek_review.batch.setup import batch_options

    given = {**(overrides or {}), **options}
    _, planned = batch_options(manifest, given, repo_root=repo_root, env=env)
    prepared = prepare_batch(planned, env=env, clean=clean)
    path = None if planned.report is None else Path(planned.report)
    if path is not None:
        check_report_path(path)
        if clean:
            remove_stale_temp_files(path.parent)
    return BatchPlan(prepared, planned, path)


def preflight_batch(plan: BatchPlan) -> dict[str, str]:
    """What ``batch`` would refuse before sending an entry's first request (Ollama's
    pre-flight), asked for a dry run: each new entry's topic and the error it would fail
    with. Only the servers' metadata endpoints are asked (once per endpoint and model, as a
    run asks), never a chat endpoint."""
    import contextlib

    from deepseek_review.batch.report import one_line
    from deepseek_review.errors import ReviewError
    from deepseek_review.ollama.fit import asks_server
    from deepseek_review.options.table import naming_as, naming_at
    from deepseek_review.reviewing.job import preflight_primary
    from deepseek_review.reviewing.job_spec import job_from_plan
    from deepseek_review.reviewing.pipeline import make_client

    refused: dict[str, str] = {}
    with contextlib.ExitStack() as stack:
        clients: dict[tuple[str, str | None], Any] = {}
        for work in plan.prepared.work:
            p = work.planned.plan
            if work.action != "new" or not asks_server(
                p.options.continuation.server, p.endpoint.url
            ):
                continue
            key = (p.endpoint.url, p.endpoint.api_key)
            if key not in clients:
                clients[key] = stack.enter_context(make_client(p.endpoint, p.options))
            job = job_from_plan(p, label=work.topic)
            assert job.primary is not None, "a new entry has its primary"
            try:
                with naming_as(p.names), naming_at(work.planned.entry.places):  # as the run does
                    preflight_primary(job, job.primary, clients[key])
            except ReviewError as exc:
                refused[work.topic] = one_line(exc)
    return refused


def execute_batch(
    plan: BatchPlan,
    *,
    stop: threading.Event | None = None,
    on_event: EventFn | None = None,
) -> BatchReport:
    """Run a planned batch; resumes what exists. Set ``stop`` to stop starting new reviews;
    ``on_event`` receives a :class:`~deepseek_review.batch.run.BatchEvent` per start,
    continuation request, answer, finish or skip, in this thread, in the order they
    happened."""
    from deepseek_review.batch.run import execute_batch as _execute
    from deepseek_review.batch.run import write_report

    result = _execute(plan.prepared, plan.options, stop=stop, on_event=on_event)
    if plan.report is not None:
        write_report(result, plan.report)
    return result


def run_batch(
    manifest: PathArg,
    *,
    env: Mapping[str, str] | None = None,
    stop: threading.Event | None = None,
    on_event: EventFn | None = None,
    repo_root: PathArg | None = None,
    overrides: Mapping[str, Any] | None = None,
    **options: Any,
) -> BatchReport:
    """Run every review of a manifest (``deepseek-review batch``): :func:`plan_batch` then
    :func:`execute_batch`. ``trusted_rev`` (a git revision) adopts only receipts committed
    unchanged there; ``resume=False`` adopts none."""
    plan = plan_batch(manifest, env=env, repo_root=repo_root, overrides=overrides, **options)
    return execute_batch(plan, stop=stop, on_event=on_event)
