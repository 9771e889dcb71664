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

import re
import unicodedata
from collections.abc import Callable
from functools import cache

# C0 but newline, tab and carriage return (which multi-line text keeps, see below), DEL, C1,
# the bidi controls (LRM, RLM, ALM, embeddings, overrides, isolates), the line and paragraph
# separators, and lone surrogates (how Python decodes a file name byte that is not UTF-8).
_ALWAYS = (
    "\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f"
    "\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
    "\ud800-\udfff"
)
#: The three patterns, each compiled on first use (most commands print through one at most).
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


#: Unicode categories a name may not hold and text never shows raw: controls (C0, DEL, C1),
#: format characters (bidi overrides, isolates and marks, zero-width space, word joiner, BOM,
#: soft hyphen, tags) and the line and paragraph separators.
UNSAFE_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
#: Format characters that spell words (Persian, Indic scripts, emoji): shown as they are.
JOINERS = frozenset({"\u200c", "\u200d"})


def is_unsafe_char(c: str) -> bool:
    """Whether ``c`` could break or fake what it is shown in (see :data:`UNSAFE_CATEGORIES`)."""
    return c not in JOINERS and unicodedata.category(c) in UNSAFE_CATEGORIES


@cache
def _pattern(kind: str) -> re.Pattern[str]:
    return re.compile(_PATTERNS[kind])


def _visible(match: re.Match[str]) -> str:
    return _shown(match.group())


def _json_escape(match: re.Match[str]) -> str:
    return _json_shown(match.group())


def _shown(c: str) -> str:
    code = ord(c)
    if code < 0x100:
        return f"\\x{code:02x}"
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _json_shown(c: str) -> str:
    code = ord(c)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    high, low = divmod(code - 0x10000, 0x400)  # JSON spells it as a surrogate pair
    return f"\\u{0xD800 + high:04x}\\u{0xDC00 + low:04x}"


def _format_chars(text: str, show: Callable[[str], str] = _shown) -> str:
    """``text`` with the invisible format characters the patterns do not list (zero-width
    space, word joiner, BOM, soft hyphen, tags: category Cf) shown by ``show``."""
    if text.isascii():
        return text  # the patterns already showed every control; Cf is beyond ASCII
    return "".join(
        show(c) if c not in JOINERS and unicodedata.category(c) == "Cf" else c for c in text
    )


def escape(text: str, *, multiline: bool = False) -> str:
    """``text`` with every control character shown as ``\\xNN`` / ``\\uNNNN``.

    ``multiline`` keeps newlines, tabs and CRLF line ends (for answer text); otherwise they
    are escaped as well, so one value stays on one line.
    """
    if not multiline and text.isascii() and text.isprintable():
        return text  # nothing to show: ASCII's only unprintables are C0 and DEL, all escaped
    shown = _pattern("multiline" if multiline else "line").sub(_visible, text)
    return _format_chars(shown)


def escape_lines(lines: list[str]) -> str:
    """Each of ``lines`` escaped as one line (:func:`escape`), each ended by a newline: one
    pass over the joined text when no line holds a newline of its own (20,000 file names of a
    dry run: one regex scan instead of 20,000)."""
    joined = "\n".join(lines)
    if joined.count("\n") != len(lines) - 1:
        return "".join(escape(line) + "\n" for line in lines)
    if joined.isascii() and joined.replace("\n", "").isprintable():
        return joined + "\n"  # as in escape: nothing to show
    return _format_chars(_pattern("joined_lines").sub(_visible, joined)) + "\n"


def json_safe(dumped: str) -> str:
    """The output of ``json.dumps(..., ensure_ascii=False)`` without raw control characters.

    ``json.dumps`` escapes C0 itself but leaves DEL, C1, bidi controls, U+2028/U+2029 and lone
    surrogates raw; here each becomes a ``\\uNNNN`` escape, which is valid only inside a JSON
    string, where those characters can only be: the JSON still decodes to the exact value.
    """
    return _format_chars(_pattern("multiline").sub(_json_escape, dumped), _json_shown)


_BACKTICK_RUN_RE = re.compile(r"`+")


def fence_for(text: str) -> str:
    """A backtick fence longer than any backtick run in ``text`` (at least three)."""
    if "```" not in text:  # the common case, without scanning every run
        return "```"
    longest = max((len(m) for m in _BACKTICK_RUN_RE.findall(text)), default=0)
    return "`" * max(3, longest + 1)


def plural(n: int, word: str) -> str:
    """``1 file``, ``2 files``."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"
