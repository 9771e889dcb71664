"""Line ranges of a file: which bytes ``lines [first, last]`` stands for, exactly.

A request record's ``$file`` reference may name a range of lines (``"lines": [120, 260]``,
1-based, inclusive): its text, hash and size are those of the slice. Lines are numbered as
editors, ``git`` and GitHub number them: a line ends at a line feed (LF), which belongs to
it; a last line without one counts; a carriage return, form feed or Unicode separator ends
no line. The same rule cuts a text (framing, findings) and a file's bytes (``verify``): LF
is one byte in UTF-8 and never part of a longer sequence, so both give the same slice.
"""

from __future__ import annotations

from typing import Any, TypeVar

#: ``(first, last)``: 1-based, inclusive.
Lines = tuple[int, int]

_T = TypeVar("_T", str, bytes)


def _nl(data: str | bytes) -> Any:
    """The line feed in ``data``'s kind (a ``str`` or ``bytes``)."""
    return "\n" if isinstance(data, str) else b"\n"


def line_count(data: str | bytes) -> int:
    """The lines of ``data``; a last line without its LF counted too (an empty file: 0)."""
    nl = _nl(data)
    return data.count(nl) + (bool(data) and not data.endswith(nl))


def line_offset(data: _T, line: int) -> int:
    """Where line ``line`` (1-based) starts in ``data``; ``len(data)`` past the last line."""
    nl = _nl(data)
    at = 0
    for _ in range(line - 1):
        found = data.find(nl, at)
        if found == -1:
            return len(data)
        at = found + 1
    return at


def line_slice(data: _T, first: int, last: int) -> _T | None:
    """Lines ``first`` to ``last`` of ``data`` with their line feeds, byte for byte; None
    when the range is not one of ``data`` (reversed, from 0, or past its last line)."""
    if not 1 <= first <= last:
        return None
    nl = _nl(data)
    start = line_offset(data, first)
    if start >= len(data):
        return None
    at = start
    for _ in range(last - first + 1):
        found = data.find(nl, at)
        if found == -1:
            if at >= len(data):  # the range's last line does not exist
                return None
            at = len(data)
            continue
        at = found + 1
    return data[start:at]


def valid_lines(value: object) -> Lines | None:
    """A record's ``lines`` value as ``(first, last)``; None unless it is a list of two
    integers with ``1 <= first <= last`` (a record may be hostile)."""
    if not isinstance(value, list) or len(value) != 2:
        return None
    first, last = value
    if type(first) is not int or type(last) is not int or not 1 <= first <= last:
        return None
    return first, last


def describe(lines: Lines, total: int | None = None) -> str:
    """``lines 120-260 of 900`` (``line 7`` for one line; ``of`` only when ``total`` is known)."""
    first, last = lines
    span = f"line {first}" if first == last else f"lines {first}-{last}"
    return span if total is None else f"{span} of {total}"
