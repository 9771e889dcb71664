"""``python -m deepseek_review.simulator``: run the simulator as a standalone server.

The first stdout line names the URL (scripts read the port from it); then one line per
request goes to stderr unless ``--quiet``. SIGINT or SIGTERM stops it cleanly.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from typing import Any

from deepseek_review.simulator.config import SimulatorConfig
from deepseek_review.simulator.server import Simulator
from deepseek_review.simulator.wire import ALL_FAULTS


def _names(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _fault_kinds(text: str) -> tuple[str, ...]:
    kinds = _names(text)
    unknown = [k for k in kinds if k not in ALL_FAULTS]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown fault kinds {unknown}; known: {ALL_FAULTS}")
    return kinds


def build_parser(prog: str = "python -m deepseek_review.simulator") -> argparse.ArgumentParser:
    """One flag per :class:`SimulatorConfig` field, kebab-case, plus ``--quiet``."""
    d = SimulatorConfig()
    p = argparse.ArgumentParser(
        prog=prog,
        description="Serve a deterministic fake of Ollama's /v1/chat/completions (a test double).",
    )
    p.add_argument("--host", default=d.host)
    p.add_argument("--port", type=int, default=d.port, help="0 picks a free port")
    p.add_argument("--latency", type=float, default=d.latency, help="seconds per request")
    p.add_argument("--capacity", type=int, default=d.capacity, help="0 = unlimited")
    p.add_argument("--answer-words", type=int, default=d.answer_words)
    p.add_argument("--reasoning-words", type=int, default=d.reasoning_words)
    p.add_argument("--echo-prefill", action="store_true")
    p.add_argument("--omit-usage", action="store_true")
    p.add_argument("--context-window", type=int, default=d.context_window)
    p.add_argument("--legacy-stream", action="store_true")
    p.add_argument("--llama-stream", action="store_true", help="llama.cpp's stream framing")
    p.add_argument(
        "--end-token", action="store_true", help="an answer that fills the cap ends with length"
    )
    p.add_argument(
        "--directive-restarts",
        action="store_true",
        help="a directive continuation starts the answer over",
    )
    p.add_argument("--fault-rate", type=float, default=d.fault_rate)
    p.add_argument(
        "--fault-kinds", type=_fault_kinds, default=d.fault_kinds, help="comma-separated"
    )
    p.add_argument("--fault-seed", type=int, default=d.fault_seed)
    p.add_argument("--retry-after", type=float, default=d.retry_after)
    p.add_argument("--stall-seconds", type=float, default=d.stall_seconds)
    p.add_argument("--models", type=_names, default=None, help="comma-separated model names")
    p.add_argument("--api-key", default=d.api_key)
    p.add_argument("--max-body-bytes", type=int, default=d.max_body_bytes)
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
        with sim:
            print(f"deepseek-review simulator listening on {sim.base_url}", flush=True)
            while not done.wait(0.5):
                pass
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    return 0
