"""A change as git shows it: ranges, the unified diff, and what is left out of it.

``A..B`` is the change from commit A to commit B; ``A...B`` from their merge base to B; a
single ``A`` means ``A...HEAD`` (a pull request's change). The diff is made by git with every
setting that shapes its bytes given on the command line (algorithm, prefixes, context, renames,
full ids, no colour, no external diff or textconv, every diff driver a ``.gitattributes``
names set back to git's default function line: :func:`driver_config`; ``GIT_DIFF_OPTS`` is
not passed on), so the same commits and options give the same bytes whatever the user's or
the repository's config and environment say. (A ``-diff`` attribute still shows a file as
binary: the attributes are the repository's, read as git reads them.) Deleted, renamed, binary,
mode-only and type changes are shown as git shows them.

Noise is left out by default, each with why: lock files, files marked ``linguist-generated``
in ``.gitattributes``, binary files, and the tool's own output. The change is listed once
(``diff --raw``) and made once (``diff -p``); each file's section of the patch is paired with
its entry of the listing, so leaving a file out costs no second diff.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import InputError
from .gitread import merge_base, resolve_commit, short
from .repo import git_output

#: File names that are lock files (left out unless asked for).
LOCK_FILES = frozenset(
    {
        "package-lock.json", "npm-shrinkwrap.json", "yarn.lock", "pnpm-lock.yaml",
        "bun.lockb", "poetry.lock", "Pipfile.lock", "pdm.lock", "uv.lock", "Cargo.lock",
        "Gemfile.lock", "composer.lock", "go.sum", "flake.lock", "mix.lock", "pubspec.lock",
        "Podfile.lock", "packages.lock.json", "gradle.lockfile", "Package.resolved",
    }
)  # fmt: skip
WHY_LOCK = "lock file"
WHY_GENERATED = "marked linguist-generated in .gitattributes"
WHY_BINARY = "binary"

#: Config that shapes a patch's bytes, pinned whatever the user's or repository's config says.
_PINNED_CONFIG = (
    "core.quotePath=false",
    "diff.noprefix=false",
    "diff.mnemonicPrefix=false",
    "diff.suppressBlankEmpty=false",
    "diff.relative=false",
    "diff.ignoreSubmodules=none",
    "diff.submodule=short",
    "core.bigFileThreshold=512m",
)
#: git's default hunk-header function line (a line that starts with a letter, ``_`` or
#: ``$``) as a pattern: every diff driver a path's ``diff`` attribute names gets it, so no
#: driver's ``funcname``/``xfuncname`` (nor git's built-in ones, which change between
#: versions) shapes the bytes. Letters spelled out: a range's meaning depends on the locale.
DEFAULT_FUNCNAME = "^([ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz_$].*)$"
#: The ``diff`` attribute's values that name no driver.
_NO_DRIVER = frozenset({"set", "unset", "unspecified"})
_PINNED_FLAGS = (
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--full-index",
    "--diff-algorithm=myers",
    "--indent-heuristic",
    "--no-relative",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--inter-hunk-context=0",
    "-O/dev/null",
)


@dataclass(frozen=True)
class DiffSettings:
    """What shapes the diff a reviewer reads (recorded, so verify makes the same one)."""

    context_lines: int = 3
    function_context: bool = False
    renames: bool = True

    def rename_flags(self) -> list[str]:
        """Renames found as ``git diff`` finds them by default, its limit pinned too (past it
        git finds none: ``diff.renameLimit`` must not decide)."""
        return ["-M50%", "-l1000"] if self.renames else ["--no-renames"]

    def flags(self) -> list[str]:
        return [
            f"-U{self.context_lines}",
            *(["--function-context"] if self.function_context else []),
            *self.rename_flags(),
        ]

    def to_json(self) -> dict[str, Any]:
        return {
            "context_lines": self.context_lines,
            "function_context": self.function_context,
            "renames": self.renames,
        }


@dataclass(frozen=True)
class Range:
    """A change between two git objects (ids): ``base`` to ``head``."""

    base: str
    head: str
    """A commit, or the tree of the index (``--staged``)."""
    merge_base: str | None = None
    """Set when ``base`` is the merge base of the range's first commit and ``head``."""
    spec: str = ""
    """As the user gave it (messages only; the prompt names ids)."""

    @property
    def label(self) -> str:
        how = " (their merge base)" if self.merge_base else ""
        return f"{short(self.base)}{how} to {short(self.head)}"


def resolve_range(root: Path, spec: str, what: str) -> Range:
    """``A..B``, ``A...B`` or ``A`` (meaning ``A...HEAD``) as commit ids."""
    if "..." in spec:
        a, _, b = spec.partition("...")
        symmetric = True
    elif ".." in spec:
        a, _, b = spec.partition("..")
        symmetric = False
    else:
        a, b, symmetric = spec, "HEAD", True
    if not a:
        raise InputError(f"{what} {spec}: give the base of the change (e.g. origin/main)")
    base = resolve_commit(root, a, what)
    head = resolve_commit(root, b or "HEAD", what)
    if not symmetric:
        return Range(base, head, None, spec)
    mb = merge_base(root, base, head, f"{what} {spec}")
    return Range(mb, head, mb, spec)


@dataclass(frozen=True)
class Change:
    """One file of the change, as ``diff --raw`` lists it."""

    status: str
    """``A``, ``D``, ``M``, ``T``, ``R``/``C`` (with a score) ..."""
    path: str
    """The new path (the old one for a deletion)."""
    old_path: str
    old_blob: str
    new_blob: str
    new_mode: str

    @property
    def sections(self) -> int:
        """How many sections of the patch show it: a type change shows as two."""
        return 2 if self.status == "T" else 1


