"""Rebuilding the exact request bytes from a request record and the repository.

:func:`rebuild_body` is the reference: it resolves every reference, joins the texts and
serialises the body canonically, or says which referenced files changed or are missing.
:class:`Rebuilder` serves many records in one run (``verify``): its :meth:`Rebuilder.check`
first tries a fast path that never re-serialises file texts, and only a hash equal to the
one wanted counts from it; anything else is decided, and explained, by the reference.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..errors import InputError
from .canonical import CANONICAL, canonical_json, escaped, sha256_tag
from .parts import RecordedMessage, Ref, parse_messages

#: Reads a repo-relative path (never outside the root); None when it cannot be read.
Reader = Callable[[str], bytes | None]


@dataclass
class Rebuild:
    """The outcome of rebuilding a body from its record."""

    body_bytes: bytes | None
    changed: list[str] = field(default_factory=list)
    """Referenced files whose bytes no longer match the record."""
    missing: list[str] = field(default_factory=list)
    """Referenced files that are gone (or unreadable, or outside the root)."""
    contents: list[str] = field(default_factory=list)
    """Each message's text, when every reference resolved."""
    texts: dict[str, str] = field(default_factory=dict)
    """The text of every referenced file that resolved, by path."""

    @property
    def complete(self) -> bool:
        return self.body_bytes is not None


def resolve(
    messages: Sequence[RecordedMessage], read: Reader, *, unchecked: Collection[str] = ()
) -> Rebuild:
    """Every message's text from its parts, each referenced file read once and every
    reference's hash checked (except for the paths in ``unchecked``); no body bytes yet."""
    result = Rebuild(body_bytes=None)
    data: dict[str, bytes | None] = {}
    for m in messages:
        pieces = []
        for p in m.parts:
            if isinstance(p, str):
                pieces.append(p)
                continue
            if p.path not in data:
                data[p.path] = read(p.path)
            pieces.append(_text(p, data[p.path], result, unchecked))
        result.contents.append("".join(pieces))
    return result


def _text(ref: Ref, data: bytes | None, result: Rebuild, unchecked: Collection[str]) -> str:
    """The text of one reference, or "" with its path listed as missing or changed."""
    if data is None:
        problem = result.missing
    elif ref.path not in unchecked and sha256_tag(data) != ref.sha256:
        problem = result.changed
    else:
        try:
            text = result.texts[ref.path] = data.decode("utf-8")
            return text
        except UnicodeDecodeError:  # cannot happen when the hash matches what the tool wrote
            problem = result.changed
    if ref.path not in problem:
        problem.append(ref.path)
    return ""


def rebuild_body(
    record_body: Mapping[str, Any], read: Reader, *, unchecked: Collection[str] = ()
) -> Rebuild:
    """Rebuild the exact body bytes, or say which referenced files changed or are missing.

    :class:`InputError` when the body is malformed. ``unchecked``: paths whose recorded hash
    is not compared (to ask whether the files as they are would give the recorded request).
    """
    messages = parse_messages(record_body)
    result = resolve(messages, read, unchecked=unchecked)
    if result.changed or result.missing:
        result.contents = []
        return result
    wire = [
        {**m.extra, "role": m.role, "content": text}
        for m, text in zip(messages, result.contents, strict=True)
    ]
    result.body_bytes = canonical_json({**record_body, "messages": wire})
    return result


def repo_reader(root: Path) -> Reader:
    """A :data:`Reader` that refuses anything outside ``root`` (a record may be hostile)."""
    from ..repo import resolve_inside

    def read(rel: str) -> bytes | None:
        try:
            path, _ = resolve_inside(root, rel)
            return path.read_bytes() if path.is_file() else None
        except (InputError, OSError):
            return None

    return read


# --------------------------------------------------------------------------- the fast path

