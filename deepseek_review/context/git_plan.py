"""A review's git side, as values: the git options, the plan handed to the review (files,
the framed change, the record's pins), and how a change is framed.

:func:`deepseek_review.context.git_change.plan_git` makes the plan.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepseek_review.context.pins import FilePin
from deepseek_review.context.types import ContextFile, ContextLimits, Gathered, Output, Skipped
from deepseek_review.errors import InputError
from deepseek_review.options.table import check, default, name_of
from deepseek_review.records.canonical import sha256_tag
from deepseek_review.util.textsafe import fence_for

if TYPE_CHECKING:
    from deepseek_review.git.diff import Diff, DiffSettings


@dataclass(frozen=True)
class GitOptions:
    """The git options of a review (``ReviewOptions.git``)."""

    diff: str | None = default("diff")
    staged: bool = default("staged")
    rev: str | None = default("rev")
    since_last_review: bool = default("since_last_review")
    diff_context: int = default("diff_context")
    function_context: bool = default("function_context")
    whole_files: bool = default("whole_files")
    renames: bool = default("renames")
    include_lock_files: bool = default("include_lock_files")
    include_generated: bool = default("include_generated")
    include_binary: bool = default("include_binary")

    def __post_init__(self) -> None:
        check("diff_context", self.diff_context)
        if self.staged and self.diff is not None:
            raise InputError(f"{name_of('staged')} and {name_of('diff')} cannot be used together")
        if self.rev is not None and (self.diff is not None or self.staged):
            raise InputError(
                f"{name_of('rev')} reads whole files from one commit; a change has its own "
                f"commits ({name_of('diff')}, {name_of('staged')})"
            )

    @property
    def settings(self) -> DiffSettings:
        from deepseek_review.git.diff import DiffSettings

        return DiffSettings(self.diff_context, self.function_context, self.renames)


#: Gathers the working tree's context files (``context.gather_context``'s signature).
GatherFn = Callable[[Path, Sequence[str], ContextLimits, Sequence[Output]], Gathered]


@dataclass(frozen=True)
class GitPlan:
    """What :func:`plan_git` hands the plan: the files, what was left out, the framed change
    and the record's pins."""

    files: list[ContextFile]
    skipped: tuple[Skipped, ...] = ()
    lead: tuple[str, ...] = ()
    """The framed diff, before the whole files in the prompt's context."""
    scanned: tuple[ContextFile, ...] = ()
    """What the secret scan reads besides the files (the diff)."""
    git: dict[str, Any] | None = None
    """The record's pins (:mod:`deepseek_review.context.pins`)."""
    receipt_paths: list[str] = field(default_factory=list)
    diff: Diff | None = None
    """The change (``--diff``, ``--staged``), as made; None when none is reviewed."""
    pins: tuple[FilePin, ...] = ()
    """Each file's pin, as :attr:`git` lists them."""


def frame_diff(diff: Diff) -> str:
    """The change as its own framed part: a heading naming the commits, the patch in a fence
    no line of it can close, and what was left out."""
    fence = diff.fence or fence_for(diff.text)
    sep = "" if diff.text.endswith("\n") or not diff.text else "\n"
    n = len(diff.shown)
    head = f"## Change from {diff.rng.label}: {n} file{'s' if n != 1 else ''} shown\n\n"
    if diff.hunks:  # a part of a review in parts: the file's other hunks are in other parts
        head += "".join(
            f"Of {p} only {_hunks_named(a, b, of)} shown here.\n" for p, a, b, of in diff.hunks
        )
        head += "\n"
    left = ["\nLeft out of the change:\n"] if diff.left_out else []
    left += [f"- {p} ({w})\n" for p, w in diff.left_out]
    return "".join([head, fence, "diff\n", diff.text, sep, fence, "\n", *left])  # one copy


def _hunks_named(first: int, last: int, of: int) -> str:
    return f"hunk {first} of {of} is" if first == last else f"hunks {first}-{last} of {of} are"


def diff_pins(diff: Diff, framed: str) -> dict[str, Any]:
    data = framed.encode("utf-8")
    pins = {
        **diff.settings.to_json(),
        "sha256": sha256_tag(data),
        "bytes": len(data),
        "shown": [c.path for c in diff.shown],
        "left_out": [list(x) for x in diff.left_out],
    }
    if diff.hunks:  # request record version 3
        pins["hunks"] = [{"path": p, "hunks": [a, b]} for p, a, b, _ in diff.hunks]
    return pins


def plan(
    files: list[ContextFile],
    skipped: tuple[Skipped, ...],
    change: tuple[Diff, str] | None,
    pins: list[FilePin],
    commits: dict[str, str],
) -> GitPlan:
    """The plan of the files, what was left out, the change (with its framed text) and the
    pins; no ``git`` object when nothing was read from git."""
    lead: tuple[str, ...] = ()
    scanned: tuple[ContextFile, ...] = ()
    diff_json: dict[str, Any] | None = None
    if change is not None:
        diff, framed = change
        lead = (framed + ("\n" if files else ""),)
        scanned = (ContextFile("<the change>", diff.text, "", 0),)
        diff_json = diff_pins(diff, framed)
        rng = diff.rng
        commits = {"base": rng.base, "head": rng.head, "merge_base": rng.merge_base or ""}
    git: dict[str, Any] | None = None  # nothing in git: the record is as before pinning
    if change is not None or any(p.blob is not None for p in pins):
        git = {
            "commits": {k: commits.get(k) or None for k in ("base", "head", "merge_base")},
            "diff": diff_json,
            "files": [p.to_json() for p in pins],
        }
    paths = [*(diff_json["shown"] if diff_json else []), *(f.path for f in files)]
    made = None if change is None else change[0]
    receipt = list(dict.fromkeys(paths))
    return GitPlan(files, skipped, lead, scanned, git, receipt, made, tuple(pins))
