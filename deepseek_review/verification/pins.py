"""The prompt check of a record pinned to git: the request rebuilt from git's objects.

A pinned file is read from its blob, whatever the working tree holds now; a file pinned to
its working-tree hash is read from the working tree, as before pinning. A diff is made again
by git from the pinned commits and settings and must be the one the request holds. The
check says how each file was re-read (``commit abc1234``, ``working tree``). A pinned blob
that hashes otherwise than the record claims is a failure naming the file (blobs never
change: the record was altered); an object not in the clone names the fix.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from deepseek_review.context.git_hunks import Chosen, FileChange, file_changes, select
from deepseek_review.context.git_plan import frame_diff
from deepseek_review.context.pins import FilePin, PinnedBytes, TreeHashes, file_pins, pinned_bytes
from deepseek_review.errors import InputError, ReviewError
from deepseek_review.git.diff import Diff, DiffSettings, Range, make_diff
from deepseek_review.git.objects import UNSHALLOW_HINT, BlobStore, is_oid, short
from deepseek_review.git.runner import in_git_work_tree
from deepseek_review.records.canonical import sha256_tag
from deepseek_review.records.lines import describe, line_slice, valid_lines
from deepseek_review.records.parts import FileRef, file_refs
from deepseek_review.records.rebuild import Reader
from deepseek_review.records.request_record import RequestRecord
from deepseek_review.verification.reports import REBUILT, CheckResult, listing, soft

#: How the prompt check's detail begins when the request was rebuilt from git objects.


def pinned_paths(record: object, pins: Mapping[str, FilePin] | None = None) -> set[str]:
    """The receipt's paths that git holds for this record (not looked for in the tree);
    ``pins``: its file pins, when the caller has read them."""
    if not isinstance(record, RequestRecord) or not isinstance(record.git, Mapping):
        return set()
    pins = file_pins(record.git) if pins is None else pins
    paths = {p for p, pin in pins.items() if pin.blob is not None}
    diff = record.git.get("diff")
    if isinstance(diff, Mapping) and _range(record.git) is not None:
        paths.update(p for p in diff.get("shown") or () if isinstance(p, str))
    return paths


def _range(git: Mapping[str, Any]) -> Range | None:
    c = git.get("commits")
    if not isinstance(c, Mapping):
        return None
    base, head, mb = c.get("base"), c.get("head"), c.get("merge_base")
    if not (isinstance(base, str) and is_oid(base) and isinstance(head, str) and is_oid(head)):
        return None
    return Range(base, head, mb if isinstance(mb, str) and is_oid(mb) else None)


def _settings(diff: Mapping[str, Any]) -> DiffSettings | None:
    n, fc, rn = diff.get("context_lines"), diff.get("function_context"), diff.get("renames")
    if type(n) is not int or n < 0 or type(fc) is not bool or type(rn) is not bool:
        return None
    return DiffSettings(n, fc, rn)


def check_pinned(
    root: Path,
    record: RequestRecord,
    fallback: Reader,
    rebuild: Callable[[Reader | None], CheckResult],
    *,
    strict: bool,
    blobs: BlobStore | None = None,
    hashes: TreeHashes | None = None,
    pins: Mapping[str, FilePin] | None = None,
) -> CheckResult:
    """The prompt check of a pinned record: ``rebuild`` (the usual check) reading pinned
    files as they were (the working tree where its bytes are the pinned blob, else the blob
    through ``blobs``), then the change made again. ``rebuild(None)``: every file is the
    working tree's, read as for any record."""
    git = record.git or {}
    hashes = hashes or TreeHashes()
    pins = file_pins(git) if pins is None else pins
    got = pinned_bytes(root, git, fallback, blobs, hashes, pins)
    if got.missing:
        named = listing([f"{p.path} (blob {short(p.blob or '')})" for p in got.missing])
        if got.in_repository:
            problem = f"not in the repository: {named}; {UNSHALLOW_HINT}"
        else:
            problem = f"changed since the review, and no git repository here holds {named}"
        return soft(strict, "prompt", f"cannot rebuild the request: {problem}")
    read = got.reader(fallback)
    refs = file_refs(record.messages)
    altered = _altered_pins(pins, refs, got, read, hashes)
    if altered is not None:
        return altered
    result = rebuild(read if got.from_git else None)
    if result.status != "ok":
        return result
    change = _check_change(root, git, record)
    if change is not None:
        return change if isinstance(change, CheckResult) else soft(strict, "prompt", change)
    by_how: dict[str, list[str]] = {}
    for p, ref in refs.items():
        shown = p if ref.lines is None else f"{p} ({describe(ref.lines)})"
        by_how.setdefault(pins[p].how if p in pins else "working tree", []).append(shown)
    reread = [f"{listing(paths)} from {how}" for how, paths in by_how.items()]
    r = _range(git)
    if isinstance(git.get("diff"), Mapping) and r is not None:
        reread.insert(0, f"the change {r.label} made again by git")
    return CheckResult("prompt", "ok", REBUILT + "; ".join(reread))


