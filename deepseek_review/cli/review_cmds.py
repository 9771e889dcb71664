"""``run``, ``continue`` and ``show``: making, extending and reading a review chain."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepseek_review.cli.app import (
    STATE,
    example,
    json_out,
    shown_path,
    tokens_text,
    typed_path,
    write_lines,
)
from deepseek_review.cli.progress import review_progress
from deepseek_review.cli.table import Flags, table_command
from deepseek_review.context.types import ContextFile
from deepseek_review.errors import InputError, NoProgress, TruncatedReview
from deepseek_review.options.table import default
from deepseek_review.records.lines import describe
from deepseek_review.records.naming import SIGNATURE_SUFFIX, STATEMENT_SUFFIX, sibling
from deepseek_review.util.logs import log
from deepseek_review.util.textsafe import escape, plural

if TYPE_CHECKING:
    from deepseek_review.reviewing.pipeline import ReviewPlan, ReviewResult
    from deepseek_review.reviewing.segment import Segment


@table_command(
    "run",
    epilog=example(
        "deepseek-review run -c docs/spec.md -c 'src/**/*.py' -p \"Check the sums.\" --topic spec"
    ),
)
def run(flags: Flags) -> None:
    """Run one review: gather context, send it, write the answer, receipt and request record."""
    from deepseek_review import api
    from deepseek_review.trust.rule import given_on_the_command_line

    root = flags.root()
    given = flags.given(root)
    given.pop("trusted_rev", None)  # the trust rule's (--since-last-review), not the review's
    budget = given.pop("max_total_tokens", None)  # the split run's, not one review's
    jobs = given.pop("jobs", None)
    max_cost = given.pop("max_cost", None)  # the run's cap, held against its plan
    if "prompt" not in given and "prompt_file" not in given:
        given["prompt"] = _stdin_prompt()
    # A dry run asks the server what the run would ask before sending (never its chat).
    with given_on_the_command_line(flags["trusted_rev"], flags["allowed_signers"]):
        planned = api.plan_review(
            **{**given, "repo_root": root},
            ask_server=flags["dry_run"],
            max_total_tokens=budget,
            jobs=jobs,
            max_cost=max_cost,
        )
    STATE.secret = planned.endpoint.api_key
    key = flags.signing_key(root)
    from deepseek_review.reviewing.plan import ReviewPlan

    if not isinstance(planned, ReviewPlan):
        from deepseek_review.cli.split_views import render_outcome, render_split_plan

        if flags["dry_run"]:
            render_split_plan(planned, flags["as_json"])
            return
        # The trust rule's flags decide which earlier parts count as done.
        trust = given_on_the_command_line(flags["trusted_rev"], flags["allowed_signers"])
        with review_progress() as progress, api.signed_with(key), trust:
            outcome = api.send_split(planned, progress=progress)
        render_outcome(root, outcome, flags["as_json"])
        if outcome.failure is not None:
            raise outcome.failure
        return
    plan = planned
    if flags["dry_run"]:
        _render_plan(plan, flags["as_json"])
        return
    with review_progress() as progress, api.signed_with(key):
        result = api.send_review(plan, progress=progress)
    _render_result(root, result, flags["as_json"])
    _raise_if_truncated(result, plan.options.continuation.max_continuations, root)


def _stdin_prompt() -> Any:
    """The prompt piped on stdin (read up to the context limit by the library)."""
    if sys.stdin is None or sys.stdin.isatty():
        raise InputError("no prompt: give --prompt, --prompt-file, or pipe it on stdin")
    return sys.stdin


def _continue_command(root: Path | None, answer_path: str, endpoint: str) -> str:
    """The command that continues a chain cut off at ``answer_path``, to type from here."""
    from urllib.parse import urlsplit

    from deepseek_review.chat.endpoint import is_loopback_host

    shown = answer_path if root is None else shown_path(root, answer_path)
    command = f"deepseek-review continue {shown}"
    if not is_loopback_host(urlsplit(endpoint).hostname or ""):
        # `continue` sends the key only where it is told to, never where a receipt says.
        command += f" --endpoint {endpoint}"
    return command


def _raise_if_truncated(result: Any, cap: int, root: Path | None = None) -> None:
    from deepseek_review.reviewing.pipeline import no_progress_message

    if not result.truncated:
        return
    last_segment = result.segments[-1]
    last = last_segment.answer_path
    command = _continue_command(root, last, result.endpoint)
    if result.stalled:
        # The same cap would buy the same nothing: the advice must raise it, or it loops.
        raised = 2 * (last_segment.max_tokens or default("max_tokens"))
        raise NoProgress(
            no_progress_message(last_segment),
            hint=f"raise the cap: {command} --continuation-max-tokens {raised} (for a new "
            "review, a larger --max-tokens)",
        )
    raise TruncatedReview(
        f"the review is still truncated after {plural(cap, 'continuation')}; last segment: {last}",
        hint=f"continue it with: {command}",
    )


def _render_plan(plan: ReviewPlan, as_json: bool) -> None:
    from deepseek_review.api import cost_estimate
    from deepseek_review.context.pins import change_lines

    cost = cost_estimate(plan)
    if as_json:
        json_out(_plan_info(plan, cost))
        return
    write_lines(
        sys.stdout,
        [
            f"endpoint       {plan.endpoint.url}",
            f"model          {plan.options.model}",
            f"template       {plan.template.name}",
            f"prompt_sha256  {plan.prepared.prompt_sha256}",
            f"request        {len(plan.prepared.body_bytes)} bytes, {plan.count}",
            f"framed         {plan.framed_bytes} bytes with headings, fences, file list, "
            f"template and prompt (--max-context-bytes {plan.options.limits.max_context_bytes})",
            f"context        {plural(len(plan.files), 'file')}, "
            f"{plural(plan.context_bytes, 'byte')}",
            *(f"  {f.size:>10}  {_file_shown(f)}" for f in plan.files),
            *change_lines(plan.pins, plan.change_lines),
            *(
                [f"left out       {plural(sum(s.files for s in plan.skipped), 'file')}"]
                if plan.skipped
                else []
            ),
            *(f"  {s.path}  {s.reason}" for s in plan.skipped),
            *(
                [f"cost           at most {cost:g} (prompt and --max-tokens)"]
                if cost is not None
                else []
            ),
        ],
    )
    log.info("dry run: nothing was sent and nothing was written")


def _file_shown(f: ContextFile) -> str:
    """A context file as the dry run lists it: its path, and the lines sent of a range."""
    if f.lines is None:
        return f.path
    return f"{f.path} ({describe(f.lines.span, f.lines.total)})"


def _plan_info(plan: ReviewPlan, cost: float | None) -> dict[str, Any]:
    """``run --dry-run --json``: what the text lists, with each file's sha256."""
    return {
        "dry_run": True,
        "endpoint": plan.endpoint.url,
        "model": plan.options.model,
        "template": plan.template.name,
        "prompt_sha256": plan.prepared.prompt_sha256,
        "request_bytes": len(plan.prepared.body_bytes),
        "token_estimate": plan.token_estimate,
        "token_count": plan.count.tokens,
        "token_count_how": plan.count.how,
        "context_bytes": plan.context_bytes,
        "framed_bytes": plan.framed_bytes,
        "max_context_bytes": plan.options.limits.max_context_bytes,
        "context_files": [
            {"path": f.path, "bytes": f.size, "sha256": f.sha256}
            | ({} if f.lines is None else {"lines": list(f.lines.span), "of": f.lines.total})
            for f in plan.files
        ],
        "skipped": [{"path": s.path, "reason": s.reason} for s in plan.skipped],
        "cost_estimate": cost,
        "git": plan.pins,
    }


