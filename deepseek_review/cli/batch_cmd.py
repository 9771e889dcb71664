"""``batch``: run a manifest of reviews in parallel; resumable, shardable, honestly reported."""

from __future__ import annotations

import logging
import sys
import threading
import time
from pathlib import Path
from typing import Any, TextIO

from ..errors import BatchIncomplete, Interrupted
from .app import (
    STATE,
    _json_out,
    _write_lines,
    example,
    log,
    tokens_text,
)
from .signals import graceful_stop
from .table import Flags, table_command


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
    from .. import api

    root = api.repo_root(flags["repo_root"])
    try:
        plan = api.plan_batch(flags["manifest"], clean=not flags["dry_run"], **flags.given(root))
    except api.ManifestError as exc:
        _write_lines(sys.stderr, (f"deepseek-review: {line}" for line in exc.lines()))
        raise
    STATE.secret = plan.api_key
    for path in plan.prepared.removed_temp_files:
        log.info("removed %s (a temporary file left by a killed run)", path)
    if flags["dry_run"]:
        _render_dry_run(plan.prepared, flags["as_json"])
        return
    _log_start(plan.prepared, plan.options.jobs)
    stop = threading.Event()
    progress = _BatchProgress(sys.stderr, enabled=not STATE.quiet)
    with graceful_stop(stop, Interrupted.exit_code), progress.attached():
        result = api.execute_batch(plan, stop=stop, on_event=progress)
    if flags["as_json"]:
        _json_out(result.as_json())
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


# --------------------------------------------------------------------------- progress


def _fmt_seconds(seconds: float) -> str:
    seconds = max(0, round(seconds))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class _BarStream:
    """Stands in for stderr in the log handler: clears the bar, writes, redraws it."""

    def __init__(self, owner: _BatchProgress) -> None:
        self.owner = owner

    def write(self, text: str) -> int:
        with self.owner.lock:
            self.owner._clear()
            self.owner.out.write(text)
            self.owner._draw()
        return len(text)

    def flush(self) -> None:
        self.owner.out.flush()


class _TopicFilter(logging.Filter):
    """Prefixes log lines from a batch worker with the entry's topic."""

    def filter(self, record: logging.LogRecord) -> bool:
        from ..batch import current_topic

        topic = current_topic()
        if topic and not getattr(record, "_batch_topic", False):
            record.msg = f"{topic}: {record.msg}"
            record._batch_topic = True
        return True


