"""Line ranges of context files: ``path#L120-L260`` specs, ranged context files, and the
cutter that splits a file too big for one request at natural boundaries.

A spec ``path#L120-L260`` (GitHub's form; ``path#L120`` for one line, ``#L120-260`` taken
too) names lines 120 to 260 of ``path`` (1-based, inclusive; lines as :mod:`.records.lines`
counts them). A path that really ends in such a suffix stays a path: when a file or folder
of the whole spec's name exists (in the working tree, or in ``--rev``'s commit), the spec
names it, as a glob that exists by name is a path (:func:`parse_range`). A range is of a
file: on a folder, a glob, past the file's end, reversed or from line 0, it is refused with
one line naming the spec.

:func:`cut_lines` is what a planner of parts calls: it cuts a text into ranges of at most a
number of estimated tokens, and :func:`file_range` makes each one a context file.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import NamedTuple

from deepseek_review.chat.tokens import bytes_as_tokens
from deepseek_review.context.types import ContextFile, LineRange, is_glob
from deepseek_review.errors import InputError
from deepseek_review.records.canonical import sha256_tag
from deepseek_review.records.lines import line_count, line_slice
from deepseek_review.util.textsafe import plural

#: ``#L120``, ``#L120-L260`` (or ``-260``): the end of a spec, from its last ``#L``.
_RANGE = re.compile(r"#L([0-9]+)(?:-L?([0-9]+))?")
#: Larger line numbers are past any file's end (and ``int`` of them stays cheap).
_MAX_DIGITS = 12
RANGE_FORM = "path#L120-L260, or path#L120 for one line"


class RangeSpec(NamedTuple):
    """A context spec that names lines of a file."""

    path: str
    """The spec without its range: the file's path as given."""
    first: int
    last: int
    spec: str
    """As written (errors name it)."""


def _line_number(digits: str) -> int:
    return int(digits) if len(digits) <= _MAX_DIGITS else 10**_MAX_DIGITS


def parse_range(spec: str, exists: Callable[[str], bool]) -> RangeSpec | None:
    """The range ``spec`` names, or None when it names none: no ``#L`` suffix, or a path of
    the whole spec's name ``exists`` (then it is that path). :class:`InputError` naming the
    spec for a range that cannot be one: malformed, from line 0, reversed, on a glob."""
    at = spec.rfind("#L")
    if at == -1 or "/" in spec[at:] or exists(spec):
        return None
    m = _RANGE.fullmatch(spec, at)
    path = spec[:at]
    if m is None or not path:
        raise InputError(f"context path {spec}: not a line range (write {RANGE_FORM})")
    first = _line_number(m.group(1))
    last = first if m.group(2) is None else _line_number(m.group(2))
    if first == 0 or last == 0:
        raise InputError(f"context path {spec}: lines are numbered from 1")
    if last < first:
        raise InputError(
            f"context path {spec}: the range ends at line {last}, before it starts (line {first})"
        )
    if is_glob(path) and not exists(path):
        raise InputError(f"context path {spec}: a line range needs one file, not a pattern")
    return RangeSpec(path, first, last, spec)


def not_a_file(spec: RangeSpec) -> InputError:
    """The refusal of a range on a folder."""
    return InputError(
        f"context path {spec.spec}: a line range needs a file; {spec.path} is a folder"
    )


def named_twice(spec: str, rel: str, ranges: Mapping[str, RangeSpec]) -> InputError:
    """The refusal of a file named a second time (whole, or another range)."""
    other = ranges[rel].spec if rel in ranges else rel
    return InputError(
        f"context path {spec}: {rel} is named already ({other}); a review sends a file once, "
        "whole or one range of it"
    )


def file_range(f: ContextFile, first: int, last: int, *, spec: str | None = None) -> ContextFile:
    """Lines ``first`` to ``last`` of context file ``f`` (a whole file, or a range of one: its
    whole file is cut) as a context file of its own: exactly those lines' text, their hash and
    size, the range with the file's line count, and the whole file (what pins it).
    :class:`InputError` when the file has no such lines (naming ``spec``, else the path)."""
    whole = f.whole or f
    total = line_count(whole.text)
    text = line_slice(whole.text, first, last)
    if text is None:
        named = spec or f"{whole.path}#L{first}-L{last}"
        if not 1 <= first <= last:
            raise InputError(f"context path {named}: not a range of lines ({RANGE_FORM})")
        raise InputError(
            f"context path {named}: {whole.path} has {plural(total, 'line')}; the range ends "
            "past its last line"
        )
    data = text.encode("utf-8")
    return ContextFile(
        whole.path, text, sha256_tag(data), len(data), LineRange(first, last, total), whole
    )


