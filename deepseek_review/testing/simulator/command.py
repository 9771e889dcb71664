"""``python -m deepseek_review.testing.simulator``: run the simulator as a standalone server.

The first stdout line names the URL (scripts read the port from it); then one line per
request goes to stderr unless ``--quiet``. SIGINT or SIGTERM stops it cleanly.
"""

from __future__ import annotations

import argparse
import signal
import sys
import textwrap
import threading
import time
from collections.abc import Iterable
from typing import Any, NoReturn

from deepseek_review.errors import ConfigError
from deepseek_review.testing.simulator.config import SERVER_KINDS, TOKENIZERS, SimulatorConfig
from deepseek_review.testing.simulator.prefix_cache import PROMPT_CACHES
from deepseek_review.testing.simulator.server import Simulator
from deepseek_review.testing.simulator.structured import STRUCTURED_FAULTS
from deepseek_review.testing.simulator.wire import (
    ALL_FAULTS,
    CONTEXT_OVERFLOWS,
    GARBAGE_FAULTS,
    TRANSIENT_FAULTS,
)


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _structured(text: str) -> list[str]:
    kinds = [] if text == "none" else list(_names(text))
    unknown = [k for k in kinds if k not in STRUCTURED_FAULTS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown answers {', '.join(unknown)}; known: {', '.join(STRUCTURED_FAULTS)}"
        )
    return kinds


def _fault_kinds(text: str) -> tuple[str, ...]:
    kinds = _names(text)
    unknown = [k for k in kinds if k not in ALL_FAULTS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown fault kinds {', '.join(unknown)}; known: {', '.join(ALL_FAULTS)}"
        )
    return kinds


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port number") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (0-65535; 0 picks a free one)")
    return port


class _Parser(argparse.ArgumentParser):
    """Usage errors are :class:`ConfigError` (one line, exit 2), not argparse's two lines."""

    def error(self, message: str) -> NoReturn:
        raise ConfigError(f"simulator: {message}", hint="see --help")


class _Help(argparse.RawDescriptionHelpFormatter):
    """The help laid out as every other command's (typer's): ``Usage: ... [OPTIONS]``, the
    summary indented, ``Options:`` with ``<type>`` metavars and sentences, each default
    after its help, the example last."""

    def __init__(self, prog: str) -> None:
        super().__init__(prog, indent_increment=2, max_help_position=34, width=80)

    def _format_usage(
        self,
        usage: str | None,
        actions: Iterable[argparse.Action],
        groups: Iterable[argparse._MutuallyExclusiveGroup],
        prefix: str | None,
    ) -> str:
        return f"Usage: {self._prog} [OPTIONS]\n\n"

    def _split_lines(self, text: str, width: int) -> list[str]:
        return textwrap.wrap(" ".join(text.split()), width, break_on_hyphens=False)

    def start_section(self, heading: str | None) -> None:
        super().start_section(heading.capitalize() if heading else heading)

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if not text.startswith("llama"):  # a name keeps its own case
            text = text[:1].upper() + text[1:]
        if action.default not in (None, argparse.SUPPRESS) and action.default is not False:
            text += " (default: %(default)s)"
        return text if text.endswith(".") else text + "."


def _indented(text: str) -> str:
    return "\n".join(f"  {line}" if line else "" for line in text.splitlines())


def _metavar(default: object, more: dict[str, Any]) -> str:
    """``<int>``, ``<float>``, ``<str>`` or ``[a|b]``, as the other commands show a value."""
    if "choices" in more:
        return "[" + "|".join(more["choices"]) + "]"
    kind = more.get("type", type(default) if default is not None else str)
    if kind is _port:
        return "<int>"
    return f"<{kind.__name__ if kind in (int, float) else 'str'}>"


def _kinds(title: str, kinds: tuple[str, ...]) -> str:
    return textwrap.fill(
        ", ".join(kinds),
        width=88,
        initial_indent=f"  {title:<11}",
        subsequent_indent=" " * 13,
        break_on_hyphens=False,
    )


_FAULTS_HELP = "\n".join(
    (
        "fault kinds (--fault-kinds; each request fails with probability --fault-rate):",
        _kinds("retried:", TRANSIENT_FAULTS),
        _kinds("refused:", GARBAGE_FAULTS),
    )
)


#: Where ``deepseek-review simulator`` listens unless told otherwise: next to Ollama's 11434,
#: a port the docs' examples can name (the library's :class:`Simulator` picks a free one).
DEFAULT_PORT = 11435