class _BatchProgress:
    """A redrawn status line on a TTY; one line per event otherwise."""

    def __init__(self, out: TextIO, *, enabled: bool) -> None:
        self.out = out
        self.enabled = enabled
        self.tty = enabled and out.isatty()
        self.lock = threading.RLock()
        self.line = ""
        self.shown = False
        self.last_draw = 0.0

    # -- log handler plumbing
    def attached(self) -> Any:
        import contextlib

        @contextlib.contextmanager
        def cm() -> Any:
            handlers = [h for h in log.handlers if isinstance(h, logging.StreamHandler)]
            topic_filter = _TopicFilter()
            swapped: list[tuple[logging.StreamHandler[Any], Any]] = []
            for h in handlers:
                h.addFilter(topic_filter)
                if self.tty:
                    swapped.append((h, h.setStream(_BarStream(self))))
            try:
                yield self
            finally:
                with self.lock:
                    self._clear()
                for h, old in swapped:
                    h.setStream(old)
                for h in handlers:
                    h.removeFilter(topic_filter)

        return cm()

    def _clear(self) -> None:
        if self.shown:
            self.out.write("\r\x1b[K")
            self.shown = False

    def _draw(self) -> None:
        if self.tty and self.line:
            self.out.write(self.line)
            self.out.flush()
            self.shown = True

    # -- events
    def __call__(self, event: Any) -> None:
        from ..batch import BatchEvent

        assert isinstance(event, BatchEvent)
        if not self.enabled:
            return
        p = event.progress
        if event.kind == "halt":
            log.warning("%s", event.message)
        elif event.kind == "start" and not self.tty:
            action = " (continuing its chain)" if event.action == "continue" else ""
            log.info("[%d/%d] start %s%s", p.finished, p.total, event.topic, action)
        elif event.kind == "done" and event.entry is not None:
            self._done_line(event.entry, p)
        if self.tty:
            now = time.monotonic()
            if event.kind != "tick" and now - self.last_draw < 0.05 and p.finished < p.total:
                return
            self.last_draw = now
            with self.lock:
                self._clear()
                self.line = self._bar(p)
                self._draw()

    def _done_line(self, e: Any, p: Any) -> None:
        where = f"[{p.finished}/{p.total}] {e.status} {e.topic}"
        if e.status in ("failed", "truncated") or (e.status == "pending" and e.error):
            if e.status == "pending" and e.error.startswith("not started"):
                return
            log.warning("%s: %s", where, e.error)
            return
        if self.tty:
            return
        known = e.usage["total_tokens"] if e.usage is not None else None
        segs = len(e.receipt_paths)
        detail = f"{segs} segment{'s' if segs != 1 else ''}, "
        detail += tokens_text(known, e.estimated_tokens)
        if e.status != "skipped":
            detail += f", {e.attempts} request{'s' if e.attempts != 1 else ''}"
        log.info("%s (%s)", where, detail)

    def _bar(self, p: Any) -> str:
        c = p.counts
        done = c["ok"] + c["skipped"]
        ran = p.finished - c["skipped"]
        remaining = p.total - p.finished
        if remaining == 0:
            eta = "done"
        elif ran > 0:
            eta = "ETA " + _fmt_seconds(p.elapsed / ran * remaining)
        else:
            eta = "ETA --"
        width = 20
        filled = int(width * p.finished / p.total) if p.total else width
        bar = "#" * filled + "-" * (width - filled)
        parts = [
            f"[{bar}] {p.finished}/{p.total}",
            f"{done} done ({c['skipped']} skipped)",
            f"{c['failed']} failed",
        ]
        if c["truncated"]:
            parts.append(f"{c['truncated']} truncated")
        if c["pending"]:
            parts.append(f"{c['pending']} not started")
        tokens = f"~{p.tokens} tokens (estimated)" if p.tokens_estimated else f"{p.tokens} tokens"
        parts += [f"{p.in_flight} in flight", tokens, eta]
        return "  ".join(parts)


# --------------------------------------------------------------------------- rendering


def _log_start(prepared: Any, jobs: int) -> None:
    work = prepared.work
    new = sum(1 for w in work if w.action == "new")
    cont = sum(1 for w in work if w.action == "continue")
    skip = sum(1 for w in work if w.action == "skip")
    shard = prepared.planned.shard
    of = f" (shard {shard} of {prepared.planned.total_entries} entries)" if shard else ""
    log.info(
        "batch: %d reviews%s: %d to run, %d to continue, %d already done; %d at a time",
        len(work),
        of,
        new,
        cont,
        skip,
        jobs,
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


def _render_dry_run(prepared: Any, as_json: bool) -> None:
    rows = []
    for w in prepared.work:
        plan = w.planned.plan
        rows.append(
            {
                "topic": w.topic,
                "action": w.action,
                "endpoint": plan.endpoint.url,
                "model": plan.options.model,
                "output_dir": plan.options.output_dir,
                "prompt_sha256": plan.prepared.prompt_sha256,
                "context_files": len(plan.files),
                "context_bytes": plan.context_bytes,
                "token_estimate": plan.token_estimate,
                "existing_receipts": [s.receipt_path for s in w.existing],
                "left_out": [{"path": s.path, "reason": s.reason} for s in plan.skipped],
                "left_out_files": sum(s.files for s in plan.skipped),
            }
        )
    if as_json:
        _json_out(
            {
                "dry_run": True,
                "shard": str(prepared.planned.shard) if prepared.planned.shard else None,
                "entries_in_manifest": prepared.planned.total_entries,
                "orphans": list(prepared.orphans),
                "entries": rows,
            }
        )
        return
    _write_lines(
        sys.stdout,
        (
            f"{r['action']:<9} {r['topic']}  ({r['context_files']} files, "
            + (f"{r['left_out_files']} left out, " if r["left_out_files"] else "")
            + f"~{r['token_estimate']} tokens, {r['model']} at {r['endpoint']})"
            for r in rows
        ),
    )
    log.info("dry run: %d entries checked; nothing was sent and nothing was written", len(rows))
