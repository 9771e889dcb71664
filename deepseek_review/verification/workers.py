"""verify's worker processes: forked children, each checking every ``jobs``-th chunk of
receipts and sending each chunk's results back on its own pipe, as a marshal frame.

Why not a ``multiprocessing`` pool (issue 17): starting, feeding and stopping one cost the
parent about 30 ms of CPU and 50 ms of wall time at 10,000 receipts, on the two cores the
workers need, for what a pipe per child does. A child that dies or fails leaves chunks
unsent: the parent checks those itself, so what a worker cannot do fails (or succeeds)
exactly as it would in one process.
"""

from __future__ import annotations

import marshal
import os
import selectors
import signal
import struct
import sys
import threading
from collections.abc import Callable, Generator, Iterator
from typing import Any

#: A frame: the chunk's index and the length of its marshalled results.
_HEADER = struct.Struct(">II")


def default_jobs(receipts: int, least: int) -> int:
    """Worker processes for ``receipts``: 1 (none) unless there are ``least`` or more and a
    fork is safe (Linux, one thread, several cores)."""
    if receipts < least or not sys.platform.startswith("linux"):
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if (cpus or 1) < 2 or threading.active_count() > 1:  # forking a threaded process can deadlock
        return 1
    return min(cpus or 1, 4)


def _child(k: int, jobs: int, chunks: list[list[str]], work: Work, out: int) -> None:
    """In child ``k``: its chunks, each sent as soon as it is checked; never returns."""
    status = 1
    try:
        # Ctrl-C is the parent's to handle (it stops the children); its SIGTERM ends a child
        # quietly, not through a handler inherited by the fork.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        for i in range(k, len(chunks), jobs):
            payload = marshal.dumps(work(chunks[i]))
            view = memoryview(_HEADER.pack(i, len(payload)) + payload)
            while view:
                view = view[os.write(out, view) :]
        status = 0
    except BaseException:
        pass
    finally:
        os._exit(status)


#: Checks a chunk of receipts; its results must be marshal-able (tuples, lists, dicts, str).
Work = Callable[[list[str]], list[Any]]


def run_chunks(chunks: list[list[str]], jobs: int, work: Work) -> Generator[list[Any], None, None]:
    """``work`` of every chunk, in ``jobs`` forked children; the results are yielded in
    chunk order (the report must not depend on which child was quicker). Chunks a child did
    not send (it died, or failed) are worked here, after the children are done."""
    children: dict[int, int] = {}  # read end → pid
    done = False
    try:
        for k in range(min(jobs, len(chunks))):
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                os.close(read)
                _child(k, jobs, chunks, work, write)
            os.close(write)
            children[read] = pid
        got: dict[int, list[Any]] = {}
        next_i = 0
        for i, results in _frames(children):
            got[i] = results
            while next_i in got:
                yield got.pop(next_i)
                next_i += 1
        done = True  # every pipe closed: the children are exiting
        for i in range(next_i, len(chunks)):
            yield got.pop(i) if i in got else work(chunks[i])
    finally:
        for read, pid in children.items():
            _reap(read, pid, stop=not done)


def _frames(children: dict[int, int]) -> Iterator[tuple[int, list[Any]]]:
    """Each frame the children send, as it is complete, until every pipe is closed."""
    buffers = {read: bytearray() for read in children}
    with selectors.DefaultSelector() as sel:
        for read in children:
            sel.register(read, selectors.EVENT_READ)
        while buffers:
            for key, _ in sel.select():
                read = int(key.fd)
                chunk = os.read(read, 1 << 16)  # a pipe holds 64 KiB
                buf = buffers[read]
                if not chunk:
                    sel.unregister(read)
                    del buffers[read]  # a cut-off frame is dropped: its chunk is redone
                    continue
                buf += chunk
                while len(buf) >= _HEADER.size:
                    i, size = _HEADER.unpack_from(buf)
                    end = _HEADER.size + size
                    if len(buf) < end:
                        break
                    results = marshal.loads(buf[_HEADER.size : end])
                    del buf[:end]
                    yield i, results


def _reap(read: int, pid: int, *, stop: bool) -> None:
    """Close a child's pipe and wait for it to end (``stop``: end it first, the parent is
    leaving early: interrupted, or failed)."""
    os.close(read)
    try:
        if stop:
            os.kill(pid, signal.SIGTERM)
        os.waitpid(pid, 0)
    except (ChildProcessError, ProcessLookupError):
        pass
