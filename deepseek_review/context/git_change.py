"""A review's context from git: whole files (from the working tree, or from ``--rev``'s
commit), pinned, and the change of ``--diff`` or ``--staged``: the range resolved, the patch
made with its noise rules, framed as its own part and planned with the whole files asked for.

:func:`plan_git` is the one call the review's plan makes.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from deepseek_review.context.git_files import gather_at_commit, new_versions
from deepseek_review.context.git_plan import GatherFn, GitOptions, GitPlan, frame_diff, plan
from deepseek_review.context.pins import FilePin, auto_pin, pin_of
from deepseek_review.context.types import (
    ContextFile,
    ContextLimits,
    Output,
    Skipped,
    excluded,
    split_exclusions,
    written_by_tool,
)
from deepseek_review.errors import InputError
from deepseek_review.git.diff import (
    LOCK_FILES,
    WHY_BINARY,
    WHY_GENERATED,
    WHY_LOCK,
    Change,
    Decide,
    Range,
    base_marks,
    binary_by_attribute,
    make_diff,
    resolve_range,
)
from deepseek_review.git.objects import resolve_commit
from deepseek_review.git.runner import git_output, has_unsafe_chars
from deepseek_review.options.table import name_of
from deepseek_review.util.logs import log

#: Narrows a change's range to what no earlier review covered (``since_last_review``).
Narrow = Callable[[Range], Range]


def plan_git(
    opts: GitOptions,
    root: Path,
    specs: Sequence[str],
    limits: ContextLimits,
    outputs: Sequence[Output],
    gather: GatherFn,
    *,
    narrow: Narrow | None = None,
) -> GitPlan:
    """The context of a review: whole files (pinned) and the change, framed. ``narrow``
    turns the change's range into the part not yet reviewed (``since_last_review``: the
    caller knows where the earlier reviews are and which of them count)."""
    if opts.diff is None and not opts.staged:
        if opts.since_last_review:
            raise InputError(f"{name_of('since_last_review')} needs {name_of('diff')}")
        if opts.rev is not None:
            head = resolve_commit(root, opts.rev, name_of("rev"))
            at, unsent = gather_at_commit(root, head, specs, limits, outputs)
            pins = [pin_of(f, b, head) for f, b in at]
            return plan([f for f, _ in at], tuple(unsent), None, pins, {"head": head})
        gathered = gather(root, specs, limits, outputs)
        return plan(list(gathered), gathered.skipped, None, auto_pin(root, gathered), {})
    return plan_change(opts, root, specs, limits, outputs, gather, narrow=narrow)


def plan_change(
    opts: GitOptions,
    root: Path,
    specs: Sequence[str],
    limits: ContextLimits,
    outputs: Sequence[Output],
    gather: GatherFn,
    *,
    narrow: Narrow | None = None,
) -> GitPlan:
    """The plan of a review of a change: the change framed first, then the whole files
    ``specs`` names (and, with ``whole_files``, the new version of each changed file)."""
    rng = change_range(root, opts)
    if narrow is not None:
        rng = narrow(rng)
    specs, excludes = split_exclusions(specs)
    rules = _NoiseRules(root, rng.base, opts, outputs, excludes)
    diff = make_diff(root, rng, opts.settings, rules)
    if not diff.shown:
        why = f" ({diff.left_out[0][0]}: {diff.left_out[0][1]})" if diff.left_out else ""
        what = "the staged change" if opts.staged else f"the change {rng.spec or rng.label}"
        raise InputError(f"{what} shows nothing to review{why}")
    framed = frame_diff(diff)
    size = len(framed) if framed.isascii() else len(framed.encode("utf-8"))
    if size > limits.max_context_bytes:
        raise InputError(
            f"the change {rng.label} is {size} bytes as framed, over "
            f"{name_of('max_context_bytes')} {limits.max_context_bytes} (fewer context lines: "
            f"{name_of('diff_context')}; or review it in parts: {name_of('split')})"
        )
    files: list[ContextFile] = []
    skipped: tuple[Skipped, ...] = ()
    pins = []
    if specs:
        gathered = gather(root, [*specs, *(f":(exclude){x}" for x in excludes)], limits, outputs)
        files, skipped, pins = list(gathered), gathered.skipped, auto_pin(root, gathered)
    whole = diff
    if not opts.whole_files:
        by_change = rules.binary_by_change
        whole = replace(diff, shown=tuple(c for c in diff.shown if c.path in by_change))
        for c in whole.shown:
            log.warning("%s: binary only by the change's .gitattributes; sent whole", c.path)
    if whole.shown:
        for f, blob in new_versions(root, whole, limits):
            if all(g.path != f.path for g in files):
                files.append(f)
                pins.append(FilePin(f.path, blob=blob, commit=rng.head))
    left = tuple(Skipped(p, _put_back(why), why) for p, why in diff.left_out)
    return plan(files, skipped + left, (diff, framed), pins, {})


def change_range(root: Path, opts: GitOptions) -> Range:
    """The change ``opts`` reviews: ``--diff``'s range, or the index against ``HEAD``."""
    if opts.diff is not None:
        return resolve_range(root, opts.diff, name_of("diff"))
    base = resolve_commit(root, "HEAD", name_of("staged"))
    tree = git_output(root, "write-tree")
    if tree is None:
        raise InputError(f"{name_of('staged')}: the index cannot be written as a tree (a merge?)")
    return Range(base, tree.decode().strip())


#: The option that puts back what each noise rule leaves out.
_PUT_BACK = {
    WHY_LOCK: "include_lock_files",
    WHY_GENERATED: "include_generated",
    WHY_BINARY: "include_binary",
}


def _put_back(why: str) -> str:
    flag = _PUT_BACK.get(why)
    return f"{why} ({name_of(flag)} puts it back)" if flag else why


class _NoiseRules:
    """What a review leaves out of a change: the tool's own output, lock files, generated
    (as the change's ``base`` marks them) and binary files (each unless asked for).

    A file git shows as binary only because the change's own ``.gitattributes`` mark it
    ``-diff`` is not noise: it is kept, and :attr:`binary_by_change` names it so that its
    new version is sent whole (the patch shows none of its lines)."""

    def __init__(
        self,
        root: Path,
        base: str,
        opts: GitOptions,
        outputs: Sequence[Output],
        excludes: Sequence[str] = (),
    ) -> None:
        self.root, self.base, self.opts, self.outputs = root, base, opts, outputs
        self.excludes = excludes
        self.binary_by_change: set[str] = set()

    def __call__(self, changes: list[Change]) -> Decide:
        opts, outputs = self.opts, self.outputs
        paths = [c.path for c in changes]
        marks = base_marks(self.root, self.base, paths)
        generated = set() if opts.include_generated else marks.generated
        names = {p.rpartition("/")[2] for c in changes for p in (c.path, c.old_path)}
        if ".gitattributes" in names:  # else the change marks nothing itself
            self.binary_by_change = binary_by_attribute(self.root, paths) - marks.binary
        by_change = self.binary_by_change

        def decide(change: Change, binary: bool) -> str | None:
            path = change.path
            for output in outputs:
                if output.holds(path):
                    return output.what
            if written_by_tool(path):
                return "written by deepseek-review"
            if self.excludes and excluded(path, self.excludes):
                return f"matches {name_of('exclude')}"
            if not opts.include_lock_files and path.rpartition("/")[2] in LOCK_FILES:
                return WHY_LOCK
            if path in generated:
                return WHY_GENERATED
            if binary and not opts.include_binary and path not in by_change:
                return WHY_BINARY
            if has_unsafe_chars(path):
                return "name holds control characters"
            return None

        return decide
