"""Gathering the context files of a review: what is read, in what order, and what is refused.

A ``--context`` spec is a file, a folder or a glob, relative to the repository root, or lines
of a file (``path#L120-L260``: :mod:`.ranges`). Folders
and globs are expanded by git itself (``git ls-files --cached --others --exclude-standard``)
so git's ignore rules apply exactly (nested ``.gitignore``, ``.git/info/exclude``,
``core.excludesFile``); outside a git work tree the ``.gitignore`` files are honoured with
``pathspec``'s git-compatible matcher. A file named explicitly is taken even if ignored: the
user asked for it (named on the command line; a manifest, a file under review, may not name
an ignored file: :func:`deepseek_review.context.places.refuse_ignored`).

A file named explicitly that could not be sent faithfully is refused before anything is
sent, with a one-line error naming the path: outside the root, missing, not a regular file,
binary (NUL bytes), not UTF-8, over ``max_file_bytes``; so is the total over
``max_context_bytes`` and a name with control, bidi or invisible characters. A file a folder
or glob finds that cannot be sent (binary, not UTF-8, over the limit, a symlink out, unreadable)
is left out instead (:class:`Skipped`): one such file does not stop the review of a folder.

A review's own outputs are never its context: folders and globs leave out the output folders
in play (:class:`Output`) and every file named as this tool names what it writes
(:func:`written_by_tool`), wherever it is. Named explicitly, such a file is sent.

The repository may be hostile. Files are opened one folder at a time without following a
symlink (:class:`Opener`), so a path swapped after a check cannot lead elsewhere; a symlink is
resolved and checked before anything is opened there. git's own data (any ``.git`` folder,
the git dir wherever it is) is never context, and neither is a file git ignores when a
symlink leads to it (``docs/env -> ../.env``). Named explicitly, such a path is refused;
found by a folder or a glob, it is skipped and reported (:class:`Skipped`).
"""

from __future__ import annotations

import logging
import os
import stat
from collections.abc import Iterable, Sequence
from contextlib import closing
from dataclasses import dataclass, field
from pathlib import Path

from deepseek_review.context.ignore import IgnoreWalker, git_ls_files, glob_to_regex
from deepseek_review.context.places import why_not_context
from deepseek_review.context.ranges import (
    RangeSpec,
    file_range,
    named_twice,
    not_a_file,
    parse_range,
)
from deepseek_review.context.read import Opener, read_context_file, read_entries, read_runs
from deepseek_review.context.types import (
    DEFAULT_MAX_CONTEXT_BYTES,
    DEFAULT_MAX_FILE_BYTES,
    GIT_DATA,
    KIND_EXCLUDED,
    KIND_WRITTEN,
    UNSAFE_NAME,
    WARNED_KINDS,
    WRITTEN_MARK,
    ContextFile,
    ContextLimits,
    Gathered,
    Output,
    Skipped,
    excluded,
    is_glob,
    split_exclusions,
    written_by_tool,
)
from deepseek_review.errors import InputError
from deepseek_review.git.runner import (
    has_unsafe_chars,
    in_git_work_tree,
    resolve_inside,
    under_dot_git,
)
from deepseek_review.options.table import name_of
from deepseek_review.records.storage import TEMP_PREFIX
from deepseek_review.util.logs import log
from deepseek_review.util.textsafe import plural

__all__ = [
    "DEFAULT_MAX_CONTEXT_BYTES",
    "DEFAULT_MAX_FILE_BYTES",
    "UNSAFE_NAME",
    "ContextFile",
    "ContextLimits",
    "Expansion",
    "Gathered",
    "Output",
    "Skipped",
    "expand_specs",
    "gather_context",
    "glob_to_regex",
    "read_context_file",
    "read_entries",
    "written_by_tool",
]


# --------------------------------------------------------------------------- expansion


def _expand_folder(root: Path, rel: str) -> list[str]:
    if in_git_work_tree(root):
        listed = git_ls_files(root, [rel if rel != "." else "."])
        if listed is not None:
            return [p for p in listed if not p.endswith("/")]
    return sorted(IgnoreWalker(root).walk(rel))


