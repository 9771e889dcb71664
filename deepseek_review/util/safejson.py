"""JSON and files from untrusted places (server answers, receipts, request records, manifests),
bounded.

:func:`read_file` is the one reader of a review file (receipt, request record, answer,
findings sidecar, statement, signature, manifest, config file): its size is looked at on the
open file before a byte is read, and no more than the limit is ever read, so a sparse 1 GiB
receipt is refused without paging a gigabyte in.

``json.loads`` recurses once per nested array or object, so 100,000 ``[`` raise
``RecursionError`` (an internal error, not a refusal); and a number of thousands of digits
raises a ``ValueError`` that names a Python setting. :func:`loads` refuses such data *before*
parsing, with a :class:`JSONRefused` that names what was read, so each caller reports it the
way it reports bad JSON: one line, its own error kind.

The depth check: a document holding no more ``[`` and ``{`` bytes than the depth limit cannot
nest deeper (one pass that keeps only those bytes, enough for a receipt); only a document with
more of them is scanned, strings first removed by one regex pass.
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from typing import Any

#: Deeper than any JSON this tool reads or writes (a receipt nests 3 levels, a request 5).
MAX_DEPTH = 128
#: Files (receipts, request records, manifest lines): far over any real one, small enough
#: that parsing stays well under a second.
MAX_FILE_BYTES = 64 * 1024 * 1024

_STRING = re.compile(rb'"(?:[^"\\]++|\\.)*+"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_NOT_OPENING = bytes(b for b in range(256) if b not in b"[{")
_OPEN = frozenset(b"[{")


_READ_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)


def too_big(size: int, max_bytes: int, path: str | os.PathLike[str]) -> OSError:
    """The :class:`OSError` of a file over ``max_bytes``: callers word it as any unreadable
    file (``cannot read (...)``), its ``strerror`` saying why."""
    why = f"{size} bytes or more, over the {max_bytes} a review file may hold"
    return OSError(errno.EFBIG, why, os.fspath(path))


def read_fd(fd: int, size: int, path: str | os.PathLike[str], max_bytes: int) -> bytes:
    """The bytes of the open file ``fd`` whose ``fstat`` size is ``size``: refused before
    reading when over ``max_bytes``, and never read past ``max_bytes + 1`` (a file that grows,
    a FIFO, a ``/proc`` file reporting size 0)."""
    if size > max_bytes:
        raise too_big(size, max_bytes, path)
    data = os.read(fd, size + 1)
    if len(data) <= size:
        return data
    chunks, got = [data], len(data)
    while got <= max_bytes and (chunk := os.read(fd, min(1 << 20, max_bytes + 1 - got))):
        chunks.append(chunk)
        got += len(chunk)
    if got > max_bytes:
        raise too_big(got, max_bytes, path)
    return b"".join(chunks)


def read_file(
    path: str | os.PathLike[str], *, max_bytes: int = MAX_FILE_BYTES, nofollow: bool = False
) -> bytes:
    """The bytes of a regular file no bigger than ``max_bytes``; :class:`OSError` for anything
    else ("not a regular file", too big: :func:`too_big`).

    ``O_NONBLOCK`` keeps a FIFO planted under a receipt's name from hanging the open; it is
    refused right after by its type. ``nofollow``: a symlink as the last part is ``ELOOP``.
    """
    fd = os.open(path, _READ_FLAGS | (_NOFOLLOW if nofollow else 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", os.fspath(path))
        return read_fd(fd, st.st_size, path, max_bytes)
    finally:
        os.close(fd)


def read_stream(path: str | os.PathLike[str], *, max_bytes: int) -> bytes:
    """The bytes of a file the operator may give as a stream too (a manifest on
    ``/dev/stdin``), blocking as such a read must: never more than ``max_bytes``."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))
    try:
        st = os.fstat(fd)
        size = st.st_size if stat.S_ISREG(st.st_mode) else 0
        return read_fd(fd, size, path, max_bytes)
    finally:
        os.close(fd)


class JSONRefused(ValueError):
    """Refused before parsing (too big, nested too deeply, a number too long); a
    ``ValueError`` so that code which handles bad JSON handles this too."""


def nesting_over(data: bytes, limit: int) -> bool:
    """Whether arrays and objects in ``data`` nest more than ``limit`` deep (strings skipped)."""
    if len(data.translate(None, _NOT_OPENING)) <= limit:  # too few openings to nest deeper
        return False
    brackets = _STRING.sub(b"", data).translate(None, _NOT_BRACKETS)
    depth = 0
    for byte in brackets:
        if byte in _OPEN:
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def loads(
    data: bytes | str,
    *,
    what: str,
    max_bytes: int = MAX_FILE_BYTES,
    max_depth: int = MAX_DEPTH,
    decoder: json.JSONDecoder | None = None,
) -> Any:
    """The JSON value of ``data`` (bytes must be UTF-8), or :class:`JSONRefused` naming ``what``.

    Malformed JSON raises what the decoder raises (``json.JSONDecodeError``,
    ``UnicodeDecodeError``), so callers keep their wording for it.
    """
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    if len(raw) > max_bytes:
        raise JSONRefused(f"{what} is too big ({len(raw)} bytes; the limit is {max_bytes})")
    if nesting_over(raw, max_depth):
        raise JSONRefused(f"{what} is nested too deeply (over {max_depth} levels)")
    text = data if isinstance(data, str) else raw.decode("utf-8")
    try:
        return (decoder or _DECODER).decode(text)
    except ValueError as exc:
        if "integer string conversion" in str(exc):
            raise JSONRefused(f"{what} holds a number of thousands of digits") from None
        raise


_DECODER = json.JSONDecoder()
