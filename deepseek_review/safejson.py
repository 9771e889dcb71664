"""JSON from untrusted places (server answers, receipts, request records, manifests), bounded.

``json.loads`` recurses once per nested array or object, so 100,000 ``[`` raise
``RecursionError`` (an internal error, not a refusal); and a number of thousands of digits
raises a ``ValueError`` that names a Python setting. :func:`loads` refuses such data *before*
parsing, with a :class:`JSONRefused` that names what was read, so each caller reports it the
way it reports bad JSON: one line, its own error kind.

The depth check is cheap where it matters: a document holding no more ``[`` and ``{`` bytes
than the depth limit cannot nest deeper (one pass that keeps only those bytes, all that a
receipt costs); only a document with more of them is scanned, strings first removed by one
regex pass.
"""

from __future__ import annotations

import json
import re
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


class JSONRefused(ValueError):
    """Refused before parsing (too big, nested too deeply, a number too long); a
    ``ValueError`` so that code which handles bad JSON handles this too."""


def nesting_over(data: bytes, limit: int) -> bool:
    """Whether arrays and objects in ``data`` nest more than ``limit`` deep (strings skipped)."""
    if len(data.translate(None, _NOT_OPENING)) <= limit:  # quicker than two counts
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
