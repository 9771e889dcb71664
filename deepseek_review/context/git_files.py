"""Whole files read from git's blobs: ``--rev``'s context, and a change's new versions.

A blob is sent as the working-tree reader sends a file: UTF-8 text without NUL bytes, within
``max_file_bytes``; a file named explicitly that cannot be sent is refused, one a folder or
glob listed is left out and listed (:class:`deepseek_review.context.types.Skipped`).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from deepseek_review.context.ranges import (
    RangeSpec,
    file_range,
    named_twice,
    not_a_file,
    parse_range,
)
from deepseek_review.context.types import (
    KIND_BAD_NAME,
    KIND_BINARY,
    KIND_EXCLUDED,
    KIND_NOT_UTF8,
    KIND_TOO_BIG,
    UNSAFE_NAME,
    ContextFile,
    ContextLimits,
    Output,
    Skipped,
    excluded,
    split_exclusions,
)
from deepseek_review.errors import InputError, MissingObject
from deepseek_review.git.diff import Diff
from deepseek_review.git.objects import UNSHALLOW_HINT, read_blobs, short, tree_entries
from deepseek_review.git.runner import has_unsafe_chars, in_git_work_tree
from deepseek_review.options.table import name_of
from deepseek_review.records.canonical import sha256_tag


def blob_file(path: str, data: bytes, max_file_bytes: int) -> ContextFile | Skipped:
    """A blob's bytes as a context file, or why it cannot be sent."""
    nul = data.find(b"\0")
    if nul != -1:
        return Skipped(path, f"binary (NUL byte at offset {nul})", KIND_BINARY)
    if len(data) > max_file_bytes:
        why = f"{len(data)} bytes is over {name_of('max_file_bytes')} {max_file_bytes}"
        return Skipped(path, why, KIND_TOO_BIG)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Skipped(path, f"not UTF-8 (invalid byte at offset {exc.start})", KIND_NOT_UTF8)
    return ContextFile(path, text, sha256_tag(data), len(data))


def new_versions(root: Path, diff: Diff, limits: ContextLimits) -> list[tuple[ContextFile, str]]:
    """The new version of every file the change shows that can be sent whole (not deleted,
    not a link or submodule, text), each with its blob id."""
    wanted = [
        c for c in diff.shown if c.status != "D" and c.new_mode.startswith("100") and c.new_blob
    ]
    blobs = read_blobs(root, [c.new_blob for c in wanted])
    out = []
    for c in wanted:
        data = blobs.get(c.new_blob)
        f = None if not data else blob_file(c.path, data, limits.max_file_bytes)
        if isinstance(f, ContextFile):
            out.append((f, c.new_blob))
    return out


def gather_at_commit(
    root: Path, commit: str, specs: Sequence[str], limits: ContextLimits, outputs: Sequence[Output]
) -> tuple[list[tuple[ContextFile, str]], list[Skipped]]:
    """The files ``specs`` (paths, folders, globs) name in ``commit``, read from its blobs,
    each with its blob id, and what a folder or glob listed that cannot be sent. A spec that
    names nothing there, or a file named that cannot be sent, is refused."""
    specs, excludes = split_exclusions(specs)
    if not specs:
        raise InputError(f"no context given: pass {name_of('context')} with a file, folder or glob")
    if not in_git_work_tree(root):
        raise InputError(f"{name_of('rev')}: the repository root {root} is not a git work tree")
    ranges: dict[str, RangeSpec] = {}
    entries, named, left_out = _listed_at_commit(root, commit, specs, excludes, outputs, ranges)
    why = f"matches {name_of('exclude')}"
    skipped = [Skipped(p, why, KIND_EXCLUDED) for p in left_out if p not in entries]
    out = _read_at_commit(root, commit, entries, named, limits, skipped, ranges)
    return out, skipped


