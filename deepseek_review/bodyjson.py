"""The request body written straight into its canonical JSON bytes, large texts in slices.

``canonical_json`` of a body holding a 5 MB prompt holds the prompt, its escaped copy, the
encoded chunks and their join at once. Here every string is escaped and encoded a slice at a
time into one growing buffer, and a message content given as parts (:class:`Streamed`) is
written part by part, each context file's text taken out of its mapping as it is written: the
caller's only copy of the texts is released while the body grows, so the body is about the only
large thing alive when it is done. The bytes are exactly those of
:func:`.records.canonical.canonical_json`: the same escaping for strings (escaping is per code
point, so slices escape to the slices of the escaped whole), the same encoder for every other
value, keys sorted, separators ``,`` and ``:``.
"""

from __future__ import annotations

import io
from collections.abc import Iterable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring  # what CANONICAL (ensure_ascii=False) escapes with
from typing import Any, BinaryIO, Protocol

from .records.canonical import CANONICAL

#: Characters escaped and encoded at a time: copies this small are all a string costs.
SLICE = 1 << 16


class _Ref(Protocol):
    """A reference part (a context file, an earlier answer): its text is looked up by path."""

    @property
    def path(self) -> str: ...


@dataclass(frozen=True)
class Streamed:
    """A string value given as its parts: literal strings and references whose text is in
    ``texts`` by path. Each referenced text is removed from ``texts`` once written."""

    parts: Sequence[str | _Ref]
    texts: MutableMapping[str, str]

    def pieces(self) -> Iterable[str]:
        for p in self.parts:
            yield p if isinstance(p, str) else self.texts.pop(p.path)


def canonical_bytes(obj: Any) -> bytes:
    """The canonical JSON bytes of ``obj``, which may hold :class:`Streamed` values."""
    out = io.BytesIO()
    write_canonical(obj, out)
    return out.getvalue()  # the buffer itself, not a copy


def write_canonical(obj: Any, out: BinaryIO) -> None:
    """Write ``obj`` as canonical JSON; only containers holding a string big enough to slice
    or a :class:`Streamed` value are walked here, everything else goes to the encoder."""
    if isinstance(obj, Streamed):
        _write_streamed(obj, out)
    elif isinstance(obj, str):
        _write_string((obj,), out)
    elif isinstance(obj, dict) and _walk(obj):
        out.write(b"{")
        for i, (key, value) in enumerate(sorted(obj.items())):
            if not isinstance(key, str):
                raise TypeError(f"keys must be str here, not {type(key).__name__}")
            out.write(b"," if i else b"")
            _write_string((key,), out)
            out.write(b":")
            write_canonical(value, out)
        out.write(b"}")
    elif isinstance(obj, list | tuple) and _walk(obj):
        out.write(b"[")
        for i, item in enumerate(obj):
            out.write(b"," if i else b"")
            write_canonical(item, out)
        out.write(b"]")
    else:
        out.write(CANONICAL.encode(obj).encode("utf-8"))


def _walk(obj: dict[Any, Any] | list[Any] | tuple[Any, ...]) -> bool:
    """Whether ``obj`` holds a value worth writing piece by piece."""
    values = obj.values() if isinstance(obj, dict) else obj
    for v in values:
        if isinstance(v, Streamed) or (isinstance(v, str) and len(v) > SLICE):
            return True
        if isinstance(v, dict | list | tuple) and _walk(v):
            return True
    return False


def _write_string(pieces: Iterable[str], out: BinaryIO) -> None:
    """One JSON string made of ``pieces``: small ones escaped together, large ones a slice at
    a time (a lone surrogate fails to encode, as in ``canonical_json``)."""
    out.write(b'"')
    _write_pieces(pieces, out)
    out.write(b'"')


def _write_pieces(pieces: Iterable[str], out: BinaryIO) -> None:
    """The inside of :func:`_write_string`."""
    small: list[str] = []
    held = 0
    for piece in pieces:
        if len(piece) < SLICE:
            small.append(piece)
            held += len(piece)
            if held < SLICE:
                continue
            piece = "".join(small)
            small.clear()
            held = 0
        elif small:
            _write_escaped("".join(small), out)
            small.clear()
            held = 0
        _write_escaped(piece, out)
    if small:
        _write_escaped("".join(small), out)


#: Parts of a :class:`Streamed` value taken at a time: a context of 20,000 small files is
#: about 40,000 parts, each of them a step of :func:`_write_string` otherwise.
BATCH = 256


def _write_streamed(value: Streamed, out: BinaryIO) -> None:
    """:func:`_write_string` of ``value.pieces()``, the same bytes: parts are taken
    :data:`BATCH` at a time, and a batch of no more than a slice's worth is escaped as one
    string (escaping is per code point); a larger one as :func:`_write_string` writes it,
    each text let go of once written (:func:`_drain`)."""
    parts, pop = value.parts, value.texts.pop
    out.write(b'"')
    for start in range(0, len(parts), BATCH):
        batch = [p if isinstance(p, str) else pop(p.path) for p in parts[start : start + BATCH]]
        if sum(map(len, batch)) <= SLICE:
            out.write(encode_basestring("".join(batch))[1:-1].encode("utf-8"))
        else:
            batch.reverse()
            _write_pieces(_drain(batch), out)
    out.write(b'"')


def _drain(reversed_batch: list[str]) -> Iterator[str]:
    """The pieces in order, each out of the list as it is handed over (a large text is
    freed once written, as when it was taken out of ``texts`` only then)."""
    while reversed_batch:
        yield reversed_batch.pop()


def _write_escaped(text: str, out: BinaryIO) -> None:
    for start in range(0, len(text), SLICE):
        out.write(encode_basestring(text[start : start + SLICE])[1:-1].encode("utf-8"))
