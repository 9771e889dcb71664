"""Finding a finding's quote in the reviewed text: exact first, then with each line's edges
trimmed, never fuzzier.

Both the quote and the file are split into lines at LF, a CR before the LF dropped (so a
CRLF file and an LF quote match, and the other way round), and a last empty line (the end of
the last line) dropped. **Exact**: the quote's lines are consecutive lines of the file,
character for character. **Whitespace**: the same once each line is stripped of its leading
and trailing whitespace (:meth:`str.strip`: spaces, tabs, form feeds and other Unicode
whitespace) and blank lines at the quote's start and end are dropped. Nothing else is
tolerated: no change inside a line, no part of a line, no case folding, no skipped or extra
line. Where the quote is found more than once, the place whose first line is nearest the
line the model wrote is taken (the earlier on a tie).
"""

from __future__ import annotations

from collections.abc import Sequence

EXACT = "exact"
WHITESPACE = "whitespace"
NOT_FOUND = "not found"


def split_lines(text: str) -> list[str]:
    """Lines as editors and GitHub number them: split at LF only (a CR before it dropped),
    not at the form feeds and other separators :meth:`str.splitlines` splits at."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _index(lines: Sequence[str]) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {}
    for i, line in enumerate(lines):
        out.setdefault(line, []).append(i)
    return out


def _trimmed(lines: Sequence[str]) -> list[str]:
    out = [line.strip() for line in lines]
    while out and not out[0]:
        out.pop(0)
    while out and not out[-1]:
        out.pop()
    return out


class Lines:
    """A run of lines (a file, or a hunk's new side starting at line ``first``) with an index
    by text, built once however many findings are looked for in it."""

    def __init__(self, lines: Sequence[str], first: int = 1) -> None:
        self.lines = list(lines)
        self.first = first
        self._exact: dict[str, list[int]] | None = None
        self._stripped: list[str] | None = None
        self._by_stripped: dict[str, list[int]] | None = None

    @staticmethod
    def _places(quote: list[str], lines: Sequence[str], index: dict[str, list[int]]) -> list[int]:
        n = len(quote)
        return [i for i in index.get(quote[0], ()) if list(lines[i : i + n]) == quote]

    def find(self, quote: str, near: int) -> tuple[int, int, str] | None:
        """Where ``quote`` is (first line, last line, :data:`EXACT` or :data:`WHITESPACE`),
        nearest line ``near``; None when it is nowhere, or holds nothing but whitespace."""
        wanted = split_lines(quote)
        if wanted:
            if self._exact is None:
                self._exact = _index(self.lines)
            found = self._places(wanted, self.lines, self._exact)
            if found:
                return self._nearest(found, len(wanted), near, EXACT)
        trimmed = _trimmed(wanted)
        if not trimmed:
            return None
        if self._stripped is None or self._by_stripped is None:
            self._stripped = [line.strip() for line in self.lines]
            self._by_stripped = _index(self._stripped)
        found = self._places(trimmed, self._stripped, self._by_stripped)
        return self._nearest(found, len(trimmed), near, WHITESPACE) if found else None

    def _nearest(self, found: list[int], n: int, near: int, how: str) -> tuple[int, int, str]:
        start = min((self.first + i for i in found), key=lambda s: (abs(s - near), s))
        return start, start + n - 1, how
