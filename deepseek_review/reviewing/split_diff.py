"""Planning a split review of a change (``run --split`` with ``--diff`` or ``--staged``).

As files are planned (:mod:`.split`): a file's change is a unit, files of one folder stay
together and a test goes with what it tests; a file whose change alone is larger than a part
is cut between its hunks into runs that each fit, never inside a hunk; a hunk larger than a
part is listed as not reviewed, with why. The whole files asked for besides the change (``-c``,
``--whole-files``) are units too, each larger than a part cut into ranges of its lines as
:mod:`.split` cuts files. Within a part, the change comes first, in the
patch's order, then the files. Deterministic: the same change, files and window give the
same plan.
"""

from __future__ import annotations

from collections.abc import Sequence

from deepseek_review.context.git_hunks import FileChange
from deepseek_review.context.types import ContextFile
from deepseek_review.options.table import name_of
from deepseek_review.records.canonical import sha256_tag
from deepseek_review.reviewing.split import (
    NotReviewed,
    PlannedFile,
    SplitPlan,
    count_tokens,
    groups_of,
    pack,
    planned_files,
    split_plan_of,
)


def hunk_note_tokens(path: str) -> int:
    """What the line naming a run of hunks (``Of PATH only hunks 3-5 of 9 are shown here.``)
    adds to a part's prompt."""
    return count_tokens(f"Of {path} only hunks 99999-99999 of 99999 are shown here.\n")


def plan_change_parts(
    changes: Sequence[FileChange],
    files: Sequence[ContextFile],
    *,
    window: int,
    max_tokens: int,
    margin: int,
    base_tokens: int,
    not_reviewed: Sequence[NotReviewed] = (),
) -> SplitPlan:
    """The parts of a change (``changes``, in the patch's order) and of the whole ``files``
    asked for besides, every part's prompt at most ``window - max_tokens - margin`` tokens,
    ``base_tokens`` of it (the template, the request, the note and the change's framing)
    the same in each."""
    room = window - max_tokens - margin - base_tokens
    left = list(not_reviewed)
    units: list[PlannedFile] = []
    for fc in changes:
        units += _change_units(fc, room, left)
    whole, large = planned_files(files, room)  # a file larger than a part: in line ranges
    units += whole
    left += large
    order = {fc.path: i for i, fc in enumerate(changes)}

    def in_prompt(p: PlannedFile) -> tuple[int, int, str, tuple[int, int]]:
        if p.change:
            return (0, order[p.path], "", (0, 0))
        return (1, 0, p.path, p.lines or (0, 0))

    parts = [sorted(part, key=in_prompt) for part in pack(groups_of(units), room)]
    return split_plan_of(
        parts,
        window=window,
        max_tokens=max_tokens,
        margin=margin,
        base_tokens=base_tokens,
        not_reviewed=left,
    )


def _change_units(fc: FileChange, room: int, left: list[NotReviewed]) -> list[PlannedFile]:
    """A file's change as one unit when it fits a part, else as runs of its hunks that each
    do (a hunk larger than a part: listed in ``left``)."""
    tokens = count_tokens(fc.text)
    if tokens <= room:
        return [_unit(fc, fc.text, tokens, None)]
    if not fc.hunks:
        left.append(NotReviewed(fc.path, f"its change is about {tokens} tokens, over a part's "
                                f"room of {room}, and has no hunks to cut it at"))  # fmt: skip
        return []
    frame = count_tokens(fc.head) + hunk_note_tokens(fc.path)
    n = len(fc.hunks)
    out: list[PlannedFile] = []
    run: list[int] = []
    used = frame

    def flush() -> None:
        if run:
            text = fc.runs(run[0], run[-1])
            cost = count_tokens(text) + hunk_note_tokens(fc.path)
            out.append(_unit(fc, text, cost, (run[0], run[-1], n)))
            run.clear()

    for k, hunk in enumerate(fc.hunks, start=1):
        cost = count_tokens(hunk)
        if frame + cost > room:
            flush()
            used = frame
            left.append(NotReviewed(fc.path, _hunk_too_large(k, n, frame + cost, room), (k, k)))
            continue
        if run and used + cost > room:
            flush()
            used = frame
        run.append(k)
        used += cost
    flush()
    return out


def _unit(
    fc: FileChange, text: str, tokens: int, hunks: tuple[int, int, int] | None
) -> PlannedFile:
    data = text.encode("utf-8")
    return PlannedFile(fc.path, sha256_tag(data), len(data), tokens, None, True, hunks)


def _hunk_too_large(k: int, n: int, tokens: int, room: int) -> str:
    return (
        f"hunk {k} of {n} of its change alone is about {tokens} tokens, over a part's room of "
        f"{room} (a hunk is never cut; fewer context lines: {name_of('diff_context')})"
    )
