"""Suggestions as changes: which findings' suggestions can be offered, and the patch of them.

A finding's ``suggestion`` is replacement text for the lines it quotes. It is offered as a
change (a unified diff, a GitHub suggestion block, an rdjson suggestion, a SARIF fix: every
export the same, from :func:`plan`) only when the finding is anchored to its lines by its
quote (:mod:`.quote`: never by line numbers a model wrote alone), the reviewed version of
the file can be read (:attr:`.derive.ReviewFindings.sources`) and still holds the anchored
lines, and no more severe suggestion changes any of those lines (overlaps keep the most
severe; on a tie the first listed). Every suggestion left out is listed with why.

The patch is made against the reviewed version of each file (the bytes whose hash the
record holds, or a diff review's new side), not the working tree: ``git apply`` takes it on
the reviewed commit, ``git apply --3way`` on a later one. It is written here rather than by
``git diff`` so that it depends on no git configuration of the repository under review: one
``diff --git`` section per file, in path order, hunks in line order with three lines of
context, a file's line ends (LF or CRLF) kept, ``\\ No newline at end of file`` where git
writes it, and ``index`` naming both blobs (so ``--3way`` can find the base).
"""

from __future__ import annotations

import bisect
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field

from deepseek_review.finding.derive import Collected, Source
from deepseek_review.finding.model import Anchored, rank
from deepseek_review.finding.quote import NOT_FOUND, split_lines
from deepseek_review.git.objects import blob_id, oid_format, short

#: Lines of context around each change, as ``git diff`` writes by default.
CONTEXT = 3
_NO_EOL = b"\n\\ No newline at end of file\n"


@dataclass(frozen=True)
class Fix:
    """One suggestion offered as a change: lines ``first``..``last`` (inclusive) of ``path``
    replaced by ``lines`` (none: deleted)."""

    finding: Anchored
    path: str
    first: int
    last: int
    lines: tuple[str, ...]
    source: Source

    @property
    def text(self) -> str:
        """The replacement as a GitHub suggestion block and rdjson show it: its lines joined
        by LF, without a last line end (an empty text deletes the lines)."""
        return "\n".join(self.lines)

    @property
    def eol(self) -> str:
        """The line end of the file where the lines are replaced: CRLF or LF."""
        ends = _lines(self.source.data)
        for line in (*ends[self.first - 1 : self.last], *ends[: self.first - 1][-1:]):
            if line.endswith(b"\n"):
                return "\r\n" if line.endswith(b"\r\n") else "\n"
        return "\n"

    @property
    def ends_file(self) -> bool:
        """Whether its last line is the file's last."""
        return self.last >= len(_lines(self.source.data))


@dataclass
class Plan:
    """The suggestions offered as changes, by path in line order, and those left out."""

    fixes: dict[str, list[Fix]] = field(default_factory=dict)
    left_out: list[tuple[Anchored, str]] = field(default_factory=list)
    _of: dict[int, Fix] = field(default_factory=dict, repr=False)
    """Each change by its finding's id (made once by :func:`plan`)."""

    def fix_of(self, a: Anchored) -> Fix | None:
        """The change offered for finding ``a`` (None: it has none)."""
        fix = self._of.get(id(a))
        return fix if fix is not None and fix.finding is a else None

    def notes(self) -> list[str]:
        """What a reader of the patch must know: each suggestion left out and why, and each
        file no longer as reviewed in the working tree."""
        out = [f"suggestion left out: {_named(a)}: {why}" for a, why in self.left_out]
        for path, fixes in sorted(self.fixes.items()):
            src = fixes[0].source
            if not src.current:
                out.append(
                    f"{path} changed since the review: its patch is against the reviewed "
                    f"version ({src.how}, blob {short(src.oid)}); apply it on the reviewed "
                    "commit, or with git apply --3way"
                )
        return out


def _named(a: Anchored) -> str:
    """``path:first-last [severity] title``: a finding as the notes name it."""
    f = a.finding
    return f"{a.where or f.path}:{a.start_line}-{a.end_line} [{f.severity}] {f.title}"


@functools.lru_cache(maxsize=64)
def _lines(data: bytes) -> tuple[bytes, ...]:
    """The lines of ``data`` as git counts them (split at LF), each with its line end; the
    last without one when the file does not end with a line feed."""
    parts = data.split(b"\n")
    out = [p + b"\n" for p in parts[:-1]]
    return (*out, parts[-1]) if parts[-1] else tuple(out)


@functools.lru_cache(maxsize=64)
def _text_lines(data: bytes) -> tuple[str, ...] | None:
    """The lines of ``data`` as findings number them (:func:`.quote.split_lines`); None when
    it is not UTF-8."""
    try:
        return tuple(split_lines(data.decode("utf-8")))
    except UnicodeDecodeError:
        return None


def _refusal(a: Anchored, source: Source | None) -> str:
    """Why finding ``a``'s suggestion cannot be offered as a change ("" when it can)."""
    if not a.anchored or a.where is None:
        return f"it is not anchored to its lines ({a.reason or 'it names no file'})"
    if a.finding.quote is None or a.quote_match in (None, NOT_FOUND):
        return "it quotes no lines: its line numbers alone are not trusted to place a change"
    if source is None:
        return f"the reviewed version of {a.where} cannot be read"
    lines = _text_lines(source.data)
    if lines is None:
        return f"the reviewed version of {a.where} is not UTF-8 text"
    try:
        (a.finding.suggestion or "").encode("utf-8")
    except UnicodeEncodeError:
        return "its suggestion is not Unicode text (it holds a lone surrogate)"
    if lines[a.start_line - 1 : a.end_line] != a.cited:
        return f"the reviewed version of {a.where} does not hold the anchored lines"
    return ""


