"""Planning a split review (``run --split``), the parts a context too large for the window is
reviewed in.

Pure and deterministic: the same files, window and caps give the same plan, byte for byte
(:func:`plan_parts`). A part's prompt (the template's framing, the part's note, its files)
plus ``--max-tokens`` plus a margin fits the window. Files that belong together stay
together: a folder is one group, and a test joins the file it tests (``tests/test_x.py``
goes with ``x.py``); groups are taken in path order and a part is closed when the next group
does not fit, a group larger than a part being cut between its files. Every file is in
exactly one part or listed as not reviewed, with why.

Tokens are counted by :func:`count_tokens` alone (:mod:`deepseek_review.chat.tokens`'s
estimate), so a better counter replaces it in one place.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Protocol, TypeVar

from deepseek_review.chat.tokens import (
    BYTES_PER_TOKEN,
    MESSAGE_OVERHEAD,
    estimate_tokens,
    utf8_size,
)
from deepseek_review.context.types import ContextFile
from deepseek_review.util.textsafe import fence_for, plural

#: What :func:`count_tokens` is, as the split record names it.
ESTIMATOR = f"bytes/{BYTES_PER_TOKEN}, +4 a text"
#: Room kept for the part's note ("part i of n", what the other parts cover), in bytes.
NOTE_MAX_BYTES = 2048
#: The longest note that names the other parts one by one; longer, it counts their files by
#: folder, which says the same in fewer tokens (every part carries its note).
PART_BY_PART_MAX_BYTES = 1024
_TEST_NAME = re.compile(r"\A(?:test_(?P<a>.+)|(?P<b>.+?)(?:_test|\.test|\.spec|_spec))\Z")


_BYTES_PER_TOKEN: ContextVar[float] = ContextVar("split_bytes_per_token", default=4.0)


@contextmanager
def counting(bytes_per_token: float | None) -> Iterator[None]:
    """Inside, :func:`count_tokens` counts ``bytes_per_token`` bytes a token (what the server
    reported before, calibrated: :mod:`deepseek_review.reviewing.calibration`), never more
    than the plain estimate's :data:`BYTES_PER_TOKEN`; None: the plain estimate."""
    bpt = float(BYTES_PER_TOKEN) if bytes_per_token is None else bytes_per_token
    token = _BYTES_PER_TOKEN.set(min(float(BYTES_PER_TOKEN), bpt))
    try:
        yield
    finally:
        _BYTES_PER_TOKEN.reset(token)


def count_tokens(text: str) -> int:
    """The tokens of ``text``, as planning counts them (the one count it uses)."""
    bpt = _BYTES_PER_TOKEN.get()
    if bpt >= BYTES_PER_TOKEN:
        return estimate_tokens([text])
    return math.ceil(utf8_size(text) / bpt) + MESSAGE_OVERHEAD


def estimator() -> str:
    """How :func:`count_tokens` counts now, as the split record says it."""
    bpt = _BYTES_PER_TOKEN.get()
    if bpt >= BYTES_PER_TOKEN:
        return ESTIMATOR
    return f"bytes/{bpt:.3f} (calibrated from the server's earlier counts), +4 a text"


