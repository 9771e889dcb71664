"""Progress that tells the truth: plain lines off a terminal, a live line (rich) on one.

Plain lines (stderr not a terminal): a review ``start`` line only when its first request holds
one of the ``--jobs`` request slots, so never more start lines than slots without a finish in
between; counters that never go back and always add up; a continuation line only for a
continuation request really sent. On a terminal: a warning is printed above the live line,
never over it, and the batch line counts the tokens of answers still streaming.
"""

from __future__ import annotations

import fcntl
import itertools
import os
import pty
import re
import signal
import struct
import subprocess
import sys
import termios
import threading
import time
import tty
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.testing.simulator import Simulator
from tests.support.batch import manifest
from tests.support.progress import COUNTERS, counters
from tests.support.stubs import Reply
from tests.support.terminal import read_until_closed

Cli = Callable[..., Any]
MakeSimulator = Callable[..., Simulator]

#: A request taking one of the slots: a review's first request, or a continuation request.
TAKES_SLOT = re.compile(r"\] (?:start (\S+)|(\S+): continuation \d+/\d+)")
#: A request giving its slot back: its answer arrived (or none will), or its review finished.
GIVES_SLOT = re.compile(
    r"\] (?:answered|no answer for|ok|failed|truncated|pending|skipped) ([^ :]+)"
)
CONTINUATION = re.compile(r"(?:^deepseek-review: |\] )(\S+): continuation \d+/\d+: ")


def plain_lines(err: str) -> list[str]:
    return [line for line in err.splitlines() if COUNTERS.match(line)]


def requests_for(sim: Simulator, topic: str) -> int:
    """Chat requests the simulator received for the review of ``topic``."""
    return sum(f"Check {topic}.".encode() in r.body for r in sim.chat_requests())


def continuation_lines(err: str) -> dict[str, int]:
    """Continuation lines printed, per topic."""
    seen: dict[str, int] = {}
    for line in err.splitlines():
        m = CONTINUATION.search(line)
        if m:
            seen[m.group(1)] = seen.get(m.group(1), 0) + 1
    return seen


def run_mixed_batch(repo: Path, make_simulator: MakeSimulator, cli: Cli) -> tuple[Simulator, Any]:
    """6 entries, 3 of them cut off (continued once), ``--jobs 2`` on a server that takes 2."""
    sim = make_simulator(answer_words=60, latency=0.3, capacity=2)
    topics = [f"t{i}" for i in range(6)]
    cut = {t: {"max_tokens": 20, "max_continuations": 1} for t in topics[::2]}
    manifest(repo, topics, per_entry=cut)
    r = cli("batch", "reviews.toml", "--endpoint", sim.base_url, "--jobs", "2")
    return sim, r


# --------------------------------------------------------------------------- plain lines


def test_plain_batch_never_shows_more_requests_starting_than_jobs(repo, make_simulator, cli):
    _, r = run_mixed_batch(repo, make_simulator, cli)
    assert r.code == 11, r.err  # the cut-off entries stay truncated after one continuation
    holding: set[str] = set()
    for line in plain_lines(r.err):
        if m := TAKES_SLOT.search(line):
            holding.add(m.group(1) or m.group(2))
            assert len(holding) <= 2, f"{line!r}: a third request without a slot freed:\n{r.err}"
            assert counters(line)[2] == len(holding), r.err
        elif m := GIVES_SLOT.search(line):
            holding.discard(m.group(1))
    assert sum(1 for line in plain_lines(r.err) if "] start " in line) == 6


