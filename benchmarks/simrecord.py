"""The bundled simulator, recording what it was sent: for the benchmarks' same-work checks.

``python -m benchmarks.simrecord --record FILE [simulator flags]`` serves like
``python -m deepseek_review.testing.simulator`` and, when stopped (SIGTERM or SIGINT), writes
the sha256 of every chat request body it received to FILE, one per line, in the order they
came. Never the simulator of a timed comparison: the same-work checks run against it.
"""

from __future__ import annotations

import hashlib
import signal
import sys
import time
from pathlib import Path
from typing import Any

from deepseek_review.testing.simulator import Simulator
from deepseek_review.testing.simulator.command import build_parser
from deepseek_review.testing.simulator.config import SimulatorConfig


def main(argv: list[str]) -> int:
    parser = build_parser("python -m benchmarks.simrecord")
    parser.add_argument(
        "--record", type=Path, required=True, help="write the body hashes here on exit"
    )
    args = vars(parser.parse_args(argv))
    record = args.pop("record")
    args.pop("quiet")
    if args["models"] is not None:
        args["models"] = frozenset(args["models"])
    sim = Simulator(SimulatorConfig(**args))
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
    hashes = (hashlib.sha256(r.body).hexdigest() for r in sim.chat_requests())
    record.write_text("".join(h + "\n" for h in hashes), encoding="ascii")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
