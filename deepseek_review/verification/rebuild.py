"""Rebuilding a request's hash from its record without re-serialising file texts."""

from __future__ import annotations

import json
import re
from typing import Any

from ..records.canonical import escaped
from .files import Problem

_PLACEHOLDERS = tuple(f"\x00deepseek-review-content-{i}\x00" for i in range(64))
_MARKERS = tuple(json.dumps(p).encode("ascii") for p in _PLACEHOLDERS)


_escape = escaped


_RARE_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _escape_utf8(data: bytes) -> bytes | None:
    """:func:`_escape` of UTF-8 ``data`` (None if not UTF-8), working on the bytes.

    With ``ensure_ascii=False`` JSON escapes only ``\\``, ``"`` and the control characters,
    all ASCII, whose bytes never occur inside a multi-byte UTF-8 sequence: so the common
    ones are replaced in place; text with rarer control characters takes the slow road.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if _RARE_CONTROL.search(data):
        return _escape(text)
    return (
        data.replace(b"\\", b"\\\\")
        .replace(b'"', b'\\"')
        .replace(b"\n", b"\\n")
        .replace(b"\r", b"\\r")
        .replace(b"\t", b"\\t")
    )


def _as_bytes(data: bytes | Problem) -> bytes | None:
    return data if isinstance(data, bytes) else None


def _references(body: dict[str, Any]) -> dict[str, str]:
    """Every referenced path in a record body and its kind (``$file`` or ``$answer``)."""
    out: dict[str, str] = {}
    messages = body.get("messages")
    for m in messages if isinstance(messages, list) else []:
        content = m.get("content") if isinstance(m, dict) else None
        parts = content.get("$parts") if isinstance(content, dict) else None
        for p in parts if isinstance(parts, list) else []:
            if isinstance(p, dict) and len(p) == 1:
                ((kind, ref),) = p.items()
                if isinstance(ref, dict) and isinstance(ref.get("path"), str):
                    out.setdefault(ref["path"], kind)
    return out


def _file_refs(body: dict[str, Any]) -> dict[str, tuple[Any, Any]]:
    """Every ``$file`` reference in a record body: path -> (sha256, bytes)."""
    out: dict[str, tuple[Any, Any]] = {}
    messages = body.get("messages")
    for m in messages if isinstance(messages, list) else []:
        content = m.get("content") if isinstance(m, dict) else None
        parts = content.get("$parts") if isinstance(content, dict) else None
        for p in parts if isinstance(parts, list) else []:
            ref = p.get("$file") if isinstance(p, dict) else None
            if isinstance(ref, dict) and isinstance(ref.get("path"), str):
                out.setdefault(ref["path"], (ref.get("sha256"), ref.get("bytes")))
    return out


def _rehash(body: dict[str, Any], current: dict[str, str]) -> dict[str, Any]:
    """``body`` with the ``$file`` references to ``current``'s paths given those hashes."""
    messages = []
    for m in body["messages"]:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, dict) and isinstance(content.get("$parts"), list):
            parts = []
            for p in content["$parts"]:
                ref = p.get("$file") if isinstance(p, dict) else None
                if isinstance(ref, dict) and ref.get("path") in current:
                    p = {"$file": {**ref, "sha256": current[ref["path"]]}}
                parts.append(p)
            m = {**m, "content": {**content, "$parts": parts}}
        messages.append(m)
    return {**body, "messages": messages}
