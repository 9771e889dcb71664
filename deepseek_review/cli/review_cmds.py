"""``run``, ``continue`` and ``show``: making, extending and reading a review chain."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from ..errors import NoProgress, TruncatedReview
from ..textsafe import escape
from .app import (
    STATE,
    AllowClippedOpt,
    AttemptsOpt,
    ConnectTimeoutOpt,
    ContextOpt,
    ContExtraOpt,
    ContMaxTokensOpt,
    ContModelOpt,
    ContStyleOpt,
    EndpointOpt,
    JsonOpt,
    KeepReasoningOpt,
    KeyEnvOpt,
    MaxContOpt,
    QuietOpt,
    ReadTimeoutOpt,
    RepoRootOpt,
    RetryWaitOpt,
    ServerOpt,
    StreamOpt,
    TotalTimeoutOpt,
    VerboseOpt,
    _continuation_options,
    _json_out,
    _parse_json_object,
    _Progress,
    _read_prompt,
    _write_lines,
    app,
    example,
    log,
    settings,
    shown_path,
    tokens_text,
    typed_path,
)


@app.command(
    epilog=example(
        "deepseek-review run -c docs/spec.md -c 'src/**/*.py' -p \"Check the sums.\" --topic spec"
    )
)
def run(
    context: ContextOpt,
    prompt: Annotated[
        str | None, typer.Option("--prompt", "-p", help="The review request.")
    ] = None,
    prompt_file: Annotated[
        Path | None, typer.Option("--prompt-file", help="Read the review request from a file.")
    ] = None,
    topic: Annotated[
        str, typer.Option(help="Names the output files: <topic>_deepseek_<model>_<stamp>.")
    ] = "review",
    model: Annotated[
        str | None,
        typer.Option(help="Model name as the server knows it (default: deepseek-v4-flash)."),
    ] = None,
    endpoint: EndpointOpt = None,
    api_key_env: KeyEnvOpt = None,
    repo_root: RepoRootOpt = None,
    output_dir: Annotated[
        str | None,
        typer.Option(
            help="Output folder, inside the repository (default: reviews, at the repository root)."
        ),
    ] = None,
    template: Annotated[
        str | None,
        typer.Option(help="Bundled template: default (the default), spec-review, code-review."),
    ] = None,
    template_file: Annotated[str | None, typer.Option(help="A template file of your own.")] = None,
    temperature: Annotated[
        float | None, typer.Option(help="Always sent; Ollama forces 1.0 when absent (default: 0).")
    ] = None,
    max_tokens: Annotated[
        int | None, typer.Option(help="Completion token cap, sent as max_tokens (default: 8192).")
    ] = None,
    stream: StreamOpt = None,
    extra_body: Annotated[
        str | None,
        typer.Option(help='Extra JSON body fields, e.g. \'{"reasoning_effort":"none"}\'.'),
    ] = None,
    max_file_bytes: Annotated[
        int | None, typer.Option(help="Refuse a context file larger than this (default: 200000).")
    ] = None,
    max_context_bytes: Annotated[
        int | None, typer.Option(help="Refuse a larger context in total (default: 400000).")
    ] = None,
    keep_reasoning: KeepReasoningOpt = False,
    max_continuations: MaxContOpt = None,
    continuation_style: ContStyleOpt = None,
    continuation_model: ContModelOpt = None,
    continuation_max_tokens: ContMaxTokensOpt = None,
    server: ServerOpt = None,
    continuation_extra_body: ContExtraOpt = None,
    context_window: Annotated[
        int | None, typer.Option(help="The model's context window; warn before sending more.")
    ] = None,
    allow_truncated_prompt: AllowClippedOpt = False,
    allow_secrets: Annotated[
        bool,
        typer.Option(help="Send context that looks like it holds secrets to a remote endpoint."),
    ] = False,
    max_attempts: AttemptsOpt = None,
    retry_wait: RetryWaitOpt = 1.0,
    connect_timeout: ConnectTimeoutOpt = None,
    read_timeout: ReadTimeoutOpt = None,
    total_timeout: TotalTimeoutOpt = None,
    dry_run: Annotated[
        bool, typer.Option(help="Show what would be sent; send and write nothing.")
    ] = False,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Run one review: gather context, send it, write the answer, receipt and request record."""
    from dataclasses import replace

    from ..frontdoor import review_options
    from ..pipeline import make_client, plan_review, send_review

    root, options = review_options(
        {
            "context": tuple(context),
            "topic": topic,
            "model": model,
            "endpoint": endpoint,
            "api_key_env": api_key_env,
            "output_dir": output_dir,
            "template": template,
            "template_file": template_file,
            "temperature": temperature,
            "max_tokens": max_tokens,
            "stream": stream,
            "extra_body": _parse_json_object(extra_body, "--extra-body"),
            "max_file_bytes": max_file_bytes,
            "max_context_bytes": max_context_bytes,
            "keep_reasoning": keep_reasoning,
            "max_continuations": max_continuations,
            "continuation_style": continuation_style,
            "continuation_model": continuation_model,
            "continuation_max_tokens": continuation_max_tokens,
            "server": server,
            "continuation_extra_body": _parse_json_object(
                continuation_extra_body, "--continuation-extra-body"
            ),
            "context_window": context_window,
            "allow_truncated_prompt": allow_truncated_prompt,
            "allow_secrets": allow_secrets,
            "max_attempts": max_attempts,
            "retry_wait": retry_wait,
            "connect_timeout": connect_timeout,
            "read_timeout": read_timeout,
            "total_timeout": total_timeout,
        },
        repo_root=repo_root,
    )
    limit = options.limits.max_context_bytes
    options = replace(
        options,
        prompt=_read_prompt(prompt, prompt_file, limit),
        # Typed paths are relative to the current folder (see typed_path).
        context=tuple(typed_path(root, c) for c in options.context),
        output_dir=typed_path(root, output_dir) if output_dir else options.output_dir,
    )
    plan = plan_review(options)
    STATE.secret = plan.endpoint.api_key
    if dry_run:
        _render_plan(plan, as_json)
        return
    log.info(
        "sending %d context files (%d bytes, ~%d tokens) to %s as %s",
        len(plan.files),
        plan.context_bytes,
        plan.token_estimate,
        plan.endpoint.url,
        plan.options.model,
    )
    progress = _Progress()
    with make_client(plan.endpoint, options) as client:
        try:
            result = send_review(plan, client, progress=progress)
        finally:
            progress.done()
    _render_result(root, result, as_json)
    _raise_if_truncated(result, options.continuation.max_continuations, root)


