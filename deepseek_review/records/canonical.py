"""The one canonical JSON encoding, the hash tag, and the strict JSON readers of the records.

The request body is canonical JSON: keys sorted, separators ``,`` and ``:``, UTF-8, no ASCII
escaping, no NaN. That form is a contract: ``prompt_sha256`` is the sha256 of exactly these
bytes, which are exactly the bytes sent, and a request record must rebuild them.

:func:`canonical_json` writes them straight into one buffer: a large string is escaped and
encoded a slice at a time, and a message content given as parts (:class:`Streamed`) is written
part by part, each context file's text taken out of its mapping as it is written, so the body
is about the only large thing alive when it is done (joining and encoding in one go would hold
about twice the body). Escaping is per code point, so slices escape
to the slices of the escaped whole: the bytes are exactly ``json.dumps`` with these options.
"""

from __future__ import annotations

import hashlib
import io
import json
from collections.abc import Iterable, Iterator, MutableMapping, Sequence
from dataclasses import dataclass
from json.encoder import encode_basestring  # what CANONICAL (ensure_ascii=False) escapes with
from typing import Any, BinaryIO, Protocol

#: The canonical encoder, built once (``json.dumps`` with options builds one per call).
CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


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


def canonical_json(obj: Any) -> bytes:
    """The one serialisation whose bytes are hashed and sent (``obj`` may hold
    :class:`Streamed` values)."""
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


def escaped(text: str) -> bytes:
    """``text`` as :data:`CANONICAL` writes it inside a JSON string, without the quotes."""
    return json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8")


def sha256_tag(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def pretty_json(obj: Any) -> bytes:
    """How receipts and request records are written: indented, UTF-8, a final newline."""
    return (json.dumps(obj, indent=2, ensure_ascii=False) + "\n").encode("utf-8")


class DuplicateKey(ValueError):
    """A JSON object names a key twice (readers would disagree on which value counts)."""


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise DuplicateKey(k)
            seen.add(k)
    return d


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


#: Receipts: strict JSON, one value per key.
RECEIPT_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
#: Request records: strict JSON (a record is large; duplicate keys cannot change its hash
#: check, which rebuilds the bytes from what was parsed).
RECORD_DECODER = json.JSONDecoder(parse_constant=_no_constant)
