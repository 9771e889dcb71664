"""Work split over forked children: chunks of items taken from a shared pipe of chunk
indices, each chunk's results sent back on the child's own pipe as a marshal frame (verify's
receipt checks; gathering's file reads, where the parent takes chunks too).

Why not a ``multiprocessing`` pool (issue 17): at 10,000 receipts the parent spent about
160 ms of CPU while the workers ran, on the two cores they need (a pool's start, feeding
and stop alone: ~30 ms of CPU, ~50 ms of wall); with a pipe per child, about 70 ms.
Chunks are taken, not dealt: a child slowed down (a shared machine, costlier receipts)
takes fewer, where dealt chunks left one child up to 110 ms behind the other. A child that
dies or fails leaves chunks unsent: the parent works those itself, so what a worker
cannot do fails (or succeeds) exactly as it would in one process.
"""

from __future__ import annotations

import contextlib
import marshal
import os
import selectors
import signal
import struct
import sys
import threading
from collections.abc import Callable, Generator
from typing import Any, TypeVar

#: A frame: the chunk's index and the length of its marshalled results.
_HEADER = struct.Struct(">II")
#: A task: a chunk's index.
_INDEX = struct.Struct(">I")
#: The task pipe holds every index before the children start (a pipe holds 64 KiB).
MAX_CHUNKS = 8192


def default_jobs(items: int, least: int) -> int:
    """Processes to work ``items`` in: 1 (no fork) unless there are ``least`` or more and a
    fork is safe (Linux, one thread, several cores)."""
    if items < least or not sys.platform.startswith("linux"):
        return 1
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if (cpus or 1) < 2 or threading.active_count() > 1:  # forking a threaded process can deadlock
        return 1
    return min(cpus or 1, 4)


Item = TypeVar("Item")
#: Works a chunk of items; its results must be marshal-able (tuples, lists, dicts, str, None).
Work = Callable[[list[Item]], list[Any]]


def _child(tasks: int, chunks: list[list[Item]], work: Work[Item], out: int) -> None:
    """In a child: chunks taken from ``tasks`` one index at a time (the quicker child takes
    more), each sent as soon as it is worked; never returns."""
    status = 1
    try:
        # Ctrl-C is the parent's to handle (it stops the children); its SIGTERM ends a child
        # quietly, not through a handler inherited by the fork.
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        while (i := _take(tasks)) is not None:
            payload = marshal.dumps(work(chunks[i]))
            view = memoryview(_HEADER.pack(i, len(payload)) + payload)
            while view:
                view = view[os.write(out, view) :]
        status = 0
    except BaseException:
        pass
    finally:
        os._exit(status)


def _take(tasks: int) -> int | None:
    """The next chunk's index from the task pipe, or None when every chunk is taken (one
    read of a whole index: atomic, whichever process reads)."""
    task = os.read(tasks, _INDEX.size)
    return _INDEX.unpack(task)[0] if len(task) == _INDEX.size else None


def chunked(items: list[Item], size: int) -> list[list[Item]]:
    """``items`` in chunks of ``size`` (more when there would be over :data:`MAX_CHUNKS`)."""
    size = max(size, 1, -(-len(items) // MAX_CHUNKS))
    return [items[i : i + size] for i in range(0, len(items), size)]


def run_chunks(
    chunks: list[list[Item]], jobs: int, work: Work[Item], *, share: bool = False
) -> Generator[list[Any], None, None]:
    """``work`` of every chunk, in ``jobs`` processes: forked children, and with ``share``
    this one too (it takes chunks from the same pipe, between taking the children's
    results). The results are yielded in chunk order (they must not depend on which process
    was quicker). Chunks a child did not send (it died, or failed), and this process's own
    that failed, are worked here in their turn, after the children are done: an error is
    raised where one process would raise it."""
    if len(chunks) > MAX_CHUNKS:
        raise ValueError(f"{len(chunks)} chunks: at most {MAX_CHUNKS} (see chunked)")
    children: dict[int, int] = {}  # read end → pid
    done = False
    tasks, to_do = os.pipe()
    try:  # every chunk's index, written before any child starts: it fits in the pipe
        os.write(to_do, b"".join(_INDEX.pack(i) for i in range(len(chunks))))
    finally:
        os.close(to_do)
    try:
        for _ in range(min(jobs - share, len(chunks))):
            read, write = os.pipe()
            pid = os.fork()
            if pid == 0:
                for fd in (read, *children):
                    os.close(fd)
                _child(tasks, chunks, work, write)
            os.close(write)
            children[read] = pid
        if not share:
            os.close(tasks)
            tasks = -1
        got: dict[int, list[Any]] = {}
        next_i = 0
        with _Inbox(children) as inbox:
            while tasks >= 0 or inbox:
                if tasks >= 0 and (i := _take(tasks)) is not None:
                    # One that fails is worked again in its turn below, raising there.
                    with contextlib.suppress(Exception):
                        got[i] = work(chunks[i])
                    got.update(inbox.frames(timeout=0))
                elif tasks >= 0:
                    os.close(tasks)
                    tasks = -1
                else:
                    got.update(inbox.frames(timeout=None))
                while next_i in got:
                    yield got.pop(next_i)
                    next_i += 1
        done = True  # every pipe closed: the children are exiting
        for i in range(next_i, len(chunks)):
            yield got.pop(i) if i in got else work(chunks[i])
    finally:
        if tasks >= 0:
            os.close(tasks)
        for read, pid in children.items():
            _reap(read, pid, stop=not done)


class _Inbox:
    """The children's pipes: each frame as it is complete, until every pipe is closed."""

    def __init__(self, children: dict[int, int]) -> None:
        self._buffers = {read: bytearray() for read in children}
        self._sel = selectors.DefaultSelector()
        for read in children:
            self._sel.register(read, selectors.EVENT_READ)

    def __bool__(self) -> bool:
        """Whether a pipe is still open."""
        return bool(self._buffers)

    def frames(self, timeout: float | None) -> list[tuple[int, list[Any]]]:
        """The frames completed by what the pipes hold now (``timeout``: how long to wait
        for something to arrive; None: until it does)."""
        out: list[tuple[int, list[Any]]] = []
        if not self._buffers:
            return out
        for key, _ in self._sel.select(timeout):
            read = int(key.fd)
            chunk = os.read(read, 1 << 16)  # a pipe holds 64 KiB
            buf = self._buffers[read]
            if not chunk:
                self._sel.unregister(read)
                del self._buffers[read]  # a cut-off frame is dropped: its chunk is redone
                continue
            buf += chunk
            while len(buf) >= _HEADER.size:
                i, size = _HEADER.unpack_from(buf)
                end = _HEADER.size + size
                if len(buf) < end:
                    break
                out.append((i, marshal.loads(buf[_HEADER.size : end])))
                del buf[:end]
        return out

    def __enter__(self) -> _Inbox:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._sel.close()


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