def _expand_glob(root: Path, pattern: str) -> list[str]:
    pattern = pattern.removeprefix("./")
    if pattern.startswith("/") or ".." in pattern.split("/"):
        raise InputError(f"context pattern {pattern}: must stay inside the repository root")
    if in_git_work_tree(root):
        listed = git_ls_files(root, [f":(glob){pattern}"])
        if listed is not None:
            return [p for p in listed if not p.endswith("/")]
    rx = glob_to_regex(pattern)
    return sorted(p for p in IgnoreWalker(root).walk("") if rx.match(p))


def _exists_literally(root: Path, spec: str) -> bool:
    """A path such as ``app/[id]/page.tsx`` that exists as named is a path, not a glob."""
    try:
        return os.path.lexists(root / spec)
    except (OSError, ValueError):
        return False


@dataclass(frozen=True)
class Expansion:
    """What the specs name, before reading: paths in order, and which spec listed what."""

    entries: list[tuple[str, bool]]
    """Repo-relative paths in the order given, de-duplicated, each with whether it was named
    explicitly (explicit files may be empty or ignored; listed ones are taken as git lists
    them, and skipped if they turn out not to be files)."""
    groups: list[tuple[str, str, list[str]]]
    """(spec, "folder" or "pattern", what it listed) for every folder and glob spec."""
    left_out: list[Skipped] = field(default_factory=list)
    """The tool's own outputs that folders and globs listed, left out of ``entries`` (a file
    also named explicitly stays in)."""
    left_out_of: dict[str, Skipped] = field(default_factory=dict)
    """Which of ``left_out`` each listed path left out falls under."""
    ranges: dict[str, RangeSpec] = field(default_factory=dict)
    """The files named with a line range (``path#L120-L260``): only those lines are sent,
    also when a folder or glob lists the file too."""


def _leave_out_outputs(
    listed: Iterable[str], named: set[str], outputs: Sequence[Output]
) -> tuple[list[Skipped], dict[str, Skipped]]:
    """What of ``listed`` (not ``named`` explicitly) is the tool's own output: one entry per
    output folder (its file count) or file, and one per file named as the tool names its own."""
    below: dict[Output, list[str]] = {}
    by_name: list[str] = []
    own = [(o, o.path, o.path + "/") for o in outputs if o.path != "."]  # ``Output.holds``
    # Only a path below an output, or with a name as the tool writes them, can be left out.
    starts = tuple(path for _, path, _ in own)
    for rel in [r for r in listed if r.startswith(starts) or TEMP_PREFIX in r or WRITTEN_MARK in r]:
        if rel in named:
            continue
        for output, path, folder in own:
            if rel == path or rel.startswith(folder):
                below.setdefault(output, []).append(rel)
                break
        else:
            if written_by_tool(rel):
                by_name.append(rel)
    left: list[Skipped] = []
    of: dict[str, Skipped] = {}
    for output, rels in below.items():
        if rels == [output.path]:  # a file: the batch report
            skip = Skipped(rels[0], output.what, f"{output.what} ({rels[0]})", own=True)
        else:
            path, count = output.path + "/", plural(len(rels), "file")
            kind = f"in {output.what} {path}"
            skip = Skipped(path, f"{output.what} ({count})", kind, len(rels), own=True)
        left.append(skip)
        of.update(dict.fromkeys(rels, skip))
    for rel in by_name:
        skip = Skipped(rel, f"{KIND_WRITTEN} (name it to send it)", KIND_WRITTEN, own=True)
        left.append(skip)
        of[rel] = skip
    return left, of


