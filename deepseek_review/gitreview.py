"""A review's git side: the change under review, files read from a commit, and the pins.

:func:`plan_git` is the one call :func:`.pipeline.plan_review` makes: it gathers the whole
files (from the working tree, or from ``--rev``'s commit), makes the diff of ``--diff`` or
``--staged`` as its own framed part, and returns the pins the request record keeps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .context_types import (
    ContextFile,
    ContextLimits,
    Gathered,
    Output,
    Skipped,
    sha256_tag,
    written_by_tool,
)
from .errors import InputError
from .gitdiff import (
    LOCK_FILES,
    WHY_BINARY,
    WHY_GENERATED,
    WHY_LOCK,
    Change,
    Decide,
    Diff,
    DiffSettings,
    Range,
    generated_paths,
    make_diff,
    resolve_range,
)
from .gitfiles import gather_at_commit, new_versions
from .gitread import resolve_commit
from .options import check, default, name_of
from .pinning import FilePin, auto_pin
from .prompt import fence_for
from .repo import git_output, has_unsafe_chars


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
        return DiffSettings(self.diff_context, self.function_context, self.renames)


#: Gathers the working tree's context files (``context.gather_context``'s signature).
GatherFn = Callable[[Path, Sequence[str], ContextLimits, Sequence[Output]], Gathered]


@dataclass(frozen=True)
class GitPlan:
    files: list[ContextFile]
    skipped: tuple[Skipped, ...] = ()
    lead: tuple[str, ...] = ()
    """The framed diff, before the whole files in the prompt's context."""
    scanned: tuple[ContextFile, ...] = ()
    """What the secret scan reads besides the files (the diff)."""
    git: dict[str, Any] | None = None
    """The record's pins (:mod:`.pinning`)."""
    receipt_paths: list[str] = field(default_factory=list)


def plan_git(
    opts: GitOptions,
    root: Path,
    specs: Sequence[str],
    limits: ContextLimits,
    outputs: Sequence[Output],
    gather: GatherFn,
    *,
    topic: str = "",
    out_dir: str = "",
) -> GitPlan:
    """The context of a review: whole files (pinned) and the change, framed. ``topic`` and
    ``out_dir`` (repo-relative) find the last review for ``since_last_review``."""
    if opts.diff is None and not opts.staged:
        if opts.since_last_review:
            raise InputError(f"{name_of('since_last_review')} needs {name_of('diff')}")
        if opts.rev is not None:
            head = resolve_commit(root, opts.rev, name_of("rev"))
            at, unsent = gather_at_commit(root, head, specs, limits, outputs)
            pins = [FilePin(f.path, blob=b, commit=head) for f, b in at]
            return _plan([f for f, _ in at], tuple(unsent), None, pins, {"head": head})
        gathered = gather(root, specs, limits, outputs)
        return _plan(list(gathered), gathered.skipped, None, auto_pin(root, gathered), {})
    rng = _range(root, opts)
    if opts.since_last_review:
        from .sincelast import narrow

        rng = narrow(root, out_dir, topic, rng)
    diff = make_diff(root, rng, opts.settings, _noise_rules(root, opts, outputs))
    if not diff.shown:
        why = f" ({diff.left_out[0][0]}: {diff.left_out[0][1]})" if diff.left_out else ""
        what = "the staged change" if opts.staged else f"the change {rng.spec or rng.label}"
        raise InputError(f"{what} shows nothing to review{why}")
    framed = frame_diff(diff)
    size = len(framed.encode("utf-8"))
    if size > limits.max_context_bytes:
        raise InputError(
            f"the change {rng.label} is {size} bytes as framed, over "
            f"{name_of('max_context_bytes')} {limits.max_context_bytes} (fewer context lines: "
            f"{name_of('diff_context')}; or review it in parts)"
        )
    files: list[ContextFile] = []
    skipped: tuple[Skipped, ...] = ()
    pins = []
    if specs:
        gathered = gather(root, specs, limits, outputs)
        files, skipped, pins = list(gathered), gathered.skipped, auto_pin(root, gathered)
    if opts.whole_files:
        for f, blob in new_versions(root, diff, limits):
            if all(g.path != f.path for g in files):
                files.append(f)
                pins.append(FilePin(f.path, blob=blob, commit=rng.head))
    left = tuple(Skipped(p, _put_back(why), why) for p, why in diff.left_out)
    return _plan(files, skipped + left, (diff, framed), pins, {})


def _range(root: Path, opts: GitOptions) -> Range:
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


def _noise_rules(
    root: Path, opts: GitOptions, outputs: Sequence[Output]
) -> Callable[[list[Change]], Decide]:
    """What a review leaves out of a change: the tool's own output, lock files, generated
    and binary files (each unless asked for)."""
    return lambda changes: _decider(root, opts, outputs, changes)


def _decider(
    root: Path, opts: GitOptions, outputs: Sequence[Output], changes: list[Change]
) -> Decide:
    generated: set[str] = set()
    if not opts.include_generated:
        generated = generated_paths(root, [c.path for c in changes])

    def decide(change: Change, binary: bool) -> str | None:
        path = change.path
        output = next((o for o in outputs if o.holds(path)), None)
        if output is not None:
            return output.what
        if written_by_tool(path):
            return "written by deepseek-review"
        if not opts.include_lock_files and path.rpartition("/")[2] in LOCK_FILES:
            return WHY_LOCK
        if path in generated:
            return WHY_GENERATED
        if binary and not opts.include_binary:
            return WHY_BINARY
        if has_unsafe_chars(path):
            return "name holds control characters"
        return None

    return decide


def frame_diff(diff: Diff) -> str:
    """The change as its own framed part: a heading naming the commits, the patch in a fence
    no line of it can close, and what was left out."""
    fence = fence_for(diff.text)
    sep = "" if diff.text.endswith("\n") or not diff.text else "\n"
    n = len(diff.shown)
    head = f"## Change from {diff.rng.label}: {n} file{'s' if n != 1 else ''} shown\n\n"
    out = f"{head}{fence}diff\n{diff.text}{sep}{fence}\n"
    if diff.left_out:
        out += "\nLeft out of the change:\n" + "".join(f"- {p} ({w})\n" for p, w in diff.left_out)
    return out


def diff_pins(diff: Diff, framed: str) -> dict[str, Any]:
    data = framed.encode("utf-8")
    return {
        **diff.settings.to_json(),
        "sha256": sha256_tag(data),
        "bytes": len(data),
        "shown": [c.path for c in diff.shown],
        "left_out": [list(x) for x in diff.left_out],
    }


def _plan(
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
    git: dict[str, Any] | None = {
        "commits": {k: commits.get(k) or None for k in ("base", "head", "merge_base")},
        "diff": diff_json,
        "files": [p.to_json() for p in pins],
    }
    if change is None and all(p.blob is None for p in pins):
        git = None  # nothing in git: the record is as before pinning
    paths = [*(diff_json["shown"] if diff_json else []), *(f.path for f in files)]
    return GitPlan(files, skipped, lead, scanned, git, list(dict.fromkeys(paths)))
