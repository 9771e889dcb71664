"""A change's range worked out, and its ``diff-tree`` started as soon as its command is
known: by the front door, right after the options are read, so git diffs while the rest of
planning is imported and checked (:func:`head_start`).

Planning takes the range worked out here (the same call, moments later: the refs are read
once) and the running git only when it is the very command it would run
(:func:`.gitstream.take`); otherwise the early one is stopped and planning starts its own.
The call that started it drops it when it ends (:func:`.gitstream.drop_early`), so nothing
of it outlives that call. Nothing is reported here: a range that does not resolve starts
nothing, and planning says why in its own words and order.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .errors import InputError, ReviewError
from .gitdiff import Range, diff_command, resolve_range
from .gitoptions import GitOptions
from .gitread import resolve_commit
from .gitstream import early_note, start_early
from .options import name_of
from .repo import git_output


@dataclass(frozen=True)
class _Started:
    """What a head start was made from: the change asked for and its range."""

    diff: str | None
    rng: Range


def change_range(root: Path, opts: GitOptions) -> Range:
    """The change ``opts`` reviews: ``--diff``'s range, or the index against ``HEAD`` (as
    :func:`head_start` worked it out moments ago, in this call, when it did)."""
    early = early_note(root)
    if isinstance(early, _Started) and early.diff == opts.diff:
        return early.rng
    if opts.diff is not None:
        return resolve_range(root, opts.diff, name_of("diff"))
    base = resolve_commit(root, "HEAD", name_of("staged"))
    tree = git_output(root, "write-tree")
    if tree is None:
        raise InputError(f"{name_of('staged')}: the index cannot be written as a tree (a merge?)")
    return Range(base, tree.decode().strip())


def head_start(root: Path, opts: GitOptions) -> None:
    """Start the change's ``diff-tree`` now, when ``opts`` review one whose range is known
    without planning (not ``since_last_review``, which reads earlier reviews first)."""
    if (opts.diff is None and not opts.staged) or opts.since_last_review:
        return
    try:
        rng = change_range(root, opts)
    except ReviewError:
        return  # planning says why, after what it checks first
    start_early(root, *diff_command(rng, opts.settings), note=_Started(opts.diff, rng))
