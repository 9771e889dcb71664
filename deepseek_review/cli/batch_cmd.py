"""``batch``: run a manifest of reviews in parallel; resumable, shardable, honestly reported."""

from __future__ import annotations

import sys
import threading
from pathlib import Path
from typing import Any

from deepseek_review.cli.app import (
    STATE,
    example,
    json_out,
    tokens_text,
    write_lines,
)
from deepseek_review.cli.progress import BatchProgress
from deepseek_review.cli.signals import graceful_stop
from deepseek_review.cli.table import Flags, table_command
from deepseek_review.errors import BatchIncomplete, Interrupted
from deepseek_review.util.logs import log
from deepseek_review.util.textsafe import plural


@table_command(
    "batch",
    epilog=example("deepseek-review batch reviews.toml --jobs 8 --report batch-report.json"),
)
def batch(flags: Flags) -> None:
    """Run every review of a manifest, N at a time; re-running resumes; --shard splits it.

    Options of a review given here apply to every entry that does not set the key itself
    (entry > flags > [defaults] > environment > config file > built-in defaults). Exit 0 only
    if every entry is ok or skipped; 11 if any failed, stayed truncated or was not started; 3
    for a bad manifest (nothing sent); 130 when interrupted.
    """
    from deepseek_review import api

    root = flags.root()
    from deepseek_review.trust.rule import given_on_the_command_line

    try:
        with given_on_the_command_line(flags["trusted_rev"], None):
            plan = api.plan_batch(
                flags["manifest"], clean=not flags["dry_run"], **flags.given(root)
            )
    except api.ManifestError as exc:
        write_lines(sys.stderr, (f"deepseek-review: {line}" for line in exc.lines()))
        raise
    STATE.secret = plan.api_key
    key = flags.signing_key(root)
    for path in plan.prepared.removed_temp_files:
        log.info("removed %s (a temporary file left by a killed run)", path)
    if flags["dry_run"]:
        # The servers are asked what the run would ask before sending (never their chat).
        refused = api.preflight_batch(plan)
        _render_dry_run(plan.prepared, flags["as_json"], refused, plan.spread())
        if refused:
            n, first = len(refused), next(iter(refused.items()))
            raise BatchIncomplete(
                f"dry run: {'1 entry' if n == 1 else f'{n} entries'} would fail before "
                f"sending; first: {first[0]}: {first[1]}"
            )
        return
    _log_start(plan.prepared, plan.options.jobs, len(plan.options.endpoints))
    stop = threading.Event()
    progress = BatchProgress(sys.stderr)
    with graceful_stop(stop, Interrupted.exit_code), progress.attached(), api.signed_with(key):
        result = api.execute_batch(plan, stop=stop, on_event=progress)
    if flags["as_json"]:
        json_out(result.as_json())
    _log_summary(result, plan.report)
    _raise_unless_complete(result, plan.report)


def _raise_unless_complete(result: Any, report: Path | None) -> None:
    """Exit 130 when interrupted, 11 when any entry is not ok or skipped, saying what to do."""
    counts = result.counts
    summary = ", ".join(f"{counts[s]} {s}" for s in counts)
    where = f"; see {report}" if report is not None else ""
    if result.stopped == "interrupted":
        raise Interrupted(
            f"batch interrupted ({summary}){where}",
            hint="run the same command again to resume",
        )
    if not result.complete:
        hints = []
        if counts["failed"] or counts["pending"]:
            hints.append("run the same command again to retry what failed or did not start")
        if counts["truncated"]:
            hints.append(
                "a plain re-run sends nothing for entries still cut off: raise "
                "--max-continuations (or continuation_max_tokens where the error says so)"
            )
        raise BatchIncomplete(f"batch incomplete ({summary}){where}", hint="; ".join(hints))


# --------------------------------------------------------------------------- rendering


def _log_start(prepared: Any, jobs: int, servers: int = 0) -> None:
    work = prepared.work
    new = sum(1 for w in work if w.action == "new")
    cont = sum(1 for w in work if w.action == "continue")
    skip = sum(1 for w in work if w.action == "skip")
    shard = prepared.planned.shard
    of = f" (shard {shard} of {prepared.planned.total_entries} entries)" if shard else ""
    log.info(
        "batch: %s%s: %d to run, %d to continue, %d already done; %d at a time%s",
        plural(len(work), "review"),
        of,
        new,
        cont,
        skip,
        jobs,
        f" over {servers} servers" if servers > 1 else "",
    )
    if prepared.orphans:
        log.warning(
            "%d orphan file(s) from an interrupted run (an answer without its receipt: not a "
            "finished review, so it is done again), e.g. %s; all are listed in the report",
            len(prepared.orphans),
            prepared.orphans[0],
        )


def _log_summary(result: Any, report: Path | None) -> None:
    counts = result.counts
    summary = ", ".join(f"{counts[s]} {s}" for s in counts)
    saved = f"; report: {report}" if report is not None else ""
    tokens = tokens_text(result.total_tokens, result.estimated_tokens)
    line = f"batch {result.status}: {summary}; {tokens} in {result.elapsed:.1f}s{saved}"
    if result.complete:
        log.info("%s", line)
    else:
        log.warning("%s", line)


