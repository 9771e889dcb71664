"""The API key taken out of text a server wrote, also where the server transformed it.

A careless proxy or a hostile server may echo the ``Authorization`` header in an error body,
and not always as it came: reversed, base64 (of the key, of ``Bearer <key>``, of
``user:<key>``), hex, percent-encoded, JSON- or HTML-escaped, upper-cased, or with zero-width
characters inserted, any of which a plain search for the key misses and a terminal shows as
the key. :func:`redact` replaces each such form by ``[redacted]``.
"""

from __future__ import annotations

import base64
import re
from functools import cache

REDACTED = "[redacted]"
#: Characters that show as nothing: a server (or an attacker's page) may put them inside the
#: key it echoes, which then no longer matches the key but reads as it.
_INVISIBLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180e\u200b-\u200f\u202a-\u202e"
    "\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0"
)
_GAP = (
    rf"(?:[{_INVISIBLE}]"
    r"|\\u(?:00ad|034f|200[b-f]|206[0-9a-f]|feff)"
    r"|%(?:c2%ad|e2%80%8[b-f]|e2%81%a[0-9a-f]|ef%bb%bf)"
    r"|&#(?:173|820[3-7]|828[89]|65279);|&#x(?:ad|200[b-f]|206[0-9a-f]|feff);)*"
)
#: A key shorter than this is redacted only as itself: its encodings would match noise.
_MIN_TRANSFORMED = 8


def _spelled(secret: str) -> str:
    """A pattern for ``secret`` as text may carry it: each character as itself,
    percent-encoded, a JSON/Python escape or an HTML entity, any case, with invisible
    characters (or their escapes) between."""
    forms = []
    for c in secret:
        o = ord(c)
        alts = [re.escape(c), f"%{o:02x}", rf"\\u{o:04x}", rf"\\x{o:02x}", f"&#0*{o};"]
        alts.append(f"&#x0*{o:x};")
        forms.append("(?:" + "|".join(alts) + ")")
    return _GAP.join(forms)


def _base64_cores(data: bytes) -> list[str]:
    """The base64 characters that encode only ``data``, whatever bytes precede it (at each
    of the three alignments) or follow it: what any base64 text holding it contains."""
    cores = []
    for pad in range(3):
        encoded = base64.b64encode(b"\0" * pad + data).decode()
        first, end = -(-pad // 3), (pad + len(data)) // 3
        core = encoded[4 * first : 4 * end]
        if len(core) >= _MIN_TRANSFORMED:
            cores += [core, core.translate(str.maketrans("+/", "-_"))]
    return cores


_B64_TEXT = re.compile(r"(?:[A-Za-z0-9+/_-]|\\/){8,}=*")


@cache
def _secret_forms(secret: str) -> tuple[re.Pattern[str], tuple[str, ...]]:
    """The spelled forms of ``secret`` and its reverse (one pattern) and the base64 cores of
    both."""
    data = secret.encode("utf-8")
    spelled = [_spelled(secret), _spelled(secret[::-1]), data.hex(), data[::-1].hex()]
    pattern = re.compile("|".join(f"(?:{p})" for p in spelled), re.IGNORECASE)
    return pattern, tuple(_base64_cores(data) + _base64_cores(data[::-1]))


def redact(text: str, secret: str | None) -> str:
    """``text`` with ``secret`` (the API key) replaced by ``[redacted]``, also as a server may
    have transformed it: reversed, base64 (standard or URL-safe, at any offset, as in
    ``Basic``/``Bearer`` headers: the whole base64 run goes), hex, percent-encoded, JSON- or
    HTML-escaped, in another case, or with zero-width characters inserted. Always *before*
    any truncation, which could otherwise leave a prefix that no longer matches."""
    if not secret:
        return text
    if len(secret) < _MIN_TRANSFORMED:
        return text.replace(secret, REDACTED)
    pattern, cores = _secret_forms(secret)

    def run(m: re.Match[str]) -> str:
        plain = m.group().replace("\\/", "/")
        return REDACTED if any(core in plain for core in cores) else m.group()

    return pattern.sub(REDACTED, _B64_TEXT.sub(run, text))


def redact_bytes(data: bytes, secret: str | None) -> bytes:
    """:func:`redact` for bytes (UTF-8 or not: other bytes pass through unchanged)."""
    if not secret:
        return data
    text = data.decode("utf-8", errors="surrogateescape")
    return redact(text, secret).encode("utf-8", errors="surrogateescape")