def _continue_command(root: Path | None, answer_path: str, endpoint: str) -> str:
    """The command that continues a chain cut off at ``answer_path``, to type from here."""
    from urllib.parse import urlsplit

    from ..endpoint import is_loopback_host

    shown = answer_path if root is None else shown_path(root, answer_path)
    command = f"deepseek-review continue {shown}"
    if not is_loopback_host(urlsplit(endpoint).hostname or ""):
        # `continue` sends the key only where it is told to, never where a receipt says.
        command += f" --endpoint {endpoint}"
    return command


def _raise_if_truncated(result: Any, cap: int, root: Path | None = None) -> None:
    from ..pipeline import DEFAULT_MAX_TOKENS, no_progress_message

    if not result.truncated:
        return
    last_segment = result.segments[-1]
    last = last_segment.answer_path
    command = _continue_command(root, last, result.endpoint)
    if result.stalled:
        # The same cap would buy the same nothing: the advice must raise it, or it loops.
        raised = 2 * (last_segment.max_tokens or DEFAULT_MAX_TOKENS)
        raise NoProgress(
            no_progress_message(last_segment),
            hint=f"raise the cap: {command} --continuation-max-tokens {raised} (for a new "
            "review, a larger --max-tokens)",
        )
    raise TruncatedReview(
        f"the review is still truncated after {cap} continuation(s); last segment: {last}",
        hint=f"continue it with: {command}",
    )