def _cost(plans: list[Any], cost_of: Any) -> float | None:
    """What an entry's reviews cost at most (a split entry's parts; its synthesis is not
    known before its parts are answered); None when one has no price."""
    costs = [cost_of(p) for p in plans]
    return None if None in costs else round(sum(costs), 6)


def _dry_run_row(w: Any, refused: dict[str, str], spread: Any) -> dict[str, Any]:
    """One entry of a dry run, as ``--json`` shows it."""
    from deepseek_review.api import cost_estimate

    plan = w.planned.plan
    plans = [plan] if w.planned.split is None else [p.plan for p in w.planned.split.parts]
    return {
        "topic": w.topic,
        "action": w.action,
        "endpoint": plan.endpoint.url,
        "expected_endpoint": None if spread is None else spread.expected.get(w.topic),
        "group": None if spread is None else spread.group_of(w.topic),
        "model": plan.options.model,
        "output_dir": plan.options.output_dir,
        "prompt_sha256": plan.prepared.prompt_sha256,
        "parts": None if w.planned.split is None else len(plans),
        "context_files": len({f.path for p in plans for f in p.files}),
        "context_bytes": sum(p.context_bytes for p in plans),
        "token_estimate": sum(p.token_estimate for p in plans),
        "existing_receipts": [s.receipt_path for s in w.existing],
        "reason": w.reason,
        "left_out": [{"path": s.path, "reason": s.reason} for s in plan.skipped],
        "left_out_files": sum(s.files for s in plan.skipped),
        "cost_estimate": None if w.action == "skip" else _cost(plans, cost_estimate),
        "refused": refused.get(w.topic),
    }


def _render_dry_run(
    prepared: Any, as_json: bool, refused: dict[str, str], spread: Any = None
) -> None:
    rows = [_dry_run_row(w, refused, spread) for w in prepared.work]
    to_send = [r for r in rows if r["action"] != "skip"]
    costs = [r["cost_estimate"] for r in to_send]
    total = round(sum(costs), 6) if costs and None not in costs else None
    if as_json:
        json_out(
            {
                "dry_run": True,
                "shard": str(prepared.planned.shard) if prepared.planned.shard else None,
                "entries_in_manifest": prepared.planned.total_entries,
                "orphans": list(prepared.orphans),
                "cost_estimate": total,
                "pool": _pool_json(spread),
                "entries": rows,
            }
        )
        return
    lines = []
    for r in rows:
        lines.append(
            f"{r['action']:<9} {r['topic']}  ({plural(r['context_files'], 'file')}, "
            + (f"in {r['parts']} parts and a synthesis, " if r["parts"] else "")
            + (f"{r['left_out_files']} left out, " if r["left_out_files"] else "")
            + f"~{r['token_estimate']} tokens, {r['model']} at {_where(r)})"
        )
        if r["refused"]:
            lines.append(f"          refused: {r['refused']}")
    write_lines(sys.stdout, [*lines, *_pool_lines(spread)])
    if total is not None:
        log.info("cost at most %g (each prompt and its whole max_tokens, no cache hit)", total)
    checked = "1 entry" if len(rows) == 1 else f"{len(rows)} entries"
    log.info("dry run: %s checked; nothing was sent and nothing was written", checked)


def _where(row: dict[str, Any]) -> str:
    """Where an entry goes: its endpoint, or in a pool the server it is expected to start on."""
    if row["expected_endpoint"] is None:
        return str(row["endpoint"])
    return f"{row['expected_endpoint']}, group {row['group']}"


def _pool_json(spread: Any) -> dict[str, Any] | None:
    if spread is None:
        return None
    return {
        "jobs": spread.jobs,
        "servers": [
            {"endpoint": s.url, "concurrency": s.concurrency, "expected_entries": list(s.topics)}
            for s in spread.servers
        ],
        "groups": [
            {
                "group": g.number,
                "model": g.model,
                "context_files": g.context_files,
                "entries": list(g.topics),
                "expected_endpoints": list(g.servers),
            }
            for g in spread.groups
        ],
    }


def _pool_lines(spread: Any) -> list[str]:
    """The whole pool: each server, how many requests it gets at once and the entries
    expected there; each affinity group and where it is expected to run."""
    if spread is None:
        return []
    lines = [f"pool: {plural(len(spread.servers), 'server')}, {spread.jobs} requests at a time"]
    for s in spread.servers:
        lines.append(f"  {s.url}: {s.concurrency} at once, {_entries(len(s.topics))} expected")
    lines.append(
        "groups (same model and context files): back to back, on one server while it has a slot"
    )
    for g in spread.groups:
        lines.append(
            f"  group {g.number}: {_entries(len(g.topics))} "
            f"({', '.join(g.topics)}), {g.model}, {plural(g.context_files, 'file')}: "
            f"expected on {', '.join(g.servers)}"
        )
    return lines


def _entries(n: int) -> str:
    return "1 entry" if n == 1 else f"{n} entries"
