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
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deepseek_review.errors import InputError
from deepseek_review.records.canonical import CANONICAL, canonical_json, escaped, sha256_tag
from deepseek_review.records.lines import Lines, line_slice, valid_lines
from deepseek_review.records.parts import REF_KEYS, RecordedMessage, Ref, parse_messages

#: Reads a repo-relative path (never outside the root); None when it cannot be read.
Reader = Callable[[str], bytes | None]
#: The files a request references: path → (sha256, bytes, lines) of the text sent.
FileHashes = dict[str, tuple[str, int, Lines | None]]


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
    """The text of one reference (``data``: its file's bytes, of which it takes its lines),
    or "" with its path listed as missing or changed (a range the file no longer has)."""
    sent = None if data is None else ref.text_of(data)
    if data is None:
        problem = result.missing
    elif sent is None or (ref.path not in unchecked and sha256_tag(sent) != ref.sha256):
        problem = result.changed
    else:
        try:
            text = result.texts[ref.path] = sent.decode("utf-8")
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
    from deepseek_review.git.runner import read_regular_file, resolve_inside

    def read(rel: str) -> bytes | None:
        try:
            path, _ = resolve_inside(root, rel)
            return read_regular_file(path) if path.is_file() else None
        except (InputError, OSError):
            return None

    return read


# --------------------------------------------------------------------------- the fast path

_PLACEHOLDERS = tuple(f"\x00deepseek-review-content-{i}\x00" for i in range(64))
_MARKERS = tuple(json.dumps(p).encode("ascii") for p in _PLACEHOLDERS)
#: Every byte but the control characters JSON escapes as \uXXXX, \b or \f (the others it
#: escapes as \n, \r, \t): deleted, they leave only those.
_NOT_RARE_CONTROL = bytes(b for b in range(256) if b >= 0x20 or b in b"\n\r\t")
_KINDS = frozenset(REF_KEYS)


