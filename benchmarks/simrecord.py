"""The bundled simulator, recording what it was sent: for the benchmarks' same-work checks.

``python -m benchmarks.simrecord [--record FILE] [--arrivals FILE] [simulator flags]`` serves
like ``python -m deepseek_review.testing.simulator`` and, when stopped (SIGTERM or SIGINT),
writes the sha256 of every chat request body it received to the ``--record`` FILE, and the time each
arrived (seconds since the epoch, as the simulator admitted it, before its latency) to the
``--arrivals`` FILE, one per line, in the order they came. Never the simulator of a timed
comparison: the same-work checks run against it, and the arrival times are a pass of their own.
"""

from __future__ import annotations

import hashlib
import signal
import sys
import time
from pathlib import Path
from typing import Any

from deepseek_review.testing.simulator import RecordedRequest, Simulator
from deepseek_review.testing.simulator.command import build_parser
from deepseek_review.testing.simulator.config import SimulatorConfig


def main(argv: list[str]) -> int:
    parser = build_parser("python -m benchmarks.simrecord")
    parser.add_argument("--record", type=Path, help="write the body hashes here on exit")
    parser.add_argument("--arrivals", type=Path, help="write the arrival times here on exit")
    args = vars(parser.parse_args(argv))
    record, arrivals = args.pop("record"), args.pop("arrivals")
    if record is None and arrivals is None:
        parser.error("give --record, --arrivals or both")
    args.pop("quiet")
    if args["models"] is not None:
        args["models"] = frozenset(args["models"])
    sim = Simulator(SimulatorConfig(**args))
    stamped = sim.requests = _Stamped()
    # A list, not a threading.Event: the handler runs in the main thread, which may hold the
    # Event's lock inside wait() at that moment; Event.set() there would wait on it forever.
    stopped: list[int] = []

    def stop(signum: int, frame: Any) -> None:
        stopped.append(signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    sim.start()
    print(f"deepseek-review simulator listening on {sim.base_url}", flush=True)
    while not stopped:
        time.sleep(0.1)
    sim.stop()
    chats = [
        (r, stamp)
        for r, stamp in zip(stamped, stamped.stamps, strict=True)
        if r.method == "POST" and r.path.endswith("/chat/completions")
    ]
    if record is not None:
        hashes = (hashlib.sha256(r.body).hexdigest() for r, _ in chats)
        record.write_text("".join(h + "\n" for h in hashes), encoding="ascii")
    if arrivals is not None:
        arrivals.write_text("".join(f"{stamp:.6f}\n" for _, stamp in chats), encoding="ascii")
    return 0


class _Stamped(list[RecordedRequest]):
    """The simulator's list of requests, with the time each was appended (under its lock, as
    it admits the request)."""

    def __init__(self) -> None:
        super().__init__()
        self.stamps: list[float] = []

    def append(self, request: RecordedRequest) -> None:
        self.stamps.append(time.time())
        super().append(request)

    def clear(self) -> None:
        self.stamps.clear()
        super().clear()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
