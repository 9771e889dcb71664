"""Reading a response body within bounds: its size (decompressed) and the length of each line.

httpx inflates gzip without bounding what one network read may become (a 64 KiB read of a
gzip bomb is ~64 MB), and its ``iter_lines`` holds a whole line however long it grows: one
600 MB SSE line cost 2.1 GB. Here the raw bytes are read and inflated in pieces of at most
64 KiB, every byte (raw and decoded) is counted against one cap, and lines are cut with a
cap on their length, so memory stays bounded by the caps whatever the server sends.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Iterable, Iterator

import httpx

from deepseek_review.chat import deadline

_PIECE = 64 * 1024
_GZIP_MAGIC = b"\x1f\x8b"
_EOL = re.compile(rb"\r\n|\r|\n")


class BodyError(Exception):
    """The body cannot be read as sent."""


class TooBig(BodyError):
    """Over a size cap: asking again would most likely get the same answer."""


class _Inflater:
    """gzip (several members too) or zlib-wrapped deflate, inflated ``_PIECE`` at a time."""

    def __init__(self) -> None:
        self._z = zlib.decompressobj(zlib.MAX_WBITS | 32)  # gzip or zlib header
        self._ended = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        while data and not self._ended:
            try:
                out = self._z.decompress(data, _PIECE)
            except zlib.error as exc:
                raise BodyError(f"the compressed body is corrupt ({exc})") from None
            if out:
                yield out
            if not self._z.eof:
                data = self._z.unconsumed_tail
            elif self._z.unused_data.startswith(_GZIP_MAGIC):
                data = self._z.unused_data
                self._z = zlib.decompressobj(zlib.MAX_WBITS | 32)
            else:  # what follows the compressed data is ignored, as httpx does
                self._ended = True

    def flush(self) -> bytes:
        return b"" if self._ended else self._z.flush()


def _inflater(resp: httpx.Response) -> _Inflater | None:
    codings = [
        c.strip().lower()
        for c in resp.headers.get("content-encoding", "").split(",")
        if c.strip().lower() not in ("", "identity")
    ]
    if not codings:
        return None
    if codings in (["gzip"], ["x-gzip"], ["deflate"]):
        return _Inflater()
    raise BodyError(f"unsupported Content-Encoding {', '.join(codings)!r}")


def iter_body(resp: httpx.Response, max_bytes: int) -> Iterator[bytes]:
    """The decoded body, in pieces of at most 64 KiB; :class:`TooBig` past ``max_bytes``
    read or decoded (checked before a piece is kept, never after)."""
    inflater = _inflater(resp)
    raw = decoded = 0
    what = "response body" if inflater is None else "response body (decompressed)"
    for chunk in resp.iter_raw():
        deadline.check()
        raw += len(chunk)
        if raw > max_bytes:
            raise TooBig(f"response body over {max_bytes} bytes")
        for piece in inflater.feed(chunk) if inflater else (chunk,):
            decoded += len(piece)
            if decoded > max_bytes:
                raise TooBig(f"{what} over {max_bytes} bytes")
            yield piece
    # The deadline shuts the connection down, which may read as the body's end.
    deadline.check()
    if inflater is not None:
        tail = inflater.flush()
        if decoded + len(tail) > max_bytes:
            raise TooBig(f"{what} over {max_bytes} bytes")
        if tail:
            yield tail


def read_body(resp: httpx.Response, max_bytes: int) -> bytes:
    """The whole decoded body (at most ``max_bytes``)."""
    return b"".join(iter_body(resp, max_bytes))


def split_lines(pieces: Iterable[bytes], max_line: int) -> Iterator[bytes]:
    """The lines of ``pieces`` (ended by CRLF, LF or CR, as SSE allows), without their ends;
    :class:`TooBig` as soon as one is longer than ``max_line`` bytes."""
    buf = bytearray()
    scan = 0  # where to look for the next line end: a long line is searched once, not per piece
    for piece in pieces:
        buf += piece
        start = 0
        while (m := _EOL.search(buf, scan)) and not (m.group() == b"\r" and m.end() == len(buf)):
            if m.start() - start > max_line:
                raise TooBig(f"a stream line over {max_line} bytes")
            yield bytes(buf[start : m.start()])
            start = scan = m.end()
        del buf[:start]
        # What is left is one unfinished line, perhaps ending with the CR of a split CRLF.
        pending_cr = buf.endswith(b"\r")
        if len(buf) - pending_cr > max_line:
            raise TooBig(f"a stream line over {max_line} bytes")
        scan = len(buf) - pending_cr
    if buf.endswith(b"\r"):
        del buf[-1:]
    if buf:
        yield bytes(buf)