def _render_plan(plan: Any, as_json: bool) -> None:
    from ..pipeline import ReviewPlan

    assert isinstance(plan, ReviewPlan)
    info = {
        "dry_run": True,
        "endpoint": plan.endpoint.url,
        "model": plan.options.model,
        "template": plan.template.name,
        "prompt_sha256": plan.prepared.prompt_sha256,
        "request_bytes": len(plan.prepared.body_bytes),
        "token_estimate": plan.token_estimate,
        "context_bytes": plan.context_bytes,
        "framed_bytes": plan.framed_bytes,
        "max_context_bytes": plan.options.limits.max_context_bytes,
        "context_files": [
            {"path": f.path, "bytes": f.size, "sha256": f.sha256} for f in plan.files
        ],
        "skipped": [{"path": s.path, "reason": s.reason} for s in plan.skipped],
    }
    if as_json:
        _json_out(info)
        return
    _write_lines(
        sys.stdout,
        [
            f"endpoint       {plan.endpoint.url}",
            f"model          {plan.options.model}",
            f"template       {plan.template.name}",
            f"prompt_sha256  {plan.prepared.prompt_sha256}",
            f"request        {len(plan.prepared.body_bytes)} bytes, ~{plan.token_estimate} tokens",
            f"framed         {plan.framed_bytes} bytes with headings, fences, file list, "
            f"template and prompt (--max-context-bytes {plan.options.limits.max_context_bytes})",
            f"context        {len(plan.files)} files, {plan.context_bytes} bytes",
            *(f"  {f.size:>10}  {f.path}" for f in plan.files),
            *(
                [f"left out       {sum(s.files for s in plan.skipped)} files"]
                if plan.skipped
                else []
            ),
            *(f"  {s.path}  {s.reason}" for s in plan.skipped),
        ],
    )
    log.info("dry run: nothing was sent and nothing was written")


def _render_result(root: Path, result: Any, as_json: bool) -> None:
    """``--json``: the result, paths relative to the root (as in receipts); else the files
    written, one a line, relative to the current folder (see ``typed_path``)."""
    from ..pipeline import ReviewResult, segment_summary

    assert isinstance(result, ReviewResult)
    if as_json:
        last = result.segments[-1]
        _json_out(
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
                "segments": segment_summary(result.segments),
            }
        )
        return
    paths = (
        shown_path(root, p)
        for s in result.segments
        for p in (s.answer_path, s.receipt_path, s.record_path, s.reasoning_path)
        if p
    )
    _write_lines(sys.stdout, paths)
    last = result.segments[-1]
    log.info(
        "%s: %d segment(s), %s, finish_reason %s",
        "truncated" if result.truncated else "done",
        len(result.segments),
        tokens_text(result.total_tokens, result.estimated_tokens),
        last.finish_reason,
    )


# --------------------------------------------------------------------------- continue, show