def margin_for(window: int) -> int:
    """The tokens kept free in every request: a tenth of the window, at least 256 (the
    server's chat template, and an estimate that counts low)."""
    return max(256, window // 10)


@dataclass(frozen=True)
class PlannedFile:
    path: str
    sha256: str
    size: int
    tokens: int
    """What the file adds to its part's prompt: its text, heading, fences and list line."""
    lines: tuple[int, int] | None = None
    """The lines sent (1-based, inclusive) when the file is larger than a part: each of its
    ranges is planned as a file of its own; None: the whole file."""
    change: bool = False
    """The file's change (``--diff``, ``--staged``), not its text: sha256 and size are of its
    section of the patch (or of the runs of hunks sent)."""
    hunks: tuple[int, int, int] | None = None
    """(first, last, of): only these hunks of the file's change, when the change alone is
    larger than a part; None: the whole change."""


@dataclass(frozen=True)
class Part:
    number: int
    files: tuple[PlannedFile, ...]

    @property
    def tokens(self) -> int:
        return sum(f.tokens for f in self.files)


@dataclass(frozen=True)
class NotReviewed:
    path: str
    reason: str
    hunks: tuple[int, int] | None = None
    """Only these hunks of the file's change are not reviewed (each larger than a part)."""


@dataclass(frozen=True)
class SplitPlan:
    window: int
    max_tokens: int
    margin: int
    base_tokens: int
    """Every part's prompt without its files: the template, the prompt, the note's room."""
    parts: tuple[Part, ...]
    not_reviewed: tuple[NotReviewed, ...]
    estimator: str = ESTIMATOR
    """How tokens were counted (:func:`estimator`)."""
    bytes_per_token: float = BYTES_PER_TOKEN

    @property
    def part_cap(self) -> int:
        """The most tokens one part's prompt may have."""
        return self.window - self.max_tokens - self.margin

    def part_tokens(self, part: Part) -> int:
        """A part's whole prompt, estimated (at most :attr:`part_cap`)."""
        return self.base_tokens + part.tokens


def subject_of(path: str) -> str | None:
    """The name of the file a test file tests (``tests/test_x.py`` → ``x.py``); None when
    ``path`` is not named as a test."""
    name = path.rpartition("/")[2]
    stem, dot, ext = name.rpartition(".")
    if not dot or not stem:
        return None
    m = _TEST_NAME.match(stem)
    if m is None:
        return None
    return f"{m.group('a') or m.group('b')}.{ext}"


def file_tokens(f: ContextFile, count: int) -> int:
    """What ``f`` adds to a prompt of up to ``count`` files: its heading (``## File i of n``),
    its fences, its text and its line in the file list."""
    fence = fence_for(f.text)
    digits = len(str(count))
    frame = (
        f"## File {'9' * digits} of {'9' * digits}: {f.path}\n\n{fence}{'x' * 12}\n\n"
        f"{fence}\n\n- {f.path} ({f.size} bytes)\n"
    )
    return count_tokens(frame) + count_tokens(f.text)


class _Pathed(Protocol):
    @property
    def path(self) -> str: ...


_P = TypeVar("_P", bound=_Pathed)


def groups_of(files: Sequence[_P]) -> list[list[_P]]:
    """The files in groups that belong together, in a fixed order: by folder (a test in the
    folder of the file it tests, when exactly one file has that name), by path within."""
    ordered = sorted(files, key=lambda f: f.path)
    by_name: dict[str, dict[str, None]] = {}
    for f in ordered:
        named = by_name.setdefault(f.path.rpartition("/")[2], {})
        if subject_of(f.path) is None:  # a file's ranges: once
            named[f.path] = None
    groups: dict[str, list[_P]] = {}
    for f in ordered:
        folder = f.path.rpartition("/")[0]
        subject = subject_of(f.path)
        found = by_name.get(subject or "", {})
        if len(found) == 1:
            folder = next(iter(found)).rpartition("/")[0]
        groups.setdefault(folder, []).append(f)
    return [
        sorted(groups[k], key=lambda f: (subject_of(f.path) is not None, f.path))
        for k in sorted(groups)
    ]


def plan_parts(
    files: Sequence[ContextFile],
    *,
    window: int,
    max_tokens: int,
    margin: int,
    base_tokens: int,
    not_reviewed: Sequence[NotReviewed] = (),
) -> SplitPlan:
    """The parts of ``files`` (every part's prompt at most ``window - max_tokens - margin``
    tokens, ``base_tokens`` of it the same in each). A file that fits in no part is listed
    as not reviewed. The caller checks that the cap leaves room for a file at all."""
    cap = window - max_tokens - margin
    room = cap - base_tokens
    left = list(not_reviewed)
    count = len(files)
    known: dict[int, int] = {}
    files, large = _ranged(files, room, count, known)
    left += large
    groups = [[_planned(f, count, known) for f in group] for group in groups_of(files)]
    return split_plan_of(
        pack(groups, room),
        window=window,
        max_tokens=max_tokens,
        margin=margin,
        base_tokens=base_tokens,
        not_reviewed=left,
    )


def pack(groups: Sequence[Sequence[PlannedFile]], room: int) -> list[list[PlannedFile]]:
    """``groups`` in parts of at most ``room`` tokens each, in order: a group that does not
    fit the part being filled starts the next one, and one larger than a part is cut
    between its files (each of which fits)."""
    parts: list[list[PlannedFile]] = []
    current: list[PlannedFile] = []
    used = 0
    for planned in groups:
        cost = sum(p.tokens for p in planned)
        if cost <= room - used:
            current += planned
            used += cost
            continue
        if cost <= room:  # the group fits a part of its own: it starts one
            if current:
                parts.append(current)
            current, used = list(planned), cost
            continue
        for p in planned:  # a group larger than a part: cut between its files
            if p.tokens <= room - used:
                current.append(p)
                used += p.tokens
            else:
                if current:
                    parts.append(current)
                current, used = [p], p.tokens
    if current:
        parts.append(current)
    return parts


def split_plan_of(
    parts: Sequence[Sequence[PlannedFile]],
    *,
    window: int,
    max_tokens: int,
    margin: int,
    base_tokens: int,
    not_reviewed: Sequence[NotReviewed],
) -> SplitPlan:
    """The plan of ``parts`` (numbered from 1), counted as :func:`count_tokens` counts now."""
    return SplitPlan(
        window=window,
        max_tokens=max_tokens,
        margin=margin,
        base_tokens=base_tokens,
        parts=tuple(Part(i, tuple(p)) for i, p in enumerate(parts, start=1)),
        not_reviewed=tuple(sorted(not_reviewed, key=lambda n: (n.path, n.hunks or (0, 0)))),
        estimator=estimator(),
        bytes_per_token=_BYTES_PER_TOKEN.get(),
    )


#: What a range's note under its heading (``Only lines 120-260 of 900 ...``) may add.
RANGE_NOTE_TOKENS = 48


def _planned(f: ContextFile, count: int, known: dict[int, int] | None = None) -> PlannedFile:
    """``f`` as planned; ``known``: the :func:`file_tokens` of files counted already (by
    ``id``), and where this one's is kept."""
    lines = None if f.lines is None else f.lines.span
    extra = 0 if lines is None else RANGE_NOTE_TOKENS
    tokens = None if known is None else known.get(id(f))
    if tokens is None:
        tokens = file_tokens(f, count)
        if known is not None:
            known[id(f)] = tokens
    return PlannedFile(f.path, f.sha256, f.size, tokens + extra, lines)


def _ranged(
    files: Sequence[ContextFile], room: int, count: int, known: dict[int, int]
) -> tuple[list[ContextFile], list[NotReviewed]]:
    """The files, each larger than a part's ``room`` cut into ranges of its lines that fit
    (:func:`deepseek_review.context.ranges.cut_lines`: at headings, top-level definitions,
    blank lines); one with a single line larger than a part is not reviewed."""
    from deepseek_review.context.ranges import cut_lines, file_range

    out: list[ContextFile] = []
    left: list[NotReviewed] = []
    for f in files:
        tokens = file_tokens(f, count)
        if tokens <= room:
            known[id(f)] = tokens  # ``files`` holds ``f``: its id stays its own
            out.append(f)
            continue
        frame = tokens - count_tokens(f.text) + RANGE_NOTE_TOKENS + MESSAGE_SLACK
        budget = (room - frame) * _BYTES_PER_TOKEN.get() / BYTES_PER_TOKEN  # its tokens
        cuts = cut_lines(f.text, max(1, int(budget)), path=f.path)
        ranges = [file_range(f, c.first, c.last) for c in cuts]
        over = [r for r in ranges if _planned(r, count, known).tokens > room]
        if over or not ranges:
            left.append(NotReviewed(f.path, too_large(tokens, room)))
            for r in ranges:  # not planned: their ids may be taken again
                known.pop(id(r), None)
            continue
        out += ranges
    return out, left


def planned_files(
    files: Sequence[ContextFile], room: int
) -> tuple[list[PlannedFile], list[NotReviewed]]:
    """``files`` as planned units of a part's ``room``, each larger than that cut into ranges
    of its lines as :func:`plan_parts` cuts them; those that cannot be cut, not reviewed."""
    count = len(files)
    known: dict[int, int] = {}
    kept, left = _ranged(files, room, count, known)
    return [_planned(f, count, known) for f in kept], left


#: The estimate's per-text overhead, counted twice for a file (its frame and its text).
MESSAGE_SLACK = 8


def too_large(tokens: int, room: int) -> str:
    """Why a file is not reviewed: it cannot be cut into ranges that fit a part."""
    return (
        f"a line of it alone is larger than one part (the file is about {tokens} tokens; a "
        f"part has room for {room})"
    )


def folders_line(files: Sequence[PlannedFile]) -> str:
    """What a part covers, by folder: ``src/pkg/ (3 files), README.md``."""
    counts: dict[str, int] = {}
    for f in files:
        folder = f.path.rpartition("/")[0]
        counts[folder] = counts.get(folder, 0) + 1
    out = []
    for folder, n in counts.items():
        if n == 1:
            out.append(named(next(f for f in files if f.path.rpartition("/")[0] == folder)))
        else:
            out.append(f"{folder or '.'}/ ({plural(n, 'file')})")
    return ", ".join(out)


def named(f: PlannedFile) -> str:
    """A planned file in words: its path, and the hunks of its change when only some are."""
    if f.hunks is None:
        return f.path
    first, last, of = f.hunks
    which = f"hunk {first}" if first == last else f"hunks {first}-{last}"
    return f"{f.path} ({which} of {of} of its change)"


def part_note(plan: SplitPlan, part: Part) -> str:
    """The words before the review request of ``part`` (see :func:`part_notes`)."""
    return part_notes(plan)[part.number - 1]


def part_notes(plan: SplitPlan) -> list[str]:
    """The words before each part's review request: which part it is, and what the others
    cover (so that the model does not report as missing what another part has): part by
    part (at most :data:`PART_BY_PART_MAX_BYTES`), else the files of the others counted by
    folder; at most
    :data:`NOTE_MAX_BYTES` bytes each (the room planning kept). Linear in the files, and in
    the parts for each part."""
    n = len(plan.parts)
    tail = "Do not report as missing what the other parts cover"
    lines = [f"- part {p.number}: {folders_line(p.files)}" for p in plan.parts]
    sizes = [len(x.encode("utf-8")) + 1 for x in lines]
    total = sum(sizes)
    by_depth = [_folder_counts(plan, depth) for depth in (2, 1)]
    ordered = [sorted(whole.items()) for whole, _ in by_depth]
    notes = []
    changed = any(f.change for p in plan.parts for f in p.files)
    what = "change and files" if changed else "files"
    for i, part in enumerate(plan.parts):
        head = (
            f"This is part {part.number} of {n} of a review split to fit the model's context: "
            f"review only the {what} below. "
        )
        if len(head) + len(tail) + 2 + total - sizes[i] <= PART_BY_PART_MAX_BYTES:
            notes.append(head + tail + ":\n" + "\n".join(lines[:i] + lines[i + 1 :]))
            continue
        text = ""
        for (_, own), folders in zip(by_depth, ordered, strict=True):
            text = _others(head + tail + ", by folder (how many files):\n", folders, own[i])
            if len(text.encode("utf-8")) <= NOTE_MAX_BYTES:
                break
        else:
            more = "\n- ..."
            data = text.encode("utf-8")[: NOTE_MAX_BYTES - len(more)]
            text = data.decode("utf-8", "ignore").rpartition("\n")[0] + more
        notes.append(text)
    return notes


def _others(head: str, folders: list[tuple[str, int]], own: dict[str, int]) -> str:
    """``head`` and the files the other parts hold, counted by folder (in order), a line for
    each top folder (``- src/: 2 files; in api/ 4, cli/ 9``: every part carries this, so it
    is kept short), no longer than needed to tell it is over :data:`NOTE_MAX_BYTES` (the note
    then cuts it there): a part's note costs what it shows, not the whole repository's."""
    lines: list[str] = []
    size = len(head.encode("utf-8"))
    top, direct = "", 0  # the group being written
    subs: list[str] = []

    def line() -> str:
        if not top.endswith("/"):  # the top folder's own files
            return f"- {top}: {plural(direct, 'file')}"
        said = [plural(direct, "file")] if direct else []
        if subs:
            said.append("in " + ", ".join(subs))
        return f"- {top}: " + "; ".join(said)

    for k, v in folders:
        n = v - own.get(k, 0)
        if not n:
            continue
        head_of = k.partition("/")[0] + "/" if k.endswith("/") else k
        if head_of != top:
            if top:
                lines.append(line())
            top, direct, subs = head_of, 0, []
        if k == top:
            direct = n
        else:
            subs.append(f"{k[len(top) :]} {n}")
        size += len(k) - len(top) + 8
        if size > NOTE_MAX_BYTES + 1:
            break
    if top:
        lines.append(line())
    return head + "\n".join(lines)


def _folder_counts(plan: SplitPlan, depth: int) -> tuple[dict[str, int], list[dict[str, int]]]:
    """Files per folder (its first ``depth`` names) in the whole plan, and in each part."""
    whole: dict[str, int] = {}
    per_part = []
    for p in plan.parts:
        own: dict[str, int] = {}
        for f in p.files:
            folder = "/".join(f.path.split("/")[:-1][:depth])
            key = f"{folder}/" if folder else "the top folder"
            own[key] = own.get(key, 0) + 1
            whole[key] = whole.get(key, 0) + 1
        per_part.append(own)
    return whole, per_part