def plan(collected: Collected) -> Plan:
    """Which findings' suggestions are offered as changes, the most severe first."""
    sources = {r.answer_path: r.sources for r in collected.reviews}
    out = Plan()
    chosen = sorted(
        (a for a in collected.findings if a.finding.suggestion is not None),
        key=lambda a: rank(a.finding.severity),
    )
    for a in chosen:
        source = sources.get(a.review, {}).get(a.finding.path)
        why = _refusal(a, source)
        if not why and a.where is not None and source is not None:
            fixes = out.fixes.setdefault(a.where, [])
            why = _clash(fixes, a, source)
            if not why:
                lines = tuple(split_lines(a.finding.suggestion or ""))
                fix = Fix(a, a.where, a.start_line, a.end_line, lines, source)
                bisect.insort(fixes, fix, key=_first)
        if why:
            out.left_out.append((a, why))
    out.fixes = {p: f for p, f in sorted(out.fixes.items()) if f}
    out._of = {id(f.finding): f for fixes in out.fixes.values() for f in fixes}
    return out


def _first(fix: Fix) -> int:
    return fix.first


def _clash(fixes: Sequence[Fix], a: Anchored, source: Source) -> str:
    """Why ``a`` cannot join the changes already chosen for its file (in line order, none
    overlapping: only its neighbours can overlap it); "" when it can."""
    if fixes and fixes[0].source.data != source.data:
        return (
            f"{a.where} was reviewed at another version too ({fixes[0].source.how}); its changes "
            f"are made against the version of the more severe {_named(fixes[0].finding)}"
        )
    at = bisect.bisect_left(fixes, a.start_line, key=_first)
    for f in fixes[max(0, at - 1) : at + 1]:
        if a.start_line <= f.last and f.first <= a.end_line:
            return f"its lines overlap those of the more severe {_named(f.finding)}"
    return ""


def quote_path(path: str) -> str:
    """A path as git writes it in a diff header: C-quoted (octal escapes for bytes outside
    ASCII, ``\\"`` and ``\\\\``) when it holds such characters, else as is."""
    if all(0x20 <= ord(c) < 0x7F and c not in '"\\' for c in path):
        return path
    out = []
    for byte in path.encode("utf-8"):
        c = chr(byte)
        out.append("\\" + c if c in '"\\' else c if 0x20 <= byte < 0x7F else f"\\{byte:03o}")
    return '"' + "".join(out) + '"'


def _header(path: str, old: str, new: str) -> bytes:
    a, b = (quote_path(p + path) for p in ("a/", "b/"))
    if a.startswith('"'):  # the prefix goes inside the quotes
        a, b = '"a/' + a[1:].removeprefix("a/"), '"b/' + b[1:].removeprefix("b/")
    return f"diff --git {a} {b}\nindex {old}..{new}\n--- {a}\n+++ {b}\n".encode()


def _replacement(fix: Fix, old: Sequence[bytes]) -> list[bytes]:
    """The new lines of ``fix``, with the file's line ends; the last without one where the
    lines it replaces ended the file without one."""
    eol = fix.eol.encode()
    new = [line.encode("utf-8") + eol for line in fix.lines]
    if new and not old[fix.last - 1].endswith(b"\n"):
        new[-1] = new[-1][: -len(eol)]
    return new


def _hunk_lines(prefix: bytes, lines: Sequence[bytes]) -> bytes:
    return b"".join(prefix + (line if line.endswith(b"\n") else line + _NO_EOL) for line in lines)


def file_patch(fixes: Sequence[Fix]) -> bytes:
    """The ``diff --git`` section of one file's changes (in line order, never overlapping)."""
    old = _lines(fixes[0].source.data)
    groups: list[list[Fix]] = []
    for fix in fixes:  # changes whose contexts touch share a hunk, as git groups them
        if groups and fix.first - groups[-1][-1].last - 1 <= 2 * CONTEXT:
            groups[-1].append(fix)
        else:
            groups.append([fix])
    body, delta, new_data = b"", 0, list(old)
    for group in groups:
        start = max(0, group[0].first - 1 - CONTEXT)
        end = min(len(old), group[-1].last + CONTEXT)
        at, text, added = start, b"", 0
        for fix in group:
            new = _replacement(fix, old)
            text += _hunk_lines(b" ", old[at : fix.first - 1])
            text += _hunk_lines(b"-", old[fix.first - 1 : fix.last]) + _hunk_lines(b"+", new)
            added += len(new) - (fix.last - fix.first + 1)
            at = fix.last
        text += _hunk_lines(b" ", old[at:end])
        n_old, n_new = end - start, end - start + added
        first_new = start + delta + (1 if n_new else 0)
        body += f"@@ -{_span(start + 1, n_old)} +{_span(first_new, n_new)} @@\n".encode()
        body += text
        delta += added
    for fix in reversed(fixes):
        new_data[fix.first - 1 : fix.last] = _replacement(fix, old)
    src = fixes[0].source
    fmt = oid_format(src.oid)
    return _header(fixes[0].path, src.oid, blob_id(b"".join(new_data), fmt)) + body


def _span(first: int, count: int) -> str:
    return str(first) if count == 1 else f"{first},{count}"


def to_patch(collected: Collected) -> str:
    """Every offered change as one patch (empty when there is none); only UTF-8 files are
    changed, so it is UTF-8 text."""
    return "".join(file_patch(fixes).decode("utf-8") for fixes in plan(collected).fixes.values())
