"""The one canonical JSON encoding, the hash tag, and the strict JSON readers of the records.

The request body is canonical JSON: keys sorted, separators ``,`` and ``:``, UTF-8, no ASCII
escaping, no NaN. That form is a contract: ``prompt_sha256`` is the sha256 of exactly these
bytes, which are exactly the bytes sent, and a request record must rebuild them.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

#: The canonical encoder, built once (``json.dumps`` with options builds one per call).
CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def canonical_json(obj: Any) -> bytes:
    """The one serialisation whose bytes are hashed and sent.

    Encoded piece by piece: ``json.dumps(...).encode()`` would hold the escaped text, the
    joined text and the bytes at once, three copies of a 5 MB context instead of two.
    """
    return b"".join(chunk.encode("utf-8") for chunk in CANONICAL.iterencode(obj))


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