def _git(root: Path, *args: str, config: Sequence[str] = ()) -> bytes:
    pinned = [a for kv in (*_PINNED_CONFIG, *config) for a in ("-c", kv)]
    out = git_output(root, *pinned, *args)
    if out is None:
        raise InputError(f"git could not show the change ({' '.join(args[:1])} failed)")
    return out


def list_changes(root: Path, rng: Range, settings: DiffSettings) -> list[Change]:
    """Every file of the change, in the patch's order."""
    renames = settings.rename_flags()
    listing = ("diff-tree", "-r", "--raw", "-z", "--no-abbrev", *renames, *_PINNED_FLAGS)
    out = _git(root, *listing, rng.base, rng.head, "--")
    fields = out.split(b"\0")
    changes = []
    i = 0
    while i < len(fields) - 1:
        meta = os.fsdecode(fields[i]).lstrip(":").split(" ")
        _, new_mode, old_blob, new_blob, status = meta
        first = os.fsdecode(fields[i + 1])
        if status[:1] in ("R", "C"):
            second = os.fsdecode(fields[i + 2])
            changes.append(Change(status, second, first, old_blob, new_blob, new_mode))
            i += 3
        else:
            changes.append(Change(status, first, first, old_blob, new_blob, new_mode))
            i += 2
    return changes


_SECTION_RE = re.compile(rb"^diff --git ", re.MULTILINE)
_BINARY_RE = re.compile(rb"^(?:Binary files .* differ|GIT binary patch)$", re.MULTILINE)


def _sections(patch: bytes) -> list[bytes]:
    starts = [m.start() for m in _SECTION_RE.finditer(patch)]
    if not starts:  # an empty change
        return []
    return [patch[s:e] for s, e in zip(starts, [*starts[1:], len(patch)], strict=True)]


def is_binary_section(section: bytes) -> bool:
    head = section.split(b"\n@@", 1)[0]
    return _BINARY_RE.search(head) is not None


@dataclass(frozen=True)
class Diff:
    """The change as the prompt shows it."""

    rng: Range
    settings: DiffSettings
    text: str
    """The patch of every file shown (UTF-8; bytes that are not are replaced)."""
    shown: tuple[Change, ...]
    left_out: tuple[tuple[str, str], ...]
    """(path, why) of every file left out."""


#: Why a file is left out of the diff (None: shown), given its change and whether git
#: shows it as binary.
Decide = Callable[[Change, bool], str | None]


def make_diff(
    root: Path, rng: Range, settings: DiffSettings, rules: Callable[[list[Change]], Decide]
) -> Diff:
    """List the change, make its patch once, and keep the sections that the ``rules`` made
    for the listed changes let in."""
    changes = list_changes(root, rng, settings)
    decide = rules(changes)
    patch = _git(
        root, "diff-tree", "-r", "-p", *settings.flags(), *_PINNED_FLAGS, rng.base, rng.head, "--",
        config=driver_config(root, changes),
    )  # fmt: skip
    sections = _sections(patch)
    if len(sections) != sum(c.sections for c in changes):
        raise InputError(
            f"git listed {len(changes)} changed files but its patch has {len(sections)} "
            "sections: cannot tell them apart"
        )
    kept: list[bytes] = []
    shown: list[Change] = []
    left: list[tuple[str, str]] = []
    i = 0
    for change in changes:
        mine = sections[i : i + change.sections]
        i += change.sections
        why = decide(change, any(is_binary_section(s) for s in mine))
        if why is None:
            kept += mine
            shown.append(change)
        else:
            left.append((change.path, why))
    text = b"".join(kept).decode("utf-8", errors="replace")
    return Diff(rng, settings, text, tuple(shown), tuple(left))


def driver_config(root: Path, changes: Sequence[Change]) -> list[str]:
    """The config that takes every diff driver the changed paths' ``diff`` attribute names
    out of the patch: the default function line, binary only when git sees it is (its
    external ``command`` and ``textconv`` are off by flags)."""
    paths = dict.fromkeys(p for c in changes for p in (c.old_path, c.path))
    if not paths:
        return []
    stdin = b"".join(os.fsencode(p) + b"\0" for p in paths)
    out = git_output(root, "check-attr", "-z", "--stdin", "diff", stdin=stdin)
    if out is None:
        raise InputError("git could not show the change (check-attr failed)")
    f = out.split(b"\0")
    drivers = sorted({os.fsdecode(f[i + 2]) for i in range(0, len(f) - 2, 3)} - _NO_DRIVER)
    bad = next((d for d in drivers if "=" in d), None)
    if bad is not None:
        raise InputError(f"the diff driver {bad!r} a .gitattributes names cannot be overridden")
    return [
        kv
        for d in drivers
        for kv in (f"diff.{d}.xfuncname={DEFAULT_FUNCNAME}", f"diff.{d}.binary=auto")
    ]


def generated_paths(root: Path, paths: Sequence[str]) -> set[str]:
    """Which of ``paths`` ``.gitattributes`` marks ``linguist-generated`` (as the index has
    the attribute files: git 2.39 cannot read them from a commit)."""
    if not paths:
        return set()
    out = git_output(
        root, "check-attr", "-z", "--stdin", "--cached", "linguist-generated",
        stdin=b"".join(os.fsencode(p) + b"\0" for p in paths),
    )  # fmt: skip
    if out is None:
        return set()
    f = out.split(b"\0")
    return {os.fsdecode(f[i]) for i in range(0, len(f) - 2, 3) if f[i + 2] in (b"set", b"true")}