def _render_result(root: Path, result: ReviewResult, as_json: bool) -> None:
    """``--json``: the result, paths relative to the root (as in receipts); else the files
    written, one a line, relative to the current folder (see ``typed_path``)."""
    for s in result.segments:  # -v: what each request was, in the receipt's own terms
        log.debug(
            "%s: %s, %s, prompt %s, answer %s, %d attempt%s, finish_reason %s",
            shown_path(root, s.receipt_path),
            s.model,
            tokens_text(s.usage.total_tokens if s.usage_reported else None, s.estimated_tokens),
            s.prompt_sha256,
            s.answer_sha256,
            s.attempts,
            "" if s.attempts == 1 else "s",
            s.finish_reason,
        )
    if as_json:
        last = result.segments[-1]
        json_out(
            {
                "status": "truncated" if result.truncated else "ok",
                "stalled": result.stalled,
                "endpoint": result.endpoint,
                "context_files": list(result.context_files),
                "finish_reason": last.finish_reason,
                "usage_reported": result.usage_reported,
                # Unknown is not 0: null when the server reported no usage for some segment.
                "usage": {
                    k: sum(getattr(s.usage, k) for s in result.segments)
                    for k in ("prompt_tokens", "completion_tokens", "total_tokens")
                }
                if result.usage_reported
                else None,
                "estimated_tokens": result.estimated_tokens,
                "segments": [_segment_json(root, s) for s in result.segments],
                **_extraction_json(root, result),
            }
        )
        return
    paths = (
        shown_path(root, p)
        for s in (*result.segments, *result.extraction, *result.self_check)
        for p in (
            s.answer_path,
            s.receipt_path,
            s.record_path,
            s.reasoning_path,
            s.findings_path,
            *_signed_files(root, s),
        )
        if p
    )
    write_lines(sys.stdout, paths)
    last = result.segments[-1]
    log.info(
        "%s: %s, %s, finish_reason %s",
        "truncated" if result.truncated else "done",
        plural(len(result.segments), "segment"),
        tokens_text(result.total_tokens, result.estimated_tokens),
        last.finish_reason,
    )


