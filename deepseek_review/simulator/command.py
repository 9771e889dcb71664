"""``python -m deepseek_review.simulator``: run the simulator as a standalone server.

The first stdout line names the URL (scripts read the port from it); then one line per
request goes to stderr unless ``--quiet``. SIGINT or SIGTERM stops it cleanly.
"""

from __future__ import annotations

import argparse
import signal
import sys
import textwrap
import threading
from typing import Any, NoReturn

from deepseek_review.errors import ConfigError
from deepseek_review.simulator.config import SimulatorConfig
from deepseek_review.simulator.server import Simulator
from deepseek_review.simulator.wire import (
    ALL_FAULTS,
    CONTEXT_OVERFLOWS,
    GARBAGE_FAULTS,
    TRANSIENT_FAULTS,
)


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


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
    """Every option's default after its help; the description and example kept as written."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default not in (None, argparse.SUPPRESS) and action.default is not False:
            text += " (default: %(default)s)"
        return text


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


def build_parser(prog: str = "python -m deepseek_review.simulator") -> argparse.ArgumentParser:
    """One flag per :class:`SimulatorConfig` field, kebab-case, plus ``--quiet``."""
    d = SimulatorConfig()
    p = _Parser(
        prog=prog,
        description="Serve a deterministic fake of Ollama's /v1/chat/completions (a test "
        "double, not a model).\n\n" + _FAULTS_HELP,
        epilog="Example: deepseek-review simulator --port 8080 --latency 0.2 --capacity 8",
        formatter_class=_Help,
    )
    p.add_argument("--host", default=d.host, help="address to listen on")
    p.add_argument("--port", type=_port, default=d.port, help="0 picks a free port")
    p.add_argument("--latency", type=float, default=d.latency, help="seconds per request")
    p.add_argument(
        "--capacity", type=int, default=d.capacity, help="requests served at once; 0 = unlimited"
    )
    p.add_argument(
        "--answer-words", type=int, default=d.answer_words, help="length of the whole answer"
    )
    p.add_argument(
        "--reasoning-words", type=int, default=d.reasoning_words, help="reasoning per answer"
    )
    p.add_argument(
        "--echo-prefill",
        action="store_true",
        help="repeat a prefilled assistant message first (as llama-server does)",
    )
    p.add_argument("--omit-usage", action="store_true", help="report no token usage")
    p.add_argument(
        "--context-window",
        type=int,
        default=d.context_window,
        help="silently keep only this many prompt tokens (as Ollama does); none: keep all",
    )
    p.add_argument(
        "--context-overflow",
        choices=CONTEXT_OVERFLOWS,
        default=d.context_overflow,
        help="a prompt over --context-window: clip it (Ollama), or refuse it as llama.cpp "
        "(refuse: a 400; error-line, error-chunk: in the stream) or llama-cpp-python (empty: "
        "an empty stream) do",
    )
    p.add_argument("--legacy-stream", action="store_true", help="the older Ollama stream framing")
    p.add_argument("--llama-stream", action="store_true", help="llama.cpp's stream framing")
    p.add_argument(
        "--end-token", action="store_true", help="an answer that fills the cap ends with length"
    )
    p.add_argument(
        "--directive-restarts",
        action="store_true",
        help="a directive continuation starts the answer over",
    )
    p.add_argument(
        "--fault-rate", type=float, default=d.fault_rate, help="share of requests that fail, 0-1"
    )
    p.add_argument(
        "--fault-kinds",
        type=_fault_kinds,
        default=",".join(d.fault_kinds),
        help="comma-separated, from the kinds above",
    )
    p.add_argument("--fault-seed", type=int, default=d.fault_seed, help="seed of the fault draw")
    p.add_argument(
        "--retry-after", type=float, default=d.retry_after, help="Retry-After of a 429, seconds"
    )
    p.add_argument(
        "--stall-seconds", type=float, default=d.stall_seconds, help="how long a stall lasts"
    )
    p.add_argument(
        "--models", type=_names, default=None, help="comma-separated model names; none: any"
    )
    p.add_argument("--api-key", default=d.api_key, help="require this bearer token; none: open")
    p.add_argument(
        "--max-body-bytes", type=int, default=d.max_body_bytes, help="larger requests get 413"
    )
    p.add_argument("--quiet", action="store_true", help="no per-request log lines")
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
    done = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        done.set()

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
            while not done.wait(0.5):
                pass
        finally:
            sim.stop()
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0
