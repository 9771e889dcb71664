"""Text from outside shown on a terminal as what it says, never as what it does.

A server's error message, an answer, a receipt's fields, file names and config values may
hold terminal control sequences (``ESC ] 0 ;`` retitles the window, OSC 52 writes the
clipboard, ``ESC [ 2 J`` clears the screen, a lone C1 ``CSI`` does the same on some terminals)
or bidi overrides that make text read differently from what it is. :func:`escape` shows each
such character as a visible escape in Python's notation (``\\x1b``, ``\\u202e``), so a user sees
that it was there. Backslashes are not doubled: the point is a safe terminal, not a reversible
encoding (``--json`` output gives the exact values).
"""

from __future__ import annotations

import base64
import re
from functools import cache

# C0 but newline, tab and carriage return (which multi-line text keeps, see below), DEL, C1,
# the bidi controls (LRM, RLM, ALM, embeddings, overrides, isolates), the line and paragraph
# separators, and lone surrogates (how Python decodes a file name byte that is not UTF-8).
_ALWAYS = (
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
    "\ud800-\udfff"
)
#: The three patterns, each compiled on first use: a class that reaches past Latin-1 takes about
#: a millisecond to compile, and most commands print through one of them at most.
_PATTERNS = {
    #: One line (a diagnostic, a table row): newline, tab and carriage return are escaped too.
    "line": f"[{_ALWAYS}\t\n\r]",
    #: Lines joined by newlines, each escaped as by ``line`` (the joins are the only newlines).
    "joined_lines": f"[{_ALWAYS}\t\r]",
    #: Multi-line text (an answer): lines and indentation stay; a CR only as part of CRLF,
    #: since a lone one moves back to the start of the line and lets later text overwrite
    #: what was shown.
    "multiline": f"[{_ALWAYS}]|\r(?!\n)",
}


@cache
def _pattern(kind: str) -> re.Pattern[str]:
    return re.compile(_PATTERNS[kind])


def _visible(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def _json_escape(match: re.Match[str]) -> str:
    return f"\\u{ord(match.group()):04x}"


def escape(text: str, *, multiline: bool = False) -> str:
    """``text`` with every control character shown as ``\\xNN`` / ``\\uNNNN``.

    ``multiline`` keeps newlines, tabs and CRLF line ends (for answer text); otherwise they
    are escaped as well, so one value stays on one line.
    """
    if not multiline and text.isascii() and text.isprintable():
        return text  # nothing to show: ASCII's only unprintables are C0 and DEL, all escaped
    return _pattern("multiline" if multiline else "line").sub(_visible, text)


def escape_lines(lines: list[str]) -> str:
    """Each of ``lines`` escaped as one line (:func:`escape`), each ended by a newline: one
    pass over the joined text when no line holds a newline of its own (20,000 file names of a
    dry run: one regex scan instead of 20,000)."""
    joined = "\n".join(lines)
    if joined.count("\n") != len(lines) - 1:
        return "".join(escape(line) + "\n" for line in lines)
    if joined.isascii() and joined.replace("\n", "").isprintable():
        return joined + "\n"  # as in escape: nothing to show
    return _pattern("joined_lines").sub(_visible, joined) + "\n"


def json_safe(dumped: str) -> str:
    """The output of ``json.dumps(..., ensure_ascii=False)`` without raw control characters.

    ``json.dumps`` escapes C0 itself but leaves DEL, C1, bidi controls, U+2028/U+2029 and lone
    surrogates raw; here each becomes a ``\\uNNNN`` escape, which is valid only inside a JSON
    string, where those characters can only be: the JSON still decodes to the exact value.
    """
    return _pattern("multiline").sub(_json_escape, dumped)


# --------------------------------------------------------------------------- the API key

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