def _listed_at_commit(
    root: Path,
    commit: str,
    specs: Sequence[str],
    excludes: Sequence[str],
    outputs: Sequence[Output],
    ranges: dict[str, RangeSpec],
) -> tuple[dict[str, str], set[str], dict[str, None]]:
    """The blobs ``specs`` list in ``commit`` (path to blob id, in order), the paths named
    exactly, and the paths a folder or glob listed that ``excludes`` leaves out; the lines of
    the files named with a range (``path#L120-L260``) go into ``ranges``."""
    entries: dict[str, str] = {}
    named: set[str] = set()
    left_out: dict[str, None] = {}
    for spec in specs:
        clean = spec.removeprefix("./").rstrip("/") or "."
        if has_unsafe_chars(spec) or spec.startswith("/") or ".." in clean.split("/"):
            raise InputError(f"context path {spec!r}: must name a path inside the repository")
        ranged = parse_range(spec, lambda s: _in_commit(root, commit, s))
        if ranged is not None:
            path, oid = _ranged_file(root, commit, ranged, outputs)
            if path in named or path in ranges:
                raise named_twice(spec, path, ranges)
            named.add(path)
            ranges[path] = ranged
            entries.setdefault(path, oid)
            continue
        glob = any(c in spec for c in "*?[")
        found = [
            e
            for e in tree_entries(root, commit, [f":(glob){clean}" if glob else clean])
            if e.kind == "blob" and not any(o.holds(e.path) for o in outputs)
        ]
        if not found:
            raise InputError(f"context path {spec}: names no file in commit {short(commit)}")
        if not glob and [e.path for e in found] == [clean]:
            if clean in ranges:
                raise named_twice(spec, clean, ranges)
            named.add(clean)
        elif excludes:
            out_of = {e.path for e in found if excluded(e.path, excludes)}
            if len(out_of) == len(found):
                raise InputError(
                    f"context path {spec}: every file it names in commit {short(commit)} "
                    f"matches {name_of('exclude')}"
                )
            left_out.update(dict.fromkeys(sorted(out_of)))
            found = [e for e in found if e.path not in out_of]
        for e in found:
            entries.setdefault(e.path, e.oid)
    return entries, named, left_out


def _read_at_commit(
    root: Path,
    commit: str,
    entries: dict[str, str],
    named: set[str],
    limits: ContextLimits,
    skipped: list[Skipped],
    ranges: dict[str, RangeSpec],
) -> list[tuple[ContextFile, str]]:
    """The listed blobs read as context files (the lines ``ranges`` names of a file named with
    a range), each with its blob id, within ``limits``; what cannot be sent is added to
    ``skipped``, or refused when its path was named exactly."""
    blobs = read_blobs(root, list(entries.values()))
    out: list[tuple[ContextFile, str]] = []
    total = 0
    for path, oid in entries.items():
        if has_unsafe_chars(path):
            if path in named:
                raise InputError(f"context file {path!r}: {UNSAFE_NAME}")
            skipped.append(Skipped(path, UNSAFE_NAME, KIND_BAD_NAME))
            continue
        data = blobs.get(oid)
        if data is None:
            raise MissingObject(
                f"context file {path}: blob {short(oid)} is not in the repository",
                hint=UNSHALLOW_HINT,
            )
        f = blob_file(path, data, limits.max_file_bytes)
        if isinstance(f, Skipped):
            if path in named:
                raise InputError(f"context file {path}: {f.reason} in commit {short(commit)}")
            skipped.append(f)
            continue
        r = ranges.get(path)
        if r is not None:
            f = file_range(f, r.first, r.last, spec=r.spec)
        total += f.size
        if total > limits.max_context_bytes:
            raise InputError(
                f"context total reaches {total} bytes at {path}, over "
                f"{name_of('max_context_bytes')} {limits.max_context_bytes}"
            )
        out.append((f, oid))
    return out


def _in_commit(root: Path, commit: str, spec: str) -> bool:
    """Whether ``commit`` holds a file or folder named exactly ``spec``."""
    clean = spec.removeprefix("./").rstrip("/")
    return bool(clean) and bool(tree_entries(root, commit, [f":(literal){clean}"]))


def _ranged_file(
    root: Path, commit: str, ranged: RangeSpec, outputs: Sequence[Output]
) -> tuple[str, str]:
    """The path and blob of the one file of ``commit`` a range names (refused: none, or a
    folder)."""
    clean = ranged.path.removeprefix("./").rstrip("/")
    if not clean or ".." in clean.split("/"):
        raise InputError(f"context path {ranged.spec}: must name a path inside the repository")
    found = [e for e in tree_entries(root, commit, [f":(literal){clean}"]) if e.kind == "blob"]
    if [e.path for e in found] == [clean] and not any(o.holds(clean) for o in outputs):
        return clean, found[0].oid
    if found:
        raise not_a_file(ranged)
    raise InputError(f"context path {ranged.spec}: names no file in commit {short(commit)}")
