"""The command line: parse arguments, call the core, render results. Nothing else.

Results go to stdout (paths, or one JSON object with ``--json``); status, progress and errors
go to stderr. Every :class:`~deepseek_review.errors.ReviewError` is caught in :func:`main`
alone and becomes a one-line message and its exit code; ``--verbose`` adds the traceback.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import time
import traceback
from pathlib import Path
from typing import Annotated, Any, NoReturn

import typer

from . import __version__
from .errors import ConfigError, InputError, Interrupted, ReviewError, TruncatedReview

log = logging.getLogger("deepseek_review")

app = typer.Typer(
    name="deepseek-review",
    help="Ask a DeepSeek model to review repository files, and keep verifiable receipts.",
    no_args_is_help=True,
    add_completion=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


class _State:
    verbose = False
    quiet = False
    secret: str | None = None


STATE = _State()


class _ScrubFilter(logging.Filter):
    """Defence in depth: no log line may carry the API key, whatever formatted it."""

    def filter(self, record: logging.LogRecord) -> bool:
        if STATE.secret:
            msg = record.getMessage()
            if STATE.secret in msg:
                record.msg, record.args = msg.replace(STATE.secret, "[redacted]"), None
        return True


def _setup_logging(verbose: bool, quiet: bool) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("deepseek-review: %(message)s"))
    handler.addFilter(_ScrubFilter())
    log.handlers[:] = [handler]
    log.propagate = False
    log.setLevel(logging.DEBUG if verbose else logging.WARNING if quiet else logging.INFO)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"deepseek-review {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="More status lines; tracebacks on errors.")
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Only warnings and errors.")] = False,
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
) -> None:
    """Ask a DeepSeek model to review repository files, and keep verifiable receipts.

    Example: deepseek-review run --context docs/spec.md --prompt "Check the arithmetic."
    """
    STATE.verbose, STATE.quiet = verbose, quiet
    _setup_logging(verbose, quiet)


# --------------------------------------------------------------------------- helpers


def _json_out(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def _parse_json_object(text: str | None, option: str) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except ValueError as exc:
        raise ConfigError(f"{option}: not JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ConfigError(f"{option}: must be a JSON object")
    return value


def _read_prompt(prompt: str | None, prompt_file: Path | None) -> str:
    if prompt is not None and prompt_file is not None:
        raise ConfigError("give the prompt once: --prompt or --prompt-file, not both")
    if prompt is not None:
        return prompt
    if prompt_file is not None:
        try:
            return prompt_file.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise InputError(f"--prompt-file {prompt_file}: no such file") from None
        except UnicodeDecodeError:
            raise InputError(f"--prompt-file {prompt_file}: not UTF-8") from None
        except OSError as exc:
            raise InputError(f"--prompt-file {prompt_file}: cannot read ({exc.strerror})") from None
    if sys.stdin is None or sys.stdin.isatty():
        raise InputError("no prompt: give --prompt, --prompt-file, or pipe it on stdin")
    try:
        return sys.stdin.read()
    except UnicodeDecodeError:
        raise InputError("the prompt on stdin is not UTF-8") from None


class _Progress:
    """A live 'tokens, tokens/s' line on a TTY; nothing otherwise."""

    def __init__(self) -> None:
        self.enabled = sys.stderr.isatty() and not STATE.quiet
        self._last = 0.0
        self._shown = False

    def __call__(self, pieces: int, elapsed: float) -> None:
        now = time.monotonic()
        if not self.enabled or now - self._last < 0.1:
            return
        self._last = now
        rate = pieces / elapsed if elapsed > 0 else 0.0
        sys.stderr.write(f"\r  receiving: {pieces} tokens, {rate:.1f} tokens/s ")
        sys.stderr.flush()
        self._shown = True

    def done(self) -> None:
        if self._shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()
            self._shown = False


# --------------------------------------------------------------------------- run

ContextOpt = Annotated[
    list[str],
    typer.Option(
        "--context",
        "-c",
        help="A file, folder or glob relative to the repository root (repeatable).",
    ),
]
EndpointOpt = Annotated[
    str | None,
    typer.Option(help="Chat-completions URL or base URL (else OLLAMA_HOST, else localhost:11434)."),
]
KeyEnvOpt = Annotated[str, typer.Option(help="Environment variable holding the API key.")]
RepoRootOpt = Annotated[
    str | None,
    typer.Option(help="Repository root (default: the enclosing git work tree, else .)."),
]
StreamOpt = Annotated[bool, typer.Option("--stream/--no-stream", help="Stream the answer (SSE).")]
KeepReasoningOpt = Annotated[
    bool, typer.Option(help="Write the model's reasoning to <stem>.reasoning.md.")
]
MaxContOpt = Annotated[int, typer.Option(help="Continuation requests when cut off (0 disables).")]
ContStyleOpt = Annotated[
    str,
    typer.Option(help="prefill (assistant prefill, exact seam) or directive (a user message)."),
]
ContModelOpt = Annotated[str | None, typer.Option(help="Model for continuations.")]
ContMaxTokensOpt = Annotated[int | None, typer.Option(help="Token cap for continuations.")]
ServerOpt = Annotated[
    str, typer.Option(help="Server kind, for prefill fields: ollama, llama.cpp, vllm, deepseek.")
]
ContExtraOpt = Annotated[
    str | None, typer.Option(help="Extra JSON body fields for continuation requests only.")
]
AllowClippedOpt = Annotated[
    bool, typer.Option(help="Keep an answer even if the server silently clipped the prompt.")
]
AttemptsOpt = Annotated[int, typer.Option(help="Attempts per request (retries + 1).")]
ConnectTimeoutOpt = Annotated[float, typer.Option(help="Seconds to connect.")]
ReadTimeoutOpt = Annotated[float, typer.Option(help="Seconds to wait for the next bytes.")]
JsonOpt = Annotated[bool, typer.Option("--json", help="One JSON object on stdout.")]


def _continuation_options(
    max_continuations: int,
    style: str,
    model: str | None,
    max_tokens: int | None,
    server: str,
    extra_body: str | None,
) -> Any:
    from .review import ContinuationOptions

    return ContinuationOptions(
        max_continuations=max_continuations,
        style=style,  # type: ignore[arg-type]  # validated by the dataclass
        model=model,
        max_tokens=max_tokens,
        server=server,
        extra_body=_parse_json_object(extra_body, "--continuation-extra-body"),
    )


@app.command()
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
        str, typer.Option(help="Model name as the server knows it.")
    ] = "deepseek-v4-flash",
    endpoint: EndpointOpt = None,
    api_key_env: KeyEnvOpt = "OLLAMA_API_KEY",
    repo_root: RepoRootOpt = None,
    output_dir: Annotated[
        str, typer.Option(help="Output folder, relative to the repository root.")
    ] = "reviews",
    template: Annotated[
        str | None, typer.Option(help="Bundled template: default, spec-review, code-review.")
    ] = None,
    template_file: Annotated[str | None, typer.Option(help="A template file of your own.")] = None,
    temperature: Annotated[
        float, typer.Option(help="Always sent (Ollama forces 1.0 when absent).")
    ] = 0.0,
    max_tokens: Annotated[
        int, typer.Option(help="Completion token cap (sent as max_tokens).")
    ] = 8192,
    stream: StreamOpt = True,
    extra_body: Annotated[
        str | None,
        typer.Option(help='Extra JSON body fields, e.g. \'{"reasoning_effort":"none"}\'.'),
    ] = None,
    max_file_bytes: Annotated[
        int, typer.Option(help="Refuse a context file larger than this.")
    ] = 200_000,
    max_context_bytes: Annotated[
        int, typer.Option(help="Refuse a context larger than this in total.")
    ] = 400_000,
    keep_reasoning: KeepReasoningOpt = False,
    max_continuations: MaxContOpt = 3,
    continuation_style: ContStyleOpt = "prefill",
    continuation_model: ContModelOpt = None,
    continuation_max_tokens: ContMaxTokensOpt = None,
    server: ServerOpt = "ollama",
    continuation_extra_body: ContExtraOpt = None,
    context_window: Annotated[
        int | None, typer.Option(help="The model's context window; warn before sending more.")
    ] = None,
    allow_truncated_prompt: AllowClippedOpt = False,
    allow_secrets: Annotated[
        bool,
        typer.Option(help="Send context that looks like it holds secrets to a remote endpoint."),
    ] = False,
    max_attempts: AttemptsOpt = 5,
    connect_timeout: ConnectTimeoutOpt = 10.0,
    read_timeout: ReadTimeoutOpt = 600.0,
    dry_run: Annotated[
        bool, typer.Option(help="Show what would be sent; send and write nothing.")
    ] = False,
    as_json: JsonOpt = False,
) -> None:
    """Run one review: gather context, send it, write the answer, receipt and request record.

    Example: deepseek-review run -c docs/spec.md -c 'src/**/*.py' -p "Check the sums." --topic spec
    """
    from .client import RetryPolicy, Timeouts
    from .context import ContextLimits
    from .review import ReviewOptions, make_client, plan_review, send_review

    options = ReviewOptions(
        context=tuple(context),
        prompt=_read_prompt(prompt, prompt_file),
        topic=topic,
        model=model,
        repo_root=repo_root,
        output_dir=output_dir,
        template=template,
        template_file=template_file,
        temperature=temperature,
        max_tokens=max_tokens,
        stream=stream,
        extra_body=_parse_json_object(extra_body, "--extra-body"),
        limits=ContextLimits(max_file_bytes=max_file_bytes, max_context_bytes=max_context_bytes),
        keep_reasoning=keep_reasoning,
        continuation=_continuation_options(
            max_continuations,
            continuation_style,
            continuation_model,
            continuation_max_tokens,
            server,
            continuation_extra_body,
        ),
        context_window=context_window,
        allow_truncated_prompt=allow_truncated_prompt,
        allow_secrets=allow_secrets,
        endpoint=endpoint,
        api_key_env=api_key_env,
        retry=RetryPolicy(max_attempts=max_attempts),
        timeouts=Timeouts(connect=connect_timeout, read=read_timeout),
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
    _render_result(result, as_json)
    _raise_if_truncated(result, options.continuation.max_continuations)


def _raise_if_truncated(result: Any, cap: int) -> None:
    if result.truncated:
        last = result.segments[-1].answer_path
        raise TruncatedReview(
            f"the review is still truncated after {cap} continuation(s); last segment: {last}",
            hint=f"continue it with: deepseek-review continue {last}",
        )


def _render_plan(plan: Any, as_json: bool) -> None:
    from .review import ReviewPlan

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
        "context_files": [
            {"path": f.path, "bytes": f.size, "sha256": f.sha256} for f in plan.files
        ],
    }
    if as_json:
        _json_out(info)
        return
    out = sys.stdout
    out.write(f"endpoint       {plan.endpoint.url}\n")
    out.write(f"model          {plan.options.model}\n")
    out.write(f"template       {plan.template.name}\n")
    out.write(f"prompt_sha256  {plan.prepared.prompt_sha256}\n")
    out.write(
        f"request        {len(plan.prepared.body_bytes)} bytes, ~{plan.token_estimate} tokens\n"
    )
    out.write(f"context        {len(plan.files)} files, {plan.context_bytes} bytes\n")
    for f in plan.files:
        out.write(f"  {f.size:>10}  {f.path}\n")
    log.info("dry run: nothing was sent and nothing was written")


def _render_result(result: Any, as_json: bool) -> None:
    from .review import ReviewResult, segment_summary

    assert isinstance(result, ReviewResult)
    if as_json:
        last = result.segments[-1]
        _json_out(
            {
                "status": "truncated" if result.truncated else "ok",
                "endpoint": result.endpoint,
                "context_files": list(result.context_files),
                "finish_reason": last.finish_reason,
                "usage_reported": all(s.usage_reported for s in result.segments),
                "usage": {
                    k: sum(getattr(s.usage, k) for s in result.segments)
                    for k in ("prompt_tokens", "completion_tokens", "total_tokens")
                },
                "segments": segment_summary(result.segments),
            }
        )
        return
    for s in result.segments:
        sys.stdout.write(f"{s.answer_path}\n{s.receipt_path}\n{s.record_path}\n")
        if s.reasoning_path:
            sys.stdout.write(f"{s.reasoning_path}\n")
    sys.stdout.flush()
    last = result.segments[-1]
    log.info(
        "%s: %d segment(s), %d tokens, finish_reason %s",
        "truncated" if result.truncated else "done",
        len(result.segments),
        result.total_tokens,
        last.finish_reason,
    )


# --------------------------------------------------------------------------- continue, show


@app.command("continue")
def continue_(
    path: Annotated[str, typer.Argument(help="A receipt or answer file of the chain.")],
    endpoint: Annotated[
        str | None, typer.Option(help="Send to this URL instead of the one in the receipt.")
    ] = None,
    api_key_env: KeyEnvOpt = "OLLAMA_API_KEY",
    repo_root: RepoRootOpt = None,
    stream: StreamOpt = True,
    max_continuations: MaxContOpt = 3,
    continuation_style: ContStyleOpt = "prefill",
    continuation_model: ContModelOpt = None,
    continuation_max_tokens: ContMaxTokensOpt = None,
    server: ServerOpt = "ollama",
    continuation_extra_body: ContExtraOpt = None,
    allow_truncated_prompt: AllowClippedOpt = False,
    keep_reasoning: KeepReasoningOpt = False,
    force: Annotated[
        bool, typer.Option(help="Continue even if the last segment ended normally.")
    ] = False,
    max_attempts: AttemptsOpt = 5,
    connect_timeout: ConnectTimeoutOpt = 10.0,
    read_timeout: ReadTimeoutOpt = 600.0,
    as_json: JsonOpt = False,
) -> None:
    """Continue a truncated review from the last segment of its chain.

    Example: deepseek-review continue reviews/spec_deepseek_deepseek-v4-flash_20260512T033551Z.md
    """
    from .client import RetryPolicy, Timeouts
    from .resume import ContinueOptions, continue_existing

    options = ContinueOptions(
        path=path,
        repo_root=repo_root,
        endpoint=endpoint,
        api_key_env=api_key_env,
        stream=stream,
        max_tokens=continuation_max_tokens,
        continuation=_continuation_options(
            max_continuations,
            continuation_style,
            continuation_model,
            continuation_max_tokens,
            server,
            continuation_extra_body,
        ),
        allow_truncated_prompt=allow_truncated_prompt,
        keep_reasoning=keep_reasoning,
        force=force,
        retry=RetryPolicy(max_attempts=max_attempts),
        timeouts=Timeouts(connect=connect_timeout, read=read_timeout),
    )
    progress = _Progress()
    try:
        outcome = continue_existing(options, progress=progress)
    finally:
        progress.done()
    _render_result(outcome.result, as_json)
    _raise_if_truncated(outcome.result, max_continuations)


@app.command()
def show(
    path: Annotated[str, typer.Argument(help="A receipt or answer file of the chain.")],
    repo_root: RepoRootOpt = None,
) -> None:
    """Print a chain's whole stitched answer, after checking every segment's hash.

    Example: deepseek-review show reviews/spec_deepseek_deepseek-v4-flash_20260512T033551Z.md
    """
    from .chain import find_chain, stitched_text
    from .repo import find_repo_root

    root = find_repo_root(repo_root)
    chain = find_chain(root, path)
    text = stitched_text(root, chain)
    sys.stdout.write(text)
    sys.stdout.flush()
    log.info("%d segment(s), every answer_sha256 checked", len(chain))


# --------------------------------------------------------------------------- simulator


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def simulator(ctx: typer.Context) -> None:
    """Serve the bundled OpenAI-compatible simulator (a test double, not a model).

    Example: deepseek-review simulator --port 8080 --latency 0.2 --capacity 8
    """
    from .simulator import serve

    raise typer.Exit(serve(list(ctx.args)))


# --------------------------------------------------------------------------- main


def _fail(exc: ReviewError) -> NoReturn:
    msg = exc.message
    if STATE.secret:
        msg = msg.replace(STATE.secret, "[redacted]")
    line = f"deepseek-review: error: {msg}"
    if exc.hint:
        line += f" ({exc.hint})"
    sys.stderr.write(line.replace("\n", " ") + "\n")
    if STATE.verbose:
        traceback.print_exception(exc, file=sys.stderr)
    sys.exit(exc.exit_code)


def main(argv: list[str] | None = None) -> None:
    """The console script: one place maps every failure to its exit code."""
    args = sys.argv[1:] if argv is None else argv
    command = typer.main.get_command(app)
    try:
        code = command.main(args=args, prog_name="deepseek-review", standalone_mode=False)
    except ReviewError as exc:
        _fail(exc)
    except (KeyboardInterrupt, typer.Abort):
        _fail(Interrupted("interrupted"))
    except typer.TyperException as exc:  # usage errors from argument parsing
        text = exc.format_message().replace("\n", " ")
        sys.stderr.write(f"deepseek-review: error: {text} (see --help)\n")
        sys.exit(getattr(exc, "exit_code", 2))
    except BrokenPipeError:
        os._exit(0)  # stdout closed early (| head): not an error
    except Exception as exc:  # a bug: say so, briefly, unless --verbose
        if STATE.verbose:
            raise
        sys.stderr.write(
            f"deepseek-review: internal error: {type(exc).__name__}: "
            f"{str(exc).splitlines()[0] if str(exc) else ''} (run with --verbose for details)\n"
        )
        sys.exit(1)
    sys.exit(code if isinstance(code, int) else 0)