def test_plain_batch_counters_never_go_back_and_add_up(repo, make_simulator, cli):
    _, r = run_mixed_batch(repo, make_simulator, cli)
    rows = [counters(line) for line in plain_lines(r.err)]
    assert len(rows) >= 12, r.err  # a start and a finish line per entry at least
    for (f0, _, a0, b0, w0), (f1, _, a1, b1, w1) in itertools.pairwise(rows):
        in_flight_0, in_flight_1 = a0 + b0, a1 + b1
        assert f1 >= f0 and w1 <= w0 and f1 + in_flight_1 >= f0 + in_flight_0, r.err
    assert all(f + asking + writing + w == total == 6 for f, total, asking, writing, w in rows)
    assert rows[-1] == (6, 6, 0, 0, 0)


def test_plain_batch_prints_one_continuation_line_per_continuation_sent(repo, make_simulator, cli):
    sim, r = run_mixed_batch(repo, make_simulator, cli)
    assert continuation_lines(r.err) == {"t0": 1, "t2": 1, "t4": 1}, r.err
    assert {t: requests_for(sim, t) for t in ("t0", "t1", "t2")} == {"t0": 2, "t1": 1, "t2": 2}


def test_plain_batch_says_when_an_answer_arrived_unless_its_review_finished_next(
    repo, make_simulator, cli
):
    _, r = run_mixed_batch(repo, make_simulator, cli)
    lines = plain_lines(r.err)
    answered = [i for i, line in enumerate(lines) if "] answered " in line]
    assert answered, r.err  # six reviews on two slots: some start while others write
    for i in answered:
        m = re.search(r"\] answered (t\d) \(\d+ tokens\)$", lines[i])
        assert m, r.err
        # the review's own finish line right after would say it all: then it is not printed
        following = next(line for line in lines[i + 1 :] if "] answered " not in line)
        assert not re.search(rf"\] (ok|truncated) {m.group(1)} ", following), r.err


def test_quiet_batch_still_warns_of_a_failed_entry(repo, make_stub, cli):
    stub = make_stub([Reply(400, b'{"error": {"message": "bad request"}}')])
    manifest(repo, ["a"])
    r = cli("batch", "reviews.toml", "--endpoint", stub.base_url, "--quiet")
    assert r.code == 11, r.err
    assert "] failed a: " in r.err and "bad request" in r.err
    assert "] start a" not in r.err  # the info lines stay quiet


class _Spawned:
    """``batch`` as its own process, its stderr lines collected as they come."""

    def __init__(self, repo: Path, url: str, *extra: str) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "deepseek_review", "batch", "reviews.toml", "--endpoint", url,
             "--report", "report.json", *extra],
            cwd=repo, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        self.lines: list[str] = []
        self.reader = threading.Thread(target=self._read, daemon=True)
        self.reader.start()

    def _read(self) -> None:
        assert self.proc.stderr is not None
        with self.proc.stderr:
            self.lines.extend(iter(self.proc.stderr.readline, ""))

    def finish(self) -> tuple[int, str]:
        code = self.proc.wait(timeout=30)
        self.reader.join(timeout=30)
        return code, "".join(self.lines)


def wait_for(predicate: Callable[[], bool], timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_no_continuation_line_for_a_continuation_an_interrupt_kept_from_being_sent(
    repo, make_simulator
):
    # One slot: the first review's answer is cut off, the second review takes the slot, and
    # the first one's continuation waits for it; Ctrl-C then: that continuation is never sent.
    sim = make_simulator(answer_words=400, latency=1.5)
    manifest(repo, ["a", "b"], defaults={"max_tokens": 20})
    batch = _Spawned(repo, sim.base_url, "--jobs", "1")
    wait_for(lambda: sum(" start " in line for line in batch.lines) == 2)
    wait_for(lambda: requests_for(sim, "b") == 1)  # b holds the slot (a start line comes first)
    batch.proc.send_signal(signal.SIGINT)
    code, err = batch.finish()
    assert code == 130, err
    sent = {t: requests_for(sim, t) - 1 for t in ("a", "b")}
    assert sent == {"a": 0, "b": 0}, err
    assert continuation_lines(err) == {}, err


# --------------------------------------------------------------------------- on a terminal


def _spawn_on_a_terminal(
    repo: Path, *args: str, term: str = "xterm-256color", env: dict[str, str] | None = None
) -> tuple[subprocess.Popen[bytes], int]:
    """The CLI as its own process with stderr on a pseudo-terminal: the process, the
    terminal's reading end."""
    master, slave = pty.openpty()
    tty.setraw(slave)  # no "\n" -> "\r\n" translation: the bytes the tool wrote
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, 200, 0, 0))
    env = {**(os.environ if env is None else env), "TERM": term, "PYTHONUNBUFFERED": "1"}
    env.pop("COLUMNS", None)
    proc = subprocess.Popen(
        [sys.executable, "-m", "deepseek_review", *args],
        cwd=repo, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave,
    )  # fmt: skip
    os.close(slave)
    return proc, master


