"""Anchoring findings honestly: to lines that exist, or demoted, never moved.

A finding that quotes the lines it is about is anchored where its quote is in the reviewed
version (:mod:`.quote`: the occurrence nearest the line the model wrote), whatever line
numbers the model wrote; a quote that is nowhere leaves it on its file without lines, saying
so ("quote not found"), never trusting the model's lines. A finding without a quote (blocks
written before quotes) is anchored by its line numbers, as follows.

A finding is anchored to its lines only when its path is one of the review's context files
and its lines exist in that file's *reviewed* version (the text whose hash the request record
holds; of a file reviewed in part, lines as the file numbers them, inside the range), and,
for a review of a diff, when its lines lie inside one hunk of the diff (GitHub rejects a
review comment anywhere else with HTTP 422: :mod:`.hunks`; the cited lines are then the
hunk's). Otherwise it is kept, demoted to the file (its path is a context file, or a
file the change deleted) or to the review (it is not, or it is not a location inside the
repository at all: :mod:`.location`), with the reason.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from deepseek_review.finding.fingerprint import fingerprint
from deepseek_review.finding.hunks import DELETED, Hunk, NewSide, parse_diff
from deepseek_review.finding.location import refusal
from deepseek_review.finding.model import Anchored, Finding, Level, rule_id
from deepseek_review.finding.quote import NOT_FOUND, Lines, split_lines

#: Per path, the new-side line ranges (first, last; inclusive) of a diff's hunks.
Hunks = dict[str, list[tuple[int, int]]]


@dataclass(frozen=True)
class Reviewed:
    """What a review looked at: each context file's reviewed text (None when it cannot be
    had, with why in ``unavailable``), and for a diff review its change."""

    texts: Mapping[str, str | None]
    unavailable: Mapping[str, str]
    change: NewSide | None = None
    ranges: Mapping[str, tuple[int, int]] = field(default_factory=dict)
    """The files of which only some lines were reviewed: (first, last) of the file, whose
    text ``texts`` holds (a finding cites the file's own line numbers)."""
    whole: Mapping[str, tuple[bytes, str]] = field(default_factory=dict)
    """Each reviewed file's whole bytes (of a file reviewed in part, the file its lines were
    cut from) and where they were read: what a suggestion's patch is made against."""


def diff_hunks(diff: str) -> Hunks:
    """The new-side line ranges of every hunk of a unified diff (``git diff`` output), by
    the new path; a deleted file has none, a hunk that only removes lines adds none."""
    return {
        path: [(h.first, h.last) for h in hunks if h.lines]
        for path, hunks in parse_diff(diff).hunks.items()
    }


#: A file's lines as editors and GitHub number them (:func:`.quote.split_lines`).
file_lines = split_lines


@dataclass(frozen=True)
class Place:
    """Where a finding goes: its level, why not on lines ("" when it is), the cited text and
    the lines it is anchored to (when it is), and how its quote was found (None: no quote,
    or not looked for)."""

    level: Level
    reason: str = ""
    cited: tuple[str, ...] = ()
    lines: tuple[int, int] | None = None
    match: str | None = None


class _Texts:
    """The reviewed texts, each split and indexed once (:class:`.quote.Lines`)."""

    def __init__(self, seen: Reviewed) -> None:
        self.seen = seen
        self._lines: dict[str, Lines] = {}

    def lines(self, path: str) -> Lines | None:
        text = self.seen.texts.get(path)
        if text is None:
            return None
        if path not in self._lines:
            # a file reviewed in part holds its lines from the first reviewed one on
            first = self.seen.ranges.get(path, (1, 0))[0]
            self._lines[path] = Lines(file_lines(text), first)
        return self._lines[path]


def _not_found(f: Finding, where: str) -> Place:
    span = f"{f.start_line}-{f.end_line}"
    why = f"quote not found in {where}; lines {span} as the model wrote them are not used"
    return Place("file", why, match=NOT_FOUND)


def _quote_in_change(f: Finding, quote: str, hunks: Sequence[Hunk], texts: _Texts) -> Place:
    """A quoted finding of a diff review: on the lines of the hunk where its quote is, or kept
    on its file and marked when the quote is outside the change (never moved into it)."""
    best: tuple[int, int, str] | None = None
    for h in hunks:
        found = Lines(h.lines, h.first).find(quote, f.start_line)
        if found and (best is None or abs(found[0] - f.start_line) < abs(best[0] - f.start_line)):
            best = found
    if best is not None:
        first, last, how = best
        h = next(h for h in hunks if h.cited(first, last) is not None)
        return Place("line", "", h.cited(first, last) or (), (first, last), how)
    whole = texts.lines(f.path)
    found = None if whole is None else whole.find(quote, f.start_line)
    if found is None:
        return _not_found(f, f"the change to {f.path}")
    first, last, how = found
    why = f"the quoted lines {first}-{last} of {f.path} are outside the change (in no hunk)"
    return Place("file", why, match=how)


def _in_change(f: Finding, change: NewSide, texts: _Texts, quote: str | None) -> Place | None:
    """Where a finding of a diff review goes: on its lines when they lie inside one hunk
    (cited from the hunk), else demoted; None for a path the change does not name."""
    hunks = change.hunks.get(f.path)
    if hunks is None:
        if f.path not in change.gone:
            return None
        gone = change.gone[f.path]
        level: Level = "file" if gone == DELETED or f.path in texts.seen.texts else "review"
        return Place(level, f"{f.path} is {gone}: it has no new lines")
    if change.missing:
        return Place("file", change.missing)
    if quote is not None:
        return _quote_in_change(f, quote, hunks, texts)
    for h in hunks:
        cited = h.cited(f.start_line, f.end_line)
        if cited is not None:
            return Place("line", "", cited, (f.start_line, f.end_line))
    span = f"{f.start_line}-{f.end_line}"
    return Place("file", f"lines {span} of {f.path} are not inside one hunk of the diff")


def _place(f: Finding, texts: _Texts, quote: str | None) -> Place:
    """Where it goes; never on a path outside the repository, whatever a crafted record or
    diff header claims for it (a path that is no context file keeps that reason, so the
    findings files of earlier reviews still re-derive byte for byte)."""
    placed = _claimed(f, texts, quote)
    outside = refusal(f.path)
    if outside and placed.level != "review":
        return Place("review", f"{f.path!r} is not a location inside the repository: {outside}")
    return placed


def _claimed(f: Finding, texts: _Texts, quote: str | None) -> Place:
    seen = texts.seen
    if seen.change is not None:
        placed = _in_change(f, seen.change, texts, quote)
        if placed is not None:
            return placed
    if f.path not in seen.texts:
        return Place("review", f"{f.path} is not one of the review's context files")
    whole = texts.lines(f.path)
    if whole is None:
        return Place("file", seen.unavailable.get(f.path, "its reviewed text is not available"))
    lines = whole.lines
    top, bottom = seen.ranges.get(f.path) or (1, len(lines))
    match = None
    if quote is not None:
        found = whole.find(quote, f.start_line)
        if found is None:
            return _not_found(f, f"the reviewed version of {f.path}")
        first, last, match = found
    elif f.path in seen.ranges and (f.start_line < top or f.end_line > bottom):
        span = f"{f.start_line}-{f.end_line}"
        why = f"lines {span} of {f.path} are outside the lines reviewed ({top}-{bottom})"
        return Place("file", why)
    elif f.end_line > bottom:
        return Place("file", f"{f.path} has {len(lines)} lines; line {f.end_line} does not exist")
    else:
        first, last = f.start_line, f.end_line
    if seen.change is not None:
        why = "only lines inside a hunk of the diff are anchored"
        reason = f"{f.path} is a whole context file, not part of the change: {why}"
        return Place("file", reason, match=match)
    return Place("line", "", tuple(lines[first - top : last - top + 1]), (first, last), match)


def anchor(
    findings: Sequence[Finding], seen: Reviewed, review: str, *, quotes: bool = True
) -> list[Anchored]:
    """Each finding anchored to its lines or demoted with the reason; ``review`` is the
    answer file a review-level finding is shown on. ``quotes``: find a finding's lines by its
    quote (:mod:`.quote`); False: by the model's line numbers alone (findings output v1).
    A quoted finding's fingerprint is made from its quote, wherever (or whether) it is found."""
    out = []
    texts = _Texts(seen)
    for f in findings:
        quote = f.quote if quotes else None
        p = _place(f, texts, quote)
        cited = p.cited if quote is None else tuple(split_lines(quote))
        print_ = fingerprint(rule_id(f.category), f.path, cited, f.title)
        out.append(Anchored(f, p.level, p.reason, p.cited, print_, review, p.lines, p.match))
    return out