_PLACEHOLDERS = tuple(f"\x00deepseek-review-content-{i}\x00" for i in range(64))
_MARKERS = tuple(json.dumps(p).encode("ascii") for p in _PLACEHOLDERS)
_RARE_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def escaped_utf8(data: bytes) -> bytes | None:
    """:func:`.canonical.escaped` of UTF-8 ``data`` (None if not UTF-8), on the bytes.

    With ``ensure_ascii=False`` JSON escapes only ``\\``, ``"`` and the control characters,
    all ASCII, whose bytes never occur inside a multi-byte UTF-8 sequence: so the common
    ones are replaced in place; text with rarer control characters takes the slow road.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if _RARE_CONTROL.search(data):
        return escaped(text)
    return (
        data.replace(b"\\", b"\\\\")
        .replace(b'"', b'\\"')
        .replace(b"\n", b"\\n")
        .replace(b"\r", b"\\r")
        .replace(b"\t", b"\\t")
    )


class Rebuilder:
    """Rebuilds the requests of many records (one ``verify`` run) from one repository.

    ``read`` reads a referenced file (None: cannot); ``digest`` gives its hash, when the
    caller keeps hashes already (default: the hash of what ``read`` returns). Each file's
    escaped text and each literal's are made once per run.
    """

    def __init__(self, read: Reader, digest: Callable[[str], str | None] | None = None) -> None:
        self.read = read
        self._digest = digest or self._hash
        self._escaped: dict[str, bytes | None] = {}
        self._escaped_text: dict[str, bytes] = {}

    def _hash(self, path: str) -> str | None:
        data = self.read(path)
        return None if data is None else sha256_tag(data)

    def check(
        self,
        body: Mapping[str, Any],
        want: str,
        messages: Sequence[RecordedMessage] | None = None,
    ) -> Rebuild | None:
        """None when the body rebuilds to bytes hashing to ``want``; else the reference's
        :class:`Rebuild` (complete, hashing to something else, or naming the files).
        ``messages``: the body's, parsed already (:func:`.parts.parse_messages`)."""
        if self.digest(body, messages) == want:
            return None
        rebuilt = rebuild_body(body, self.read)
        if rebuilt.body_bytes is not None and sha256_tag(rebuilt.body_bytes) == want:
            return None
        return rebuilt

    def digest(
        self, body: Mapping[str, Any], messages: Sequence[RecordedMessage] | None = None
    ) -> str | None:
        """The hash of the rebuilt request when every reference is intact, else None.

        The same bytes as :func:`rebuild_body` gives, without re-serialising file texts for
        every record: JSON string escaping is per character, so a message's content is the
        concatenation of its parts' escaped forms, each escaped once per run. The body is
        serialised with a placeholder per content, and the hash is fed the pieces. Only a
        match counts (:meth:`check`): this path can make a run faster, never more lenient.
        """
        if messages is None:
            try:
                messages = parse_messages(body)
            except InputError:
                return None
        if len(messages) > len(_PLACEHOLDERS):
            return None
        skeleton: list[Any] = []
        contents: list[list[bytes]] = []
        for i, (m, raw) in enumerate(zip(messages, body["messages"], strict=True)):
            pieces = []
            for p in m.parts:
                piece = self._escaped_literal(p) if isinstance(p, str) else self._escaped_ref(p)
                if piece is None:
                    return None
                pieces.append(piece)
            skeleton.append({**raw, "content": _PLACEHOLDERS[i]})
            contents.append(pieces)
        try:
            frame = CANONICAL.encode({**body, "messages": skeleton}).encode("utf-8")
        except (TypeError, ValueError):
            return None
        chunks: list[bytes] = []
        pos = 0
        for i, pieces in enumerate(contents):
            marker = _MARKERS[i]
            at = frame.find(marker, pos)
            if at < 0 or frame.count(marker) != 1:
                return None  # a placeholder look-alike in the record: the reference judges
            chunks.append(frame[pos : at + 1])  # up to and with the opening quote
            chunks += pieces
            pos = at + len(marker) - 1  # from the closing quote on
        chunks.append(frame[pos:])
        return "sha256:" + hashlib.sha256(b"".join(chunks)).hexdigest()

    def _escaped_literal(self, text: str) -> bytes:
        got = self._escaped_text.get(text)
        if got is None:
            got = self._escaped_text[text] = escaped(text)
        return got

    def _escaped_ref(self, ref: Ref) -> bytes | None:
        """A reference's file text, JSON-escaped, if it still hashes as the record says."""
        if self._digest(ref.path) != ref.sha256:
            return None
        if ref.path not in self._escaped:
            data = self.read(ref.path)
            self._escaped[ref.path] = None if data is None else escaped_utf8(data)
        return self._escaped[ref.path]