def _on_a_terminal(
    repo: Path, *args: str, term: str = "xterm-256color", env: dict[str, str] | None = None
) -> tuple[int, bytes]:
    """The CLI run with stderr on a pseudo-terminal: exit code, the raw bytes it wrote."""
    proc, master = _spawn_on_a_terminal(repo, *args, term=term, env=env)
    out = read_until_closed(master, timeout=60)
    return proc.wait(timeout=60), out


def _message_starts(out: bytes) -> list[int]:
    return [m.start() for m in re.finditer(rb"deepseek-review: ", out)]


#: Control sequences written between two pieces of text: a carriage return, cursor moves,
#: erasing, showing or hiding the cursor.
CONTROLS_AT_END = re.compile(rb"(?:\r|\x1b\[[0-9;?]*[A-Za-z])+$")


def assert_every_message_starts_a_clean_line(out: bytes) -> None:
    """Each log line begins on a line with nothing left of a redraw on it: at the very start,
    after a newline, or after a carriage return (column 0) then "erase the line" (``ESC [ 2 K``,
    or ``ESC [ K``: from the cursor, column 0, to the end), cursor moves in between."""
    starts = _message_starts(out)
    assert starts, out
    for at in starts:
        before = out[:at]
        controls = m.group(0) if (m := CONTROLS_AT_END.search(before)) else b""
        after_cr = controls.rsplit(b"\r", 1)[-1] if b"\r" in controls else None
        erased = after_cr is not None and re.search(rb"\x1b\[[02]?K", after_cr) is not None
        clean = before in (b"", controls) or before.endswith(b"\n") or erased
        assert clean, f"printed over the progress line: {out[max(0, at - 120) : at + 60]!r}"


def test_run_on_a_terminal_prints_warnings_above_the_live_line(repo, make_simulator):
    sim = make_simulator(answer_words=300, latency=1.5, omit_usage=True)
    code, out = _on_a_terminal(
        repo, "run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", sim.base_url
    )
    assert code == 0, out
    assert b"receiving" in out  # the live line was drawn while the answer streamed
    assert b"the server reported no token usage" in out
    assert_every_message_starts_a_clean_line(out)


def test_run_on_a_terminal_prints_the_continuation_line_above_the_live_line(repo, make_simulator):
    sim = make_simulator(answer_words=400, latency=1.0)
    code, out = _on_a_terminal(
        repo, "run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", sim.base_url,
        "--max-tokens", "150", "--max-continuations", "1",
    )  # fmt: skip
    assert code == 4, out  # still cut off after its one continuation
    assert b"receiving" in out and b"continuation 1/1" in out
    assert_every_message_starts_a_clean_line(out)


def test_batch_on_a_terminal_prints_warnings_above_the_live_line(repo, make_simulator):
    sim = make_simulator(answer_words=200, latency=1.0, omit_usage=True)
    manifest(repo, ["a", "b", "c"])
    code, out = _on_a_terminal(repo, "batch", "reviews.toml", "--endpoint", sim.base_url, "-j", "2")
    assert code == 0, out
    assert out.count(b"the server reported no token usage") == 3
    assert re.search(rb"\d/3", out)  # the live line was drawn
    assert_every_message_starts_a_clean_line(out)


