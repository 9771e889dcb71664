"""Anchoring findings honestly: to lines that exist, or demoted, never moved.

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
from deepseek_review.finding.hunks import DELETED, NewSide, parse_diff
from deepseek_review.finding.location import refusal
from deepseek_review.finding.model import Anchored, Finding, Level, rule_id

#: Per path, the new-side line ranges (first, last; inclusive) of a diff's hunks.
Hunks = dict[str, list[tuple[int, int]]]
Placed = tuple[Level, str, tuple[str, ...]]


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


def diff_hunks(diff: str) -> Hunks:
    """The new-side line ranges of every hunk of a unified diff (``git diff`` output), by
    the new path; a deleted file has none, a hunk that only removes lines adds none."""
    return {
        path: [(h.first, h.last) for h in hunks if h.lines]
        for path, hunks in parse_diff(diff).hunks.items()
    }


def file_lines(text: str) -> list[str]:
    """A file's lines as editors and GitHub number them: split at LF only (a CR before it
    dropped), not at the form feeds and other separators :meth:`str.splitlines` splits at."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _in_change(f: Finding, change: NewSide, texts: Mapping[str, str | None]) -> Placed | None:
    """Where a finding of a diff review goes: on its lines when they lie inside one hunk
    (cited from the hunk), else demoted; None for a path the change does not name."""
    hunks = change.hunks.get(f.path)
    if hunks is None:
        if f.path not in change.gone:
            return None
        level: Level = "file" if change.gone[f.path] == DELETED or f.path in texts else "review"
        return level, f"{f.path} is {change.gone[f.path]}: it has no new lines", ()
    if change.missing:
        return "file", change.missing, ()
    for h in hunks:
        cited = h.cited(f.start_line, f.end_line)
        if cited is not None:
            return "line", "", cited
    span = f"{f.start_line}-{f.end_line}"
    return "file", f"lines {span} of {f.path} are not inside one hunk of the diff", ()


def _place(f: Finding, seen: Reviewed) -> Placed:
    """Where it goes; never on a path outside the repository, whatever a crafted record or
    diff header claims for it (a path that is no context file keeps that reason, so the
    findings files of earlier reviews still re-derive byte for byte)."""
    placed = _claimed(f, seen)
    outside = refusal(f.path)
    if outside and placed[0] != "review":
        return "review", f"{f.path!r} is not a location inside the repository: {outside}", ()
    return placed


def _claimed(f: Finding, seen: Reviewed) -> Placed:
    if seen.change is not None:
        placed = _in_change(f, seen.change, seen.texts)
        if placed is not None:
            return placed
    if f.path not in seen.texts:
        return "review", f"{f.path} is not one of the review's context files", ()
    text = seen.texts[f.path]
    if text is None:
        return "file", seen.unavailable.get(f.path, "its reviewed text is not available"), ()
    lines = file_lines(text)
    first, last = seen.ranges.get(f.path) or (1, len(lines))
    if f.path in seen.ranges and (f.start_line < first or f.end_line > last):
        span = f"{f.start_line}-{f.end_line}"
        why = f"lines {span} of {f.path} are outside the lines reviewed ({first}-{last})"
        return "file", why, ()
    if f.end_line > last:
        return "file", f"{f.path} has {len(lines)} lines; line {f.end_line} does not exist", ()
    if seen.change is not None:
        why = "only lines inside a hunk of the diff are anchored"
        return "file", f"{f.path} is a whole context file, not part of the change: {why}", ()
    return "line", "", tuple(lines[f.start_line - first : f.end_line - first + 1])


def anchor(findings: Sequence[Finding], seen: Reviewed, review: str) -> list[Anchored]:
    """Each finding anchored to its lines or demoted with the reason; ``review`` is the
    answer file a review-level finding is shown on."""
    out = []
    for f in findings:
        level, reason, cited = _place(f, seen)
        rule = rule_id(f.category)
        print_ = fingerprint(rule, f.path, cited, f.title)
        out.append(Anchored(f, level, reason, cited, print_, review))
    return out