def expand_specs(root: Path, specs: Iterable[str], outputs: Sequence[Output] = ()) -> Expansion:
    """Expand every spec; refuse paths outside the root, in .git/, missing, or empty globs.

    What a folder or glob lists of the tool's own output (``outputs``, and files named as
    the tool names them) is left out, unless a spec names the file itself.
    """
    seen: set[str] = set()
    entries: list[tuple[str, bool]] = []
    groups: list[tuple[str, str, list[str]]] = []
    listed: dict[str, None] = {}
    named: set[str] = set()
    ranges: dict[str, RangeSpec] = {}
    specs, excludes = split_exclusions(specs)
    if not specs:
        raise InputError(
            f"no context given: pass {name_of('context')} with a file, folder or glob, or "
            f"{name_of('diff')} or {name_of('staged')} to review a change"
        )
    for spec in specs:
        ranged = _range_of(root, spec)
        one = (
            _expand_spec(root, spec) if ranged is None else _add_range(root, ranged, ranges, named)
        )
        if isinstance(one, str):  # a file named
            if ranged is None and one in ranges:
                raise named_twice(spec, one, ranges)
            named.add(one)
            if one not in seen:
                seen.add(one)
                entries.append((one, True))
            continue
        groups.append(one)
        listed.update(dict.fromkeys(one[2]))
        new = [rel for rel in dict.fromkeys(one[2]) if rel not in seen]
        seen.update(new)
        entries.extend([(rel, False) for rel in new])
    left_out, left_out_of = _leave_out(listed, named, outputs, excludes)
    if left_out_of:
        entries = [(rel, explicit) for rel, explicit in entries if rel not in left_out_of]
    return Expansion(entries, groups, left_out, left_out_of, ranges)


def _expand_spec(root: Path, spec: str) -> str | tuple[str, str, list[str]]:
    """What one spec names: a file's repo-relative path, or (spec, "folder" or "pattern",
    the files it lists); refused if it names nothing that may be sent."""
    if is_glob(spec) and not _exists_literally(root, spec):
        matches = _expand_glob(root, spec)
        if not matches:
            raise InputError(f"context pattern {spec}: matches no file (after git's ignore rules)")
        return spec, "pattern", matches
    rel, is_dir = _named_path(root, spec, spec)
    if not is_dir:
        return rel
    matches = _expand_folder(root, rel)
    if rel != ".":
        matches = [m for m in matches if m == rel or m.startswith(rel + "/")]
    if not matches:
        raise InputError(f"context folder {spec}: holds no file (after git's ignore rules)")
    return spec, "folder", matches


def _range_of(root: Path, spec: str) -> RangeSpec | None:
    """The lines of a file ``spec`` names (None: it names a whole file, folder or glob);
    a name that could fake the framing is refused first."""
    if has_unsafe_chars(spec):
        raise InputError(f"context path {spec!r}: {UNSAFE_NAME}")
    return parse_range(spec, lambda s: _exists_literally(root, s))


def _named_path(root: Path, path: str, spec: str) -> tuple[str, bool]:
    """The repo-relative path a spec names (``path``: the spec, or its file's part of a line
    range) and whether it is a folder; refused, naming ``spec``, when it may not be context."""
    resolved, rel = resolve_inside(root, path, what="context path")
    if under_dot_git(rel):
        raise InputError(f"context path {spec}: {GIT_DATA.format(where='.git/')}")
    try:
        st = resolved.stat()
    except FileNotFoundError:
        raise InputError(f"context path {spec}: no such file or folder") from None
    except OSError as exc:
        raise InputError(f"context path {spec}: cannot read ({exc.strerror})") from None
    # Checked again on the open file when it is read: this only refuses early, by name.
    why = why_not_context(root, rel, os.fspath(resolved), stat.S_ISDIR(st.st_mode))
    if why is not None:
        raise InputError(f"context path {spec}: {why[0]}")
    return rel, stat.S_ISDIR(st.st_mode)


def _add_range(root: Path, ranged: RangeSpec, ranges: dict[str, RangeSpec], named: set[str]) -> str:
    """Check a spec naming lines of a file and note its range in ``ranges``: the file must
    exist and be a file, named once (whole or one range). Its repo-relative path."""
    rel, is_dir = _named_path(root, ranged.path, ranged.spec)
    if is_dir:
        raise not_a_file(ranged)
    if rel in named or rel in ranges:
        raise named_twice(ranged.spec, rel, ranges)
    ranges[rel] = ranged
    return rel


def _leave_out(
    listed: dict[str, None], named: set[str], outputs: Sequence[Output], excludes: list[str]
) -> tuple[list[Skipped], dict[str, Skipped]]:
    """What folders and globs listed that is left out (the tool's own outputs, then what
    ``--exclude`` matches; a file also named explicitly stays in), and by path."""
    left_out, left_out_of = _leave_out_outputs(listed, named, outputs)
    if excludes:
        for rel in listed:
            if rel not in named and rel not in left_out_of and excluded(rel, excludes):
                skip = Skipped(rel, f"matches {name_of('exclude')}", KIND_EXCLUDED)
                left_out.append(skip)
                left_out_of[rel] = skip
    return left_out, left_out_of