def test_batch_on_a_terminal_counts_tokens_while_they_stream(repo, make_simulator):
    sim = make_simulator(answer_words=300, latency=2.0)
    manifest(repo, ["a"])
    code, out = _on_a_terminal(repo, "batch", "reviews.toml", "--endpoint", sim.base_url)
    assert code == 0, out
    redraws = out.split(b"\r")
    streaming = [
        int(m.group(1))
        for line in redraws
        if b" 0/1 " in line and (m := re.search(rb"~(\d+) tokens", line))
    ]
    assert streaming and max(streaming) > 0, out


#: A "select graphic rendition" sequence: colour, bold, dim...
STYLE = re.compile(rb"\x1b\[[0-9;]*m")


@pytest.mark.parametrize("term", ["xterm-256color", "xterm-direct", "linux"])
@pytest.mark.parametrize("force", [{}, {"FORCE_COLOR": "1"}, {"CLICOLOR_FORCE": "1"}])
def test_batch_on_a_terminal_prints_no_colour_even_without_no_color(
    repo, make_simulator, term, force
):
    sim = make_simulator(answer_words=120, latency=1.0, omit_usage=True)
    manifest(repo, ["a", "b"])
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"} | force
    code, out = _on_a_terminal(
        repo, "batch", "reviews.toml", "--endpoint", sim.base_url, term=term, env=env
    )
    assert code == 0, out
    assert re.search(rb"\d/2", out)  # the live line was drawn
    assert STYLE.findall(out) == [], out


def test_batch_on_a_terminal_erases_its_live_line_and_shows_the_cursor_again(repo, simulator):
    manifest(repo, ["a"])
    code, out = _on_a_terminal(repo, "batch", "reviews.toml", "--endpoint", simulator.base_url)
    assert code == 0, out
    after_last_erase = out.rsplit(b"\x1b[2K", 1)[1]
    assert after_last_erase.startswith(b"deepseek-review: batch complete: 1 ok, 0 skipped")
    assert after_last_erase.count(b"\n") == 1 and after_last_erase.endswith(b"\n")
    assert out.rfind(b"\x1b[?25h") > out.rfind(b"\x1b[?25l")  # the cursor is not left hidden


def test_a_second_ctrl_c_on_a_terminal_leaves_the_cursor_shown(repo, make_simulator):
    sim = make_simulator(answer_words=20, latency=30.0)
    manifest(repo, ["a", "b"])
    proc, master = _spawn_on_a_terminal(repo, "batch", "reviews.toml", "--endpoint", sim.base_url)
    wait_for(lambda: len(sim.chat_requests()) == 2)
    proc.send_signal(signal.SIGINT)
    time.sleep(0.3)
    proc.send_signal(signal.SIGINT)  # exits at once: no clean-up code runs
    out = read_until_closed(master)
    assert proc.wait(timeout=30) == 130, out
    assert b"again: exiting now" in out
    assert out.rfind(b"\x1b[?25h") > out.rfind(b"\x1b[?25l")


def test_quiet_on_a_terminal_draws_no_live_line(repo, simulator):
    manifest(repo, ["a"])
    code, out = _on_a_terminal(
        repo, "batch", "reviews.toml", "--endpoint", simulator.base_url, "--quiet"
    )
    assert code == 0, out
    assert out == b""


def test_dumb_terminal_gets_plain_lines(repo, simulator):
    manifest(repo, ["a"])
    code, out = _on_a_terminal(
        repo, "batch", "reviews.toml", "--endpoint", simulator.base_url, term="dumb"
    )
    assert code == 0, out
    assert b"\x1b" not in out and b"\r" not in out
    assert b"] start a" in out and b"] ok a (1 segment" in out


# --------------------------------------------------------------------------- start-up time