# --------------------------------------------------------------------------- the cutter


class Cut(NamedTuple):
    """A range of a text's lines (1-based, inclusive) and its size."""

    first: int
    last: int
    tokens: int
    """Estimated (:func:`chat.tokens.bytes_as_tokens` of ``bytes``): over the budget only
    for a single line that alone is larger."""
    bytes: int


#: What a cut before a line is worth (higher: more natural).
_LINE, _BLANK, _DEFINITION = 1, 2, 3
#: A markdown heading of level n is worth _HEADING - n (level 1: 9; level 6: 4).
_HEADING = 10
_ATX = re.compile(r" {0,3}(#{1,6})(?:[ \t]|$)")
_FENCE = re.compile(r" {0,3}(```+|~~~+)")
_MARKDOWN = (".md", ".markdown", ".mdx", ".mkd")


def _scores(lines: list[str], markdown: bool) -> list[int]:
    """What cutting before each line is worth: a markdown heading (outside fenced code) by
    its level; in any other text a line starting at column 0 after a blank line (a top-level
    definition in Python, JS/TS, Go, Rust, Java); a line after a blank line; any line."""
    scores = [_LINE] * len(lines)
    fence = ""
    blank_before = False
    for i, line in enumerate(lines):
        body = line.rstrip("\r\n")
        blank = not body.strip()
        if markdown:
            f = _FENCE.match(body)
            if f is not None and (not fence or f.group(1)[0] == fence[0]):
                mark = f.group(1)
                if not fence:
                    fence = mark
                elif len(mark) >= len(fence) and not body.strip().lstrip(fence[0]):
                    fence = ""
            h = None if fence else _ATX.match(body)
            if h is not None:
                scores[i] = _HEADING - len(h.group(1))
            elif blank_before and not blank:
                scores[i] = _BLANK
        elif blank_before and not blank:
            scores[i] = _DEFINITION if not body[:1].isspace() else _BLANK
        blank_before = blank
    return scores


def cut_lines(text: str, max_tokens: int, *, path: str = "") -> list[Cut]:
    """``text`` cut into consecutive ranges of its lines covering it all, each at most
    ``max_tokens`` estimated tokens, cut where a reader would cut: before a markdown heading
    (``path`` ending in ``.md``: the highest level first), else before a line at column 0
    after a blank line (a top-level definition), else after a blank line, else at any line;
    never inside a line (a line larger than the budget is a range of its own, over it).

    A cut is taken from the second half of what fits (a range holds at least half the budget
    when the text allows), the most natural boundary there, the latest among equals: so the
    same text and budget always give the same ranges. An empty text gives none."""
    if max_tokens < 1:
        raise ValueError("max_tokens must be at least 1")
    lines = _lf_lines(text)
    if not lines:
        return []
    sizes = [len(x) if x.isascii() else len(x.encode("utf-8")) for x in lines]
    scores = _scores(lines, path.lower().endswith(_MARKDOWN))
    budget = max_tokens * 4  # bytes: :func:`chat.tokens.bytes_as_tokens` rounds up by 4
    cuts: list[Cut] = []
    start, n = 0, len(lines)
    while start < n:
        size, end = 0, start
        while end < n and (end == start or size + sizes[end] <= budget):
            size += sizes[end]
            end += 1
        if end < n:  # the rest does not fit: choose where to cut in (start, end]
            end = _best_cut(sizes, scores, start, end, budget)
            size = sum(sizes[start:end])
        cuts.append(Cut(start + 1, end, bytes_as_tokens(size), size))
        start = end
    return cuts


def _best_cut(sizes: list[int], scores: list[int], start: int, end: int, budget: int) -> int:
    """Where to cut a range from ``start`` that can reach ``end`` (exclusive): the most
    natural boundary among those that leave it at least half the budget, the latest of equals."""
    best, best_score = end, scores[end] if end < len(scores) else _LINE
    size = sum(sizes[start:end])
    for cut in range(end, start, -1):  # cutting before line ``cut``
        if cut < end:
            size -= sizes[cut]
        if size * 2 < budget and cut < end:
            break
        score = scores[cut] if cut < len(scores) else _LINE
        if score > best_score:
            best, best_score = cut, score
    return best


def _lf_lines(text: str) -> list[str]:
    """``text``'s lines as :mod:`.records.lines` counts them: each with its line feed."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines
