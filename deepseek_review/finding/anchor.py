"""Anchoring findings honestly: to lines that exist, or demoted, never moved.

A finding is anchored to its lines only when its path is one of the review's context files
and its lines exist in that file's *reviewed* version (the text whose hash the request record
holds), and, for a review of a diff, when its lines lie inside one hunk of the diff (GitHub
rejects a review comment anywhere else with HTTP 422). Otherwise it is kept, demoted to the
file (its path is a context file) or to the review (it is not), with the reason.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .fingerprint import fingerprint
from .model import Anchored, Finding, Level, rule_id

_HUNK_RE = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_OCTAL_RE = re.compile(rb"\\([0-7]{3})")
_SIMPLE_ESCAPES = {b"\\\\": b"\\", b'\\"': b'"', b"\\t": b"\t", b"\\n": b"\n"}

#: Per path, the new-side line ranges (first, last; inclusive) of a diff's hunks.
Hunks = dict[str, list[tuple[int, int]]]


@dataclass(frozen=True)
class Reviewed:
    """What a review looked at: each context file's reviewed text (None when it cannot be
    had, with why in ``unavailable``), and for a diff review its hunks."""

    texts: Mapping[str, str | None]
    unavailable: Mapping[str, str]
    hunks: Hunks | None = None


def _unquote(name: str) -> str:
    """A path as git prints it in a diff header: C-quoted when it holds unusual bytes."""
    if not (name.startswith('"') and name.endswith('"')):
        return name
    raw = name[1:-1].encode("utf-8")
    raw = _OCTAL_RE.sub(lambda m: bytes([int(m.group(1), 8)]), raw)
    for k, v in _SIMPLE_ESCAPES.items():
        raw = raw.replace(k, v)
    return raw.decode("utf-8", "surrogateescape")


def diff_hunks(diff: str) -> Hunks:
    """The new-side line ranges of every hunk of a unified diff (``git diff`` output), by
    the new path; a deleted file has none, a hunk that only removes lines adds none."""
    out: Hunks = {}
    path: str | None = None
    for line in diff.split("\n"):
        if line.startswith("+++ "):
            name = _unquote(line[4:].rstrip("\t"))
            path = name[2:] if name.startswith("b/") else None
            if path is not None:
                out.setdefault(path, [])
            continue
        m = _HUNK_RE.match(line)
        if m and path is not None:
            first, count = int(m.group(1)), int(m.group(2) or "1")
            if count:
                out[path].append((first, first + count - 1))
    return out


def file_lines(text: str) -> list[str]:
    """A file's lines as editors and GitHub number them: split at LF only (a CR before it
    dropped), not at the form feeds and other separators :meth:`str.splitlines` splits at."""
    lines = text.split("\n")
    if lines[-1] == "":
        lines.pop()
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def _place(f: Finding, seen: Reviewed) -> tuple[Level, str, tuple[str, ...]]:
    if f.path not in seen.texts:
        return "review", f"{f.path} is not one of the review's context files", ()
    text = seen.texts[f.path]
    if text is None:
        return "file", seen.unavailable.get(f.path, "its reviewed text is not available"), ()
    lines = file_lines(text)
    if f.end_line > len(lines):
        return "file", f"{f.path} has {len(lines)} lines; line {f.end_line} does not exist", ()
    if seen.hunks is not None:
        ranges = seen.hunks.get(f.path, [])
        if not any(a <= f.start_line and f.end_line <= b for a, b in ranges):
            span = f"{f.start_line}-{f.end_line}"
            return "file", f"lines {span} of {f.path} are not inside one hunk of the diff", ()
    return "line", "", tuple(lines[f.start_line - 1 : f.end_line])


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