def _altered_pins(
    pins: Mapping[str, FilePin],
    refs: Mapping[str, FileRef],
    got: PinnedBytes,
    read: Reader,
    hashes: TreeHashes,
) -> CheckResult | None:
    """A failed prompt check when the record's pins and its body's references disagree (other
    lines, or a hash that is not the pinned blob's: blobs never change), else None."""

    def digest(path: str) -> str:
        data = read(path) or b""
        lines = refs[path].lines
        if lines is not None:  # the pin is of the whole file; the reference of its lines
            cut = line_slice(data, *lines)
            return "" if cut is None else sha256_tag(cut)
        return sha256_tag(data) if path in got.from_git else hashes.sha256(path, data)

    unlike = [p for p, ref in refs.items() if p in pins and pins[p].lines != ref.lines]
    if unlike:
        return CheckResult(
            "prompt",
            "fail",
            f"the request record pins other lines of {listing(unlike)} than its body "
            "references (the record was altered)",
        )
    bad = [p for p, ref in refs.items() if p in got.pinned and digest(p) != ref.sha256]
    if bad:
        return CheckResult(
            "prompt",
            "fail",
            f"the request record's hash of {listing([f'{p} ({pins[p].how})' for p in bad])} "
            "is not the hash of the pinned blob (blobs never change: the record was altered)",
        )
    return None


def _chosen(shown: list[Any], hunks: Any) -> Chosen | None:
    """The files of a change shown and the runs of hunks of those shown in part (a record of
    version 3), as :func:`.git_hunks.select` takes them; None when ``hunks`` is malformed."""
    chosen: dict[str, list[tuple[int, int]]] = {p: [] for p in shown if isinstance(p, str)}
    for h in [] if hunks is None else hunks if isinstance(hunks, list) else [None]:
        path = h.get("path") if isinstance(h, dict) else None
        span = valid_lines(h.get("hunks")) if isinstance(h, dict) else None
        if path not in chosen or span is None:
            return None
        chosen[path].append(span)
    return chosen


#: The whole changes made in this run, by repository, commits, settings and drivers.
_WHOLE: dict[tuple[Any, ...], tuple[Diff, list[FileChange]]] = {}


def _whole_change(
    root: Path, rng: Range, settings: DiffSettings, drivers: bool
) -> tuple[Diff, list[FileChange]]:
    """The whole change (every file kept) and its files cut at hunks, made once a run: the
    records of one change (the parts of a change reviewed in parts, a chain's segments) each
    show some of its files (commits never change, so neither does what git makes of them
    with the same settings)."""
    key = (str(root), rng.base, rng.head, settings, drivers)
    got = _WHOLE.get(key)
    if got is None:
        made = make_diff(root, rng, settings, lambda _c: lambda _ch, _bin: None, drivers=drivers)
        got = made, file_changes(made)
        if len(_WHOLE) >= 8:
            _WHOLE.clear()
        _WHOLE[key] = got
    return got


def _check_change(
    root: Path, git: Mapping[str, Any], record: RequestRecord
) -> CheckResult | str | None:
    """Whether the change the record pins, made again by git, is the one the request holds:
    None when it is (or there is none); a failure, or a warning's text when git cannot."""
    diff = git.get("diff")
    if not isinstance(diff, Mapping):
        return None
    rng, settings = _range(git), _settings(diff)
    shown = diff.get("shown")
    left = diff.get("left_out")
    if (
        rng is None
        or settings is None
        or not isinstance(shown, list)
        or not isinstance(left, list)
        or not all(isinstance(x, list) and len(x) == 2 for x in left)
        or not all(isinstance(y, str) for x in left for y in x)
    ):
        return CheckResult("prompt", "fail", "the request record's git.diff is malformed")
    chosen = _chosen(shown, diff.get("hunks"))
    if chosen is None:
        return CheckResult("prompt", "fail", "the request record's git.diff.hunks is malformed")
    sent = "".join(p for m in record.messages for p in m.parts if isinstance(p, str))

    def same(drivers: bool) -> bool:
        # The files shown (and of a part of a change reviewed in parts, only those hunks)
        # taken from the whole change, made once a run for every record of it.
        whole, changes = _whole_change(root, rng, settings, drivers)
        try:
            made = select(whole, chosen, changes)
        except InputError:  # a file or hunks the change does not have
            return False
        framed = frame_diff(
            Diff(rng, settings, made.text, made.shown, tuple(map(tuple, left)), None, made.hunks)
        )
        return sha256_tag(framed.encode("utf-8")) == diff.get("sha256") and framed in sent

    try:
        # A record made before diff drivers were set back: as the drivers are configured.
        matched = same(True) or same(False)
    except ReviewError as exc:
        if not in_git_work_tree(root):
            return f"the change {rng.label} cannot be made again: no git repository here"
        return f"the change {rng.label} cannot be made again: {exc.message}; {UNSHALLOW_HINT}"
    if not matched:
        return CheckResult(
            "prompt",
            "fail",
            f"the change in the request is not the change {rng.label} as git makes it "
            "(the record or its commits were altered)",
        )
    return None