# --------------------------------------------------------------------------- gathering


def gather_context(
    root: Path,
    specs: Sequence[str],
    limits: ContextLimits | None = None,
    outputs: Sequence[Output] = (),
) -> Gathered:
    """Expand ``specs`` and read every file, refusing the whole set on the first file named
    explicitly that cannot be sent, or a total over the limit.

    What a folder or glob listed that may not or cannot be sent, and the tool's own outputs
    (``outputs``, and files named as it names them), are left out, in ``skipped``, and summed
    up in one log line (:func:`_log_left_out`).
    """
    limits = limits or ContextLimits()
    expansion = expand_specs(root, specs, outputs)
    files: list[ContextFile] = []
    skipped: list[Skipped] = list(expansion.left_out)
    total = 0
    try:
        opener = Opener(root)
    except OSError as exc:
        raise InputError(f"repository root {root}: cannot open ({exc.strerror})") from None
    most = limits.max_context_bytes
    with opener, closing(read_runs(opener, expansion.entries, limits.max_file_bytes)) as reads:
        for run in reads:  # results of consecutive entries: a run is checked as a whole
            kept = [cf for cf in run if isinstance(cf, ContextFile)]
            if expansion.ranges:
                kept = [_cut(cf, expansion.ranges.get(cf.path)) for cf in kept]
            if len(kept) != len(run):
                skipped += [s for s in run if s is not None and not isinstance(s, ContextFile)]
            size = sum([cf.size for cf in kept])
            if total + size > most:
                for cf in kept:  # the file at which the total goes over
                    total += cf.size
                    if total > most:
                        raise InputError(
                            f"context total reaches {total} bytes at {cf.path}, over "
                            f"{name_of('max_context_bytes')} {most}"
                        )
            total += size
            files += kept
    read = {f.path for f in files}
    left_out_of = {**expansion.left_out_of, **{s.path: s for s in skipped}}
    for spec, kind, listed in expansion.groups:
        if not any(rel in read for rel in listed):
            _refuse_empty_group(spec, kind, listed, left_out_of)
    _log_left_out(skipped)
    return Gathered(files, skipped)


def _cut(f: ContextFile, ranged: RangeSpec | None) -> ContextFile:
    return f if ranged is None else file_range(f, ranged.first, ranged.last, spec=ranged.spec)


def _refuse_empty_group(
    spec: str, kind: str, listed: Sequence[str], left_out_of: dict[str, Skipped]
) -> None:
    """A folder or glob of which nothing is sent is refused, saying why: what it lists was
    left out (naming the first, and its reason), or it lists nothing git would."""
    left = list(dict.fromkeys(left_out_of[rel] for rel in listed if rel in left_out_of))
    verb = "holds" if kind == "folder" else "matches"
    if not left:
        raise InputError(f"context {kind} {spec}: {verb} no file (after git's ignore rules)")
    more = f", and {len(left) - 1} more" if len(left) > 1 else ""
    raise InputError(
        f"context {kind} {spec}: nothing it {verb} can be sent "
        f"({left[0].path}: {left[0].reason}{more})",
        hint="name a file to send it" if left[0].own else "",
    )


def _log_left_out(skipped: Sequence[Skipped]) -> None:
    """Say what was left out: a line for each file left out for safety (a link into git's
    data, to an ignored file), and one line summing up everything by kind -- a warning when
    something could not be sent, else (only the tool's own outputs) information."""
    if not skipped:
        return
    for s in skipped:
        if s.kind in WARNED_KINDS:
            log.warning("skipped %s: %s", s.path, s.reason)
    counts: dict[str, int] = {}
    for s in skipped:
        counts[s.kind] = counts.get(s.kind, 0) + s.files
    kinds = sorted(counts.items(), key=lambda kv: -kv[1])  # stable: first seen first
    summary = ", ".join(f"{n} {kind}" for kind, n in kinds)
    total = plural(sum(counts.values()), "file")
    level = logging.INFO if all(s.own for s in skipped) else logging.WARNING
    log.log(level, "left out %s (%s); --dry-run lists them", total, summary)
