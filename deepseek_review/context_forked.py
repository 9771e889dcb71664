"""Reading the many files a folder or glob listed on two cores or more: forked children and
this process take chunks of them together (:func:`.forkwork.run_chunks`), with the result of
one process, entry by entry, in order.

Apart from :mod:`.context_read` (which reads one file safely) because it owns another thing:
how the reading is shared between processes, and what a child sends back.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Sequence
from typing import Any

from . import context_read
from .context_read import Opener
from .context_types import ContextFile, Skipped

#: From this many files a folder or glob listed, they are read on two cores or more
#: (:func:`read_all`). A fork costs this process a fixed price, about what reading 1,500
#: files does (the fork, and copying each page of its memory it writes while the child
#: lives), and saves it half the reading: at 10,000 files, 15% of its CPU time.
FORK_MIN_FILES = 4000
#: Files a chunk of the forked read: small enough that the processes finish together and
#: a chunk's results rarely fill the pipe, large enough that a chunk costs more than its frame.
FORK_CHUNK = 128


def _plain(
    read: ContextFile | Skipped | None,
) -> tuple[str, str, str, int] | tuple[str, str, str] | None:
    """What a child sends of a file read: a marshal-able tuple (a file's 4 fields, a skip's
    3), or None."""
    if type(read) is ContextFile:
        return tuple(read)  # type: ignore[return-value]  # its 4 fields, as a plain tuple
    if isinstance(read, Skipped):
        return read.path, read.reason, read.kind
    return None if read is None else (read.path, read.text, read.sha256, read.size)


#: What :func:`read_all` yields: the results of consecutive entries, in order.
Run = list[ContextFile | Skipped | None]


def read_all(
    opener: Opener, entries: Sequence[tuple[str, bool]], max_file_bytes: int
) -> Generator[Run, None, None]:
    """:func:`.context_read.read_entries` of ``entries``, in runs of consecutive results
    (:func:`_runs` in one process; a chunk's when forked), in forked
    children and this process together when a folder or glob listed many files
    (:func:`.forkwork.run_chunks`): the same result per entry, in the same order, and the
    same error (a chunk that fails in a child is read again here, in its turn, raising what
    one process raises). A child opens its own :class:`Opener`, with the same guarantees.
    ``read_entries`` is looked up in its module at each call, where tests replace it."""
    listed = sum(1 for _, explicit in entries if not explicit)
    if listed < FORK_MIN_FILES:
        yield from _runs(opener, entries, max_file_bytes)
        return
    from .forkwork import chunked, default_jobs, run_chunks

    jobs = default_jobs(listed, FORK_MIN_FILES)
    if jobs == 1:
        yield from _runs(opener, entries, max_file_bytes)
        return
    parent = os.getpid()
    own: list[Opener] = []

    def work(chunk: list[tuple[str, bool]]) -> list[Any]:
        if os.getpid() == parent:
            return list(context_read.read_entries(opener, chunk, max_file_bytes))
        if not own:
            own.append(Opener(opener.root))
        # Sent as marshal frames: plain tuples (a file's 4 fields, a skip's 3), or None.
        return [_plain(r) for r in context_read.read_entries(own[0], chunk, max_file_bytes)]

    parts = run_chunks(chunked(list(entries), FORK_CHUNK), jobs, work, share=True)
    new = tuple.__new__  # a file's fields into its named tuple, without its Python __new__
    try:
        for part in parts:
            yield [
                (new(ContextFile, r) if len(r) == 4 else Skipped(*r)) if type(r) is tuple else r
                for r in part
            ]
    finally:
        parts.close()  # the children are stopped when the caller leaves early


def _runs(
    opener: Opener, entries: Sequence[tuple[str, bool]], max_file_bytes: int
) -> Generator[Run, None, None]:
    """:func:`.context_read.read_entries` in one process, in runs: listed files
    :data:`FORK_CHUNK` at a time, a file named explicitly alone, and only once what came
    before it was handed over (what is refused first is what one file at a time refuses
    first: a listed file is left out, never refused)."""
    reads = context_read.read_entries(opener, entries, max_file_bytes)
    run: Run = []
    for _, explicit in entries:
        if explicit and run:
            yield run
            run = []
        run.append(next(reads))
        if explicit or len(run) >= FORK_CHUNK:
            yield run
            run = []
    if run:
        yield run