#: The flags, in ``--help`` order: (the :class:`SimulatorConfig` field, its help, argparse
#: keywords beyond those the field's default implies: a switch for a bool, its type else).
_FLAGS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("host", "address to listen on", {}),
    ("port", "0 picks a free port", {"type": _port, "default": DEFAULT_PORT}),
    ("latency", "seconds per request", {}),
    ("capacity", "requests served at once; 0 = unlimited", {}),
    ("max_queue", "requests that may wait beyond --capacity (then 503); none: any",
     {"type": int}),
    ("die_after", "answer this many chat requests, then stop listening (a crash)",
     {"type": int}),
    ("answer_words", "length of the whole answer", {}),
    ("reasoning_words", "reasoning per answer", {}),
    ("echo_prefill", "repeat a prefilled assistant message first (as llama-server does)", {}),
    ("omit_usage", "report no token usage", {}),
    ("context_window",
     "silently keep only this many prompt tokens (as Ollama does); none: keep all",
     {"type": int}),
    ("context_overflow",
     "a prompt over --context-window: clip it (Ollama), or refuse it as llama.cpp (refuse: a "
     "400; error-line, error-chunk: in the stream) or llama-cpp-python (empty: an empty "
     "stream) do", {"choices": CONTEXT_OVERFLOWS}),
    ("legacy_stream", "the older Ollama stream framing", {}),
    ("llama_stream", "llama.cpp's stream framing", {}),
    ("role_chunk", "llama-cpp-python's stream framing: the role alone in a first chunk", {}),
    ("end_token", "an answer that fills the cap ends with length", {}),
    ("directive_restarts", "a directive continuation starts the answer over", {}),
    ("findings_line_offset", "findings block lines off by this many (quotes stay right)", {}),
    ("structured_faults",
     "comma-separated: how the next requests for structured output are answered, once each "
     f"({', '.join(STRUCTURED_FAULTS)}); then valid JSON",
     {"type": _structured, "default": "none"}),
    ("fault_rate", "share of requests that fail, 0-1", {}),
    ("fault_kinds", "comma-separated, from the kinds above",
     {"type": _fault_kinds, "default": ",".join(SimulatorConfig.fault_kinds)}),
    ("fault_seed", "seed of the fault draw", {}),
    ("retry_after", "Retry-After of a 429, seconds", {}),
    ("stall_seconds", "how long a stall lasts", {}),
    ("tokenizer", "offer the tokenizer endpoints of llama.cpp, llama-cpp-python or vllm",
     {"choices": TOKENIZERS}),
    ("prompt_cache",
     "keep a prefix cache and report its hits as DeepSeek's API, OpenAI-style servers or "
     "llama.cpp do; none: report none (Ollama)", {"choices": PROMPT_CACHES}),
    ("server_kind", "answer the route that identifies ollama (/api/version), llama.cpp "
     "(/props) or vllm (/version); other: none", {"choices": SERVER_KINDS}),
    ("models", "comma-separated model names; none: any", {"type": _names}),
    ("api_key", "require this bearer token; none: open", {}),
    ("max_body_bytes", "larger requests get 413", {}),
)  # fmt: skip


def build_parser(
    prog: str = "python -m deepseek_review.testing.simulator",
) -> argparse.ArgumentParser:
    """One flag per :class:`SimulatorConfig` field, kebab-case, plus ``--quiet``."""
    d = SimulatorConfig()
    p = _Parser(
        prog=prog,
        description=_indented(
            "Serve a deterministic fake of Ollama's /v1/chat/completions (a test double, not a "
            "model).\n\n" + _FAULTS_HELP
        ),
        epilog="  Example: deepseek-review simulator --port 8080 --latency 0.2 --capacity 8",
        formatter_class=_Help,
        add_help=False,
    )
    for field, text, more in _FLAGS:
        default = getattr(d, field)
        flag = "--" + field.replace("_", "-")
        if isinstance(default, bool):
            p.add_argument(flag, action="store_true", help=text)
        else:
            implied = {} if default is None or isinstance(default, str) else {"type": type(default)}
            shown = {"metavar": _metavar(default, more)}
            p.add_argument(flag, **{"default": default, **implied, **shown, **more}, help=text)
    p.add_argument("--quiet", action="store_true", help="no per-request log lines")
    p.add_argument("-h", "--help", action="help", help="Show this message and exit.")
    return p


def serve(argv: list[str] | None = None, *, prog: str | None = None) -> int:
    """Run until SIGINT/SIGTERM; returns the exit status (usable as a CLI subcommand).

    ``prog`` names the command in ``--help`` and usage errors (e.g. "deepseek-review simulator").
    """
    parser = build_parser(prog) if prog else build_parser()
    args = vars(parser.parse_args(argv))
    quiet = args.pop("quiet")
    if args["models"] is not None:
        args["models"] = frozenset(args["models"])
    try:
        config = SimulatorConfig(**args)
    except ValueError as exc:
        parser.error(str(exc))
    sim = Simulator(config)
    sim.record_requests = False
    log_lock = threading.Lock()

    def log(line: str) -> None:
        with log_lock:
            sys.stderr.write(line + "\n")
            sys.stderr.flush()

    if not quiet:
        sim.log = log
    # A list, not a threading.Event: the handler runs in the main thread, which may hold the
    # Event's lock inside wait() at that moment; Event.set() there would wait on it forever.
    stopped: list[int] = []

    def on_signal(signum: int, frame: Any) -> None:
        stopped.append(signum)

    previous = {}
    if threading.current_thread() is threading.main_thread():
        for signum in (signal.SIGINT, signal.SIGTERM):
            previous[signum] = signal.signal(signum, on_signal)
    try:
        try:
            sim.start()
        except (OSError, OverflowError) as exc:
            where = f"{config.host}:{config.port}"
            reason = getattr(exc, "strerror", None) or str(exc)
            raise ConfigError(
                f"simulator: cannot listen on {where}: {reason}",
                hint="choose another --host or --port; --port 0 picks a free one",
            ) from None
        try:
            print(f"deepseek-review simulator listening on {sim.base_url}", flush=True)
            while not stopped:
                time.sleep(0.1)
        finally:
            sim.stop()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0