def escaped_utf8(data: bytes) -> bytes | None:
    """:func:`.canonical.escaped` of UTF-8 ``data`` (None if not UTF-8), on the bytes.

    With ``ensure_ascii=False`` JSON escapes only ``\\``, ``"`` and the control characters,
    all ASCII, whose bytes never occur inside a multi-byte UTF-8 sequence: so the common
    ones are replaced in place; text with rarer control characters is escaped as a string.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if data.translate(None, _NOT_RARE_CONTROL):  # a rare control character: escape in full
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
        self._digests: dict[str, str | None] = {}
        """Each referenced file's hash as ``digest`` gave it (asked once per run: the same
        files are referenced by many records)."""
        self._escaped: dict[str, bytes | None] = {}
        self._frames: dict[str, tuple[bytes, bytes] | None] = {}
        self._escaped_text: dict[str, bytes] = {}
        self._ranges: dict[tuple[str, int, int], tuple[str | None, bytes | None]] = {}
        """Each range's hash and escaped text, by (path, first, last)."""

    def _hash(self, path: str) -> str | None:
        data = self.read(path)
        return None if data is None else sha256_tag(data)

    def check(
        self, body: Mapping[str, Any], want: str, files: FileHashes | None = None
    ) -> Rebuild | None:
        """None when the body rebuilds to bytes hashing to ``want``; else the reference's
        :class:`Rebuild` (complete, hashing to something else, or naming the files).
        :class:`InputError` when the body is malformed (:func:`.parts.parse_messages`).
        ``files``: see :meth:`digest`."""
        if self.digest(body, files) == want:
            return None
        rebuilt = rebuild_body(body, self.read)
        if rebuilt.body_bytes is not None and sha256_tag(rebuilt.body_bytes) == want:
            return None
        return rebuilt

    def digest(self, body: Mapping[str, Any], files: FileHashes | None = None) -> str | None:
        """The hash of the rebuilt request when every reference is intact, else None.

        The same bytes as :func:`rebuild_body` gives, without re-serialising file texts for
        every record: JSON string escaping is per character, so a message's content is the
        concatenation of its parts' escaped forms, each escaped once per run. The rest of
        the body is serialised with a placeholder (where the messages go, when each is only
        a role and a content, the tool's form; else one per content), and the hash is fed
        the pieces. Only a match counts (:meth:`check`): this path can spare work, never make
        a check more lenient.

        It reads the body itself, taking only the forms :func:`.parts.parse_messages` takes
        (anything else: None, and the reference decides), so that the records of a run are
        not all parsed into objects first. When it gives a hash, ``files`` (if given) is
        filled with each ``$file`` reference's path → (sha256, bytes), as
        :func:`.parts.file_refs` would list them.
        """
        seen: FileHashes = {}
        messages = body.get("messages")
        if not isinstance(messages, list) or not 0 < len(messages) <= len(_PLACEHOLDERS):
            return None
        contents: list[list[bytes]] = []
        plain = True  # every message only a role and a content: written here, not encoded
        for m in messages:
            if not isinstance(m, dict) or not isinstance(m.get("role"), str):
                return None
            pieces = self._pieces(m.get("content"), seen)
            if pieces is None:
                return None
            contents.append(pieces)
            plain = plain and len(m) == 2 and "content" in m
        chunks = (
            self._plain_messages(body, messages, contents)
            if plain
            else self._framed_messages(body, messages, contents)
        )
        if chunks is None:
            return None
        if files is not None:
            files.update(seen)
        return "sha256:" + hashlib.sha256(b"".join(chunks)).hexdigest()

    def _frame(self, body: Mapping[str, Any], messages: Any) -> bytes | None:
        """The body encoded with ``messages`` in place of its messages (None: not JSON)."""
        try:
            return CANONICAL.encode({**body, "messages": messages}).encode("utf-8")
        except (TypeError, ValueError):
            return None

    def _plain_messages(
        self, body: Mapping[str, Any], messages: list[Any], contents: list[list[bytes]]
    ) -> list[bytes] | None:
        """The body's bytes in pieces, its messages (each ``{"content", "role"}``: the keys
        in canonical order) written here around their escaped contents; the rest encoded
        with one placeholder where the messages go."""
        around = self._around_messages(body)
        if around is None:
            return None
        chunks = [around[0], b"["]
        for i, (m, pieces) in enumerate(zip(messages, contents, strict=True)):
            chunks.append(b'{"content":"' if i == 0 else b',{"content":"')
            chunks += pieces
            chunks += (b'","role":"', self._escaped_literal(m["role"]), b'"}')
        chunks += (b"]", around[1])
        return chunks

    def _around_messages(self, body: Mapping[str, Any]) -> tuple[bytes, bytes] | None:
        """The body's bytes before and after its messages (None: the reference judges),
        encoded once per run for each rest of the body: the records of a run share a few.
        Keyed by the rest's ``repr``, which tells JSON's values apart as exactly as the
        encoding does (``0``, ``0.0`` and ``false`` are three keys; two orders of the same
        keys only two entries)."""
        key = repr({k: v for k, v in body.items() if k != "messages"})
        try:
            return self._frames[key]
        except KeyError:
            got = self._frames[key] = self._split_frame(body)
            return got

    def _split_frame(self, body: Mapping[str, Any]) -> tuple[bytes, bytes] | None:
        frame = self._frame(body, _PLACEHOLDERS[0])
        marker = _MARKERS[0]
        at = -1 if frame is None else frame.find(marker)
        if frame is None or at < 0 or frame.count(marker) != 1:
            return None  # a placeholder look-alike in the record: the reference judges
        return frame[:at], frame[at + len(marker) :]

    def _framed_messages(
        self, body: Mapping[str, Any], messages: list[Any], contents: list[list[bytes]]
    ) -> list[bytes] | None:
        """The body's bytes in pieces, encoded with a placeholder per message content (for
        messages with other fields than a role and a content)."""
        skeleton = [{**m, "content": _PLACEHOLDERS[i]} for i, m in enumerate(messages)]
        frame = self._frame(body, skeleton)
        if frame is None:
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
        return chunks

    def _pieces(self, content: Any, files: FileHashes) -> list[bytes] | None:
        """A message content's escaped pieces; None unless every reference is intact."""
        if isinstance(content, str):
            return [self._escaped_literal(content)]
        parts = content.get("$parts") if isinstance(content, dict) and len(content) == 1 else None
        if not isinstance(parts, list):
            return None
        pieces = []
        for p in parts:
            piece = self._escaped_literal(p) if isinstance(p, str) else self._escaped_ref(p, files)
            if piece is None:
                return None
            pieces.append(piece)
        return pieces

    def _escaped_literal(self, text: str) -> bytes:
        got = self._escaped_text.get(text)
        if got is None:
            got = self._escaped_text[text] = escaped(text)
        return got

    def _escaped_ref(self, p: Any, files: FileHashes) -> bytes | None:
        """A reference's file text, JSON-escaped, if it is a well-formed ``$file`` or
        ``$answer`` reference and the file still hashes as the record says."""
        if not isinstance(p, dict) or len(p) != 1:
            return None
        ((kind, ref),) = p.items()
        if kind not in _KINDS or not isinstance(ref, dict) or type(ref.get("bytes")) is not int:
            return None
        path = ref.get("path")
        digest = ref.get("sha256")
        if not isinstance(path, str) or not isinstance(digest, str):
            return None
        if "lines" in ref:
            return self._escaped_lines(kind, path, digest, ref, files)
        try:
            known = self._digests[path]
        except KeyError:
            known = self._digests[path] = self._digest(path)
        if known != digest:
            return None
        if kind == "$file":
            files.setdefault(path, (digest, ref["bytes"], None))
        if path not in self._escaped:
            data = self.read(path)
            self._escaped[path] = None if data is None else escaped_utf8(data)
        return self._escaped[path]

    def _escaped_lines(
        self, kind: str, path: str, digest: str, ref: dict[str, Any], files: FileHashes
    ) -> bytes | None:
        """A ``$file`` reference to a range of lines: the slice's text, JSON-escaped, if the
        file still has those lines and they hash as the record says (each range cut and
        hashed once per run)."""
        lines = valid_lines(ref["lines"])
        if kind != "$file" or lines is None:
            return None
        key = (path, *lines)
        try:
            known, text = self._ranges[key]
        except KeyError:
            data = self.read(path)
            cut = None if data is None else line_slice(data, *lines)
            known = None if cut is None else sha256_tag(cut)
            text = None if cut is None else escaped_utf8(cut)
            self._ranges[key] = known, text
        if known != digest:
            return None
        files.setdefault(path, (digest, ref["bytes"], lines))
        return text
