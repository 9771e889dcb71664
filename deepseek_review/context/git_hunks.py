"""A change cut at file and hunk boundaries, for a review in parts (``run --split`` with
``--diff`` or ``--staged``): each file's section of the patch as its header and its hunks
(:func:`file_changes`), the change with only some files or runs of hunks (:func:`select`,
which ``verify`` applies to the change it makes again), and a part's git plan
(:func:`part_plan`). A hunk is never cut: a run of hunks is whole hunks, each beginning at its
``@@`` line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from deepseek_review.context.git_plan import GitPlan, frame_diff, plan
from deepseek_review.context.types import ContextFile
from deepseek_review.errors import InputError
from deepseek_review.git.diff import Change, Diff
from deepseek_review.git.patch import parse_patch

#: The runs of hunks chosen of each file, by path (first, last; 1-based, inclusive); an empty
#: list: the file's whole change.
Chosen = Mapping[str, Sequence[tuple[int, int]]]

_HUNK = "\n@@ "


@dataclass(frozen=True)
class FileChange:
    """One file's section of the patch: its header (``diff --git`` to before the first
    ``@@``) and its hunks. A type change (two sections) is one header and no hunks."""

    change: Change
    head: str
    hunks: tuple[str, ...]

    @property
    def path(self) -> str:
        return self.change.path

    @property
    def text(self) -> str:
        return self.head + "".join(self.hunks)

    def runs(self, first: int, last: int) -> str:
        """The header and hunks ``first`` to ``last``."""
        return self.head + "".join(self.hunks[first - 1 : last])


def _cut(text: str) -> tuple[str, tuple[str, ...]]:
    """A section's header and hunks (no line of a hunk starts with ``@@ ``: each has its
    ``+``, ``-``, space or ``\\``)."""
    at = text.find(_HUNK)
    if at < 0:
        return text, ()
    starts = []
    while at >= 0:
        starts.append(at + 1)
        at = text.find(_HUNK, at + 1)
    ends = [*starts[1:], len(text)]
    return text[: starts[0]], tuple(text[s:e] for s, e in zip(starts, ends, strict=True))


def file_changes(diff: Diff) -> list[FileChange]:
    """Each shown file's section of ``diff``'s patch, cut into its header and hunks."""
    data = diff.text.encode("utf-8")
    patch = parse_patch(data, listing=False)
    if len(patch.starts) != sum(c.sections for c in diff.shown):
        raise InputError(
            f"the change {diff.rng.label} has {len(patch.starts)} sections for "
            f"{len(diff.shown)} files: cannot cut it at file boundaries"
        )
    out = []
    i = 0
    for change in diff.shown:
        j = i + change.sections
        text = data[patch.starts[i] : patch.end(j - 1)].decode("utf-8")
        head, hunks = (text, ()) if change.sections != 1 else _cut(text)
        out.append(FileChange(change, head, hunks))
        i = j
    return out


def select(diff: Diff, chosen: Chosen, changes: Sequence[FileChange] | None = None) -> Diff:
    """``diff`` with only the files ``chosen`` names, in the patch's order, each whole or only
    its runs of hunks (:class:`InputError` for a run the file does not have). ``changes``:
    ``diff``'s :func:`file_changes`, when the caller cut it already (once for every part)."""
    texts: list[str] = []
    shown: list[Change] = []
    hunks: list[tuple[str, int, int, int]] = []
    for fc in file_changes(diff) if changes is None else changes:
        runs = chosen.get(fc.path)
        if runs is None:
            continue
        shown.append(fc.change)
        if not runs:
            texts.append(fc.text)
            continue
        n = len(fc.hunks)
        for first, last in runs:
            if not 1 <= first <= last <= n:
                raise InputError(f"{fc.path}: its change has no hunks {first}-{last} ({n} hunks)")
            hunks.append((fc.path, first, last, n))
        texts.append(fc.head + "".join(h for a, b in runs for h in fc.hunks[a - 1 : b]))
    missing = sorted(set(chosen) - {c.path for c in shown})
    if missing:
        raise InputError(f"the change {diff.rng.label} does not show {', '.join(missing)}")
    return Diff(
        diff.rng, diff.settings, "".join(texts), tuple(shown), diff.left_out, None, tuple(hunks)
    )


def part_plan(
    whole: GitPlan,
    files: Sequence[ContextFile],
    chosen: Chosen,
    changes: Sequence[FileChange] | None = None,
) -> GitPlan:
    """The git plan of one part of a review in parts: ``chosen``'s part of the change (none
    when empty; ``changes``: see :func:`select`) and the whole ``files``, each pinned as in
    ``whole``."""
    pins = {p.path: p for p in whole.pins}
    part_pins = [
        pins[f.path]._replace(lines=None if f.lines is None else f.lines.span)
        for f in files
        if f.path in pins
    ]
    commits: dict[str, str] = {}
    if whole.git is not None:
        commits = {k: v for k, v in whole.git["commits"].items() if isinstance(v, str)}
    change = None
    if chosen and whole.diff is not None:
        part = select(whole.diff, chosen, changes)
        change = (part, frame_diff(part))
    return plan(list(files), (), change, part_pins, commits)