@app.command(
    "continue",
    epilog=example(
        "deepseek-review continue reviews/spec_deepseek_deepseek-v4-flash_20260512T033551Z.md"
    ),
)
def continue_(
    path: Annotated[str, typer.Argument(help="A receipt or answer file of the chain.")],
    endpoint: Annotated[
        str | None, typer.Option(help="Send to this URL instead of the one in the receipt.")
    ] = None,
    api_key_env: KeyEnvOpt = None,
    repo_root: RepoRootOpt = None,
    stream: StreamOpt = None,
    max_continuations: MaxContOpt = None,
    continuation_style: ContStyleOpt = None,
    continuation_model: ContModelOpt = None,
    continuation_max_tokens: ContMaxTokensOpt = None,
    server: ServerOpt = None,
    continuation_extra_body: ContExtraOpt = None,
    allow_truncated_prompt: AllowClippedOpt = False,
    allow_secrets: Annotated[
        bool,
        typer.Option(help="Send context that looks like it holds secrets to a remote endpoint."),
    ] = False,
    keep_reasoning: KeepReasoningOpt = False,
    force: Annotated[
        bool, typer.Option(help="Continue even if the last segment ended normally.")
    ] = False,
    max_attempts: AttemptsOpt = None,
    retry_wait: RetryWaitOpt = 1.0,
    connect_timeout: ConnectTimeoutOpt = None,
    read_timeout: ReadTimeoutOpt = None,
    total_timeout: TotalTimeoutOpt = None,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Continue a truncated review from the last segment of its chain."""
    from ..client import RetryPolicy, Timeouts
    from ..endpoint import DEFAULT_KEY_ENV
    from ..resume import ContinueOptions, continue_existing

    # The endpoint is the receipt's unless --endpoint says otherwise: a continuation goes
    # back to the server that wrote the chain, so the configured endpoint is not consulted.
    root, cfg = settings(
        repo_root,
        api_key_env=api_key_env,
        stream=stream,
        max_continuations=max_continuations,
        continuation_style=continuation_style,
        continuation_model=continuation_model,
        continuation_max_tokens=continuation_max_tokens,
        server=server,
        max_attempts=max_attempts,
        connect_timeout=connect_timeout,
        read_timeout=read_timeout,
        total_timeout=total_timeout,
    )
    options = ContinueOptions(
        path=typed_path(root, path),
        repo_root=str(root),
        endpoint=endpoint,
        api_key_env=cfg["api_key_env"],
        stream=cfg["stream"],
        max_tokens=cfg["continuation_max_tokens"],
        continuation=_continuation_options(
            cfg["max_continuations"],
            cfg["continuation_style"],
            cfg["continuation_model"],
            cfg["continuation_max_tokens"],
            cfg["server"],
            continuation_extra_body,
        ),
        allow_truncated_prompt=allow_truncated_prompt,
        allow_secrets=allow_secrets,
        keep_reasoning=keep_reasoning,
        force=force,
        retry=RetryPolicy(max_attempts=cfg["max_attempts"], backoff_initial=retry_wait),
        timeouts=Timeouts(
            connect=cfg["connect_timeout"], read=cfg["read_timeout"], total=cfg["total_timeout"]
        ),
    )
    STATE.secret = os.environ.get(options.api_key_env or DEFAULT_KEY_ENV, "").strip() or None
    progress = _Progress()
    try:
        outcome = continue_existing(options, progress=progress)
    finally:
        progress.done()
    _render_result(root, outcome.result, as_json)
    _raise_if_truncated(outcome.result, options.continuation.max_continuations, root)


@app.command(
    epilog=example(
        "deepseek-review show reviews/spec_deepseek_deepseek-v4-flash_20260512T033551Z.md"
    )
)
def show(
    path: Annotated[str, typer.Argument(help="A receipt or answer file of the chain.")],
    repo_root: RepoRootOpt = None,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Print a chain's whole stitched answer, after checking every segment's hash.

    Piped or redirected, the output is exactly the stitched answer, byte for byte; on a
    terminal a final newline is added when the answer lacks one (so the prompt does not land
    on its last line). A chain still cut off at the token cap is noted on stderr.
    """
    from ..chain import find_chain, stitched_text
    from ..repo import find_repo_root

    root = find_repo_root(repo_root)
    chain = find_chain(root, typed_path(root, path))
    text = stitched_text(root, chain)
    if sys.stdout.isatty():
        # The answer is the server's text: on a terminal its control sequences (OSC 52 writes
        # the clipboard) are shown, not obeyed. Piped or redirected, it is the exact bytes.
        text = escape(text, multiline=True)
    sys.stdout.write(text)
    if text and not text.endswith("\n") and sys.stdout.isatty():
        sys.stdout.write("\n")
    sys.stdout.flush()
    last = chain[-1]
    if last.finish_reason == "length":
        log.warning(
            "the answer is cut off: its last segment, %s, ended at the token cap "
            "(finish_reason length); continue it with: %s",
            last.answer_path,
            _continue_command(root, last.answer_path, last.receipt.endpoint),
        )
    log.info("%d segment(s), every answer_sha256 checked", len(chain))
