"""verify's worker processes (:mod:`deepseek_review.verification.workers`): forked children
sending each chunk's results on a pipe, in place of a multiprocessing pool (issue 17).

What the parent must get whatever the children do: every chunk's results, in chunk order;
the chunks of a child that died or failed, worked by the parent itself; no child left
running (or unreaped) when the parent stops reading early.
"""

from __future__ import annotations

import os
import sys
import time
from typing import Any

import pytest

from deepseek_review.forkwork import MAX_CHUNKS, chunked, run_chunks

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="fork: Linux only")

CHUNKS = [[f"r{i}-{j}" for j in range(3)] for i in range(7)]
PARENT = os.getpid()


def _worked(chunk: list[str]) -> list[Any]:
    return [(rel, {"len": len(rel)}, [rel.upper()], None) for rel in chunk]


def _in_child() -> bool:
    return os.getpid() != PARENT


def test_every_chunk_comes_back_in_chunk_order_whoever_finishes_first() -> None:
    def slow_first(chunk: list[str]) -> list[Any]:
        if _in_child() and chunk is CHUNKS[0]:
            time.sleep(0.2)  # chunk 0's child finishes last
        return _worked(chunk)

    assert list(run_chunks(CHUNKS, 3, slow_first)) == [_worked(c) for c in CHUNKS]


def test_the_chunks_of_a_child_that_dies_are_worked_by_the_parent() -> None:
    def dies_at_chunk_2(chunk: list[str]) -> list[Any]:
        if _in_child() and chunk is CHUNKS[2]:
            os._exit(3)
        return _worked(chunk)

    assert list(run_chunks(CHUNKS, 2, dies_at_chunk_2)) == [_worked(c) for c in CHUNKS]


def test_a_chunk_that_fails_in_a_child_fails_in_the_parent_as_in_one_process() -> None:
    def fails_at_chunk_4(chunk: list[str]) -> list[Any]:
        if chunk is CHUNKS[4]:
            raise ValueError("chunk 4 is bad")
        return _worked(chunk)

    got = run_chunks(CHUNKS, 2, fails_at_chunk_4)
    assert [next(got) for _ in range(4)] == [_worked(c) for c in CHUNKS[:4]]
    with pytest.raises(ValueError, match="chunk 4 is bad"):
        next(got)


def test_children_are_stopped_and_reaped_when_the_parent_stops_reading() -> None:
    def pid_then_wait(chunk: list[str]) -> list[Any]:
        if chunk is not CHUNKS[0]:
            time.sleep(5)  # still running when the parent leaves
        return [os.getpid()]

    got = run_chunks(CHUNKS, 2, pid_then_wait)
    (first,) = next(got)
    started = time.monotonic()
    got.close()
    assert time.monotonic() - started < 2
    with pytest.raises(ProcessLookupError):
        os.kill(first, 0)  # reaped: not even a zombie is left


def test_a_child_held_up_leaves_the_other_chunks_to_the_quicker_one() -> None:
    def pid_slow_on_chunk_0(chunk: list[str]) -> list[Any]:
        if chunk is CHUNKS[0]:
            time.sleep(0.5)
        return [os.getpid()]

    pids = [part[0] for part in run_chunks(CHUNKS, 2, pid_slow_on_chunk_0)]
    assert len(set(pids)) == 2 and PARENT not in pids
    assert pids.count(pids[0]) == 1  # the child of chunk 0 did nothing else


def test_chunks_grow_rather_than_outnumber_what_the_task_pipe_holds() -> None:
    items = [str(i) for i in range(MAX_CHUNKS * 3 + 1)]
    chunks = chunked(items, 1)
    assert len(chunks) <= MAX_CHUNKS
    assert [x for c in chunks for x in c] == items
    assert chunked(items[:10], 4) == [items[0:4], items[4:8], items[8:10]]


def test_sharing_this_process_takes_chunks_too_and_the_order_holds() -> None:
    def pid_slowly(chunk: list[str]) -> list[Any]:
        time.sleep(0.1)  # time for the child to start taking chunks
        return [os.getpid(), *_worked(chunk)]

    parts = list(run_chunks(CHUNKS, 2, pid_slowly, share=True))
    assert [p[1:] for p in parts] == [_worked(c) for c in CHUNKS]
    pids = {p[0] for p in parts}
    assert PARENT in pids and len(pids) == 2  # one child, and this process


def test_sharing_a_chunk_that_fails_here_fails_in_its_turn_as_in_one_process() -> None:
    """Chunk 1 fails in this process; chunk 0, done by a slow child, still comes first."""

    def fails_here_at_chunk_1(chunk: list[str]) -> list[Any]:
        if _in_child():
            if chunk is not CHUNKS[0]:
                os._exit(0)  # leaves every later chunk to this process
            time.sleep(0.2)
        elif chunk is CHUNKS[1]:
            raise ValueError("chunk 1 is bad")
        return _worked(chunk)

    got = run_chunks(CHUNKS, 2, fails_here_at_chunk_1, share=True)
    assert next(got) == _worked(CHUNKS[0])
    with pytest.raises(ValueError, match="chunk 1 is bad"):
        next(got)