def _extraction_json(root: Path, result: ReviewResult) -> dict[str, Any]:
    """``--json``: the findings extraction's and the self-check's segments, when made."""
    out = {"extraction": result.extraction, "self_check": result.self_check}
    return {k: [_segment_json(root, s) for s in v] for k, v in out.items() if v}


def _signed_files(root: Path, s: Segment) -> list[str]:
    """The statement and signature ``--sign`` wrote beside the segment's receipt."""
    names = (sibling(s.receipt_path, "statement"), sibling(s.receipt_path, "signature"))
    return [n for n in names if (root / n).is_file()]


def _segment_json(root: Path, s: Segment) -> dict[str, Any]:
    """One segment in ``--json`` output (paths relative to the root, as in receipts)."""
    signed = _signed_files(root, s)
    return {
        "answer_path": s.answer_path,
        "receipt_path": s.receipt_path,
        "record_path": s.record_path,
        "answer_sha256": s.answer_sha256,
        "prompt_sha256": s.prompt_sha256,
        "model": s.model,
        "usage": s.usage.as_dict() if s.usage_reported else None,
        "usage_reported": s.usage_reported,
        "estimated_tokens": s.estimated_tokens,
        "finish_reason": s.finish_reason,
        "attempts": s.attempts,
        "reasoning_path": s.reasoning_path,
        "findings_path": s.findings_path,
        "statement_path": next((p for p in signed if p.endswith(STATEMENT_SUFFIX)), None),
        "signature_path": next((p for p in signed if p.endswith(SIGNATURE_SUFFIX)), None),
    }


# --------------------------------------------------------------------------- continue, show


@table_command(
    "continue",
    epilog=example(
        "deepseek-review continue reviews/spec_deepseek_deepseek-v4-flash_20260512T033551Z.md"
    ),
)
def continue_(flags: Flags) -> None:
    """Continue a truncated review from the last segment of its chain."""
    from deepseek_review import api
    from deepseek_review.trust.rule import given_on_the_command_line

    root = flags.root()
    given = flags.given(root)
    given.pop("trusted_rev", None)  # the trust rule's, not the continuation's
    STATE.secret = api.api_key(given.get("api_key_env"))
    key = flags.signing_key(root)
    trust = given_on_the_command_line(flags["trusted_rev"], flags["allowed_signers"])
    with review_progress() as progress, api.signed_with(key), trust:
        outcome = api.continue_review(typed_path(root, flags["path"]), progress=progress, **given)
    _render_result(root, outcome.result, flags["as_json"])
    _raise_if_truncated(outcome.result, outcome.max_continuations, root)


@table_command(
    "show",
    epilog=example(
        "deepseek-review show reviews/spec_deepseek_deepseek-v4-flash_20260512T033551Z.md"
    ),
    json=False,
)
def show(flags: Flags) -> None:
    """Print a chain's whole stitched answer, after checking every segment's hash.

    Piped or redirected, the output is exactly the stitched answer, byte for byte; on a
    terminal a final newline is added when the answer lacks one (so the prompt does not land
    on its last line). A chain still cut off at the token cap is noted on stderr.
    """
    from deepseek_review import api
    from deepseek_review.records.split_record import SPLIT_SUFFIX

    root = flags.root()
    if flags["path"].endswith(SPLIT_SUFFIX):
        from deepseek_review.cli.split_views import story_lines
        from deepseek_review.records.split_record import load_split

        write_lines(sys.stdout, story_lines(load_split(root, typed_path(root, flags["path"]))))
        return
    shown = api.show(
        typed_path(root, flags["path"]),
        repo_root=root,
        trusted_rev=flags["trusted_rev"],
        allowed_signers=flags["allowed_signers"],
    )
    text = shown.text
    if sys.stdout.isatty():
        # The answer is the server's text: on a terminal its control sequences (OSC 52 writes
        # the clipboard) are shown, not obeyed. Piped or redirected, it is the exact bytes.
        text = escape(text, multiline=True)
    sys.stdout.write(text)
    if text and not text.endswith("\n") and sys.stdout.isatty():
        sys.stdout.write("\n")
    sys.stdout.flush()
    chain = shown.segments
    last = chain[-1]
    if last.finish_reason == "length":
        log.warning(
            "the answer is cut off: its last segment, %s, ended at the token cap "
            "(finish_reason length); continue it with: %s",
            last.answer_path,
            _continue_command(root, last.answer_path, last.receipt.endpoint),
        )
    log.info("%s, every answer_sha256 checked", plural(len(chain), "segment"))
    from deepseek_review.cli.split_views import story_of

    story = story_of(root, chain[0].receipt_path)
    if story:  # a split review's synthesis: the story goes to stderr, the answer stays exact
        write_lines(sys.stderr, story)
