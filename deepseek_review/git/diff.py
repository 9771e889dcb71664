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
in the base commit's ``.gitattributes`` (never the change's own), binary files, and the
tool's own output. The change is listed and made by one git process (``diff-tree --raw
-p``); each file's section of the patch is paired with its entry of the listing, so leaving a
file out costs no second diff.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deepseek_review.errors import InputError
from deepseek_review.git.objects import merge_base, resolve_commits, short
from deepseek_review.git.patch import (
    Change as Change,  # listed there; named here by who makes a diff
)
from deepseek_review.git.patch import Patch, parse_patch
from deepseek_review.git.runner import git_output

#: Why a file is left out of the diff (None: shown), given its change and whether git
#: shows it as binary.
Decide = Callable[[Change, bool], str | None]

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
    base, head = resolve_commits(root, [a, b or "HEAD"], what)
    if not symmetric:
        return Range(base, head, None, spec)
    mb = merge_base(root, base, head, f"{what} {spec}")
    return Range(mb, head, mb, spec)


def _pinned(config: Sequence[str] = ()) -> list[str]:
    """``-c`` for each setting that shapes the patch (and ``config``: drivers set back)."""
    return [a for kv in (*_PINNED_CONFIG, *config) for a in ("-c", kv)]


def _git(root: Path, *args: str, config: Sequence[str] = ()) -> bytes:
    out = git_output(root, *_pinned(config), *args)
    if out is None:
        raise InputError(f"git could not show the change ({' '.join(args[:1])} failed)")
    return out


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
    fence: str | None = None
    """A backtick fence no line of ``text`` can close, found as the patch was split (None:
    :func:`deepseek_review.util.textsafe.fence_for` of the text)."""
    hunks: tuple[tuple[str, int, int, int], ...] = ()
    """(path, first, last, of) of each run of hunks shown of a file whose change is shown only
    in part (a review in parts: ``run --split``); empty: every file's change is shown whole."""


def make_diff(
    root: Path,
    rng: Range,
    settings: DiffSettings,
    rules: Callable[[list[Change]], Decide],
    *,
    drivers: bool = True,
) -> Diff:
    """List the change and make its patch in one git process (a second only when a diff
    driver must be set back: :func:`driver_config`), and keep the sections that the
    ``rules`` made for the listed changes let in. ``drivers=False`` leaves the drivers
    as configured (how records made before they were set back were made)."""
    out = git_output(root, *diff_command(rng, settings))
    if out is None:
        raise InputError("git could not show the change (diff-tree failed)")
    patch = parse_patch(out)
    changes = patch.changes
    config = driver_config(root, changes) if drivers else []
    if config:
        args = ("diff-tree", "-r", "-p", *settings.flags(), *_PINNED_FLAGS)
        patch = parse_patch(
            _git(root, *args, rng.base, rng.head, "--", config=config), listing=False
        )
    decide = rules(changes)
    if len(patch.starts) != sum(c.sections for c in changes):
        raise InputError(
            f"git listed {len(changes)} changed files but its patch has "
            f"{len(patch.starts)} sections: cannot tell them apart"
        )
    return _kept(rng, settings, patch, changes, decide)


def _kept(
    rng: Range, settings: DiffSettings, patch: Patch, changes: list[Change], decide: Decide
) -> Diff:
    """Each listed change paired with its section(s) of the patch, kept or left out."""
    kept: list[tuple[int, int]] = []  # the kept sections' bounds, contiguous ones as one
    shown: list[Change] = []
    left: list[tuple[str, str]] = []
    run, i = 0, 0
    for change in changes:
        j = i + change.sections
        start, end = patch.starts[i], patch.end(j - 1)
        why = decide(change, any(patch.binary[i:j]))
        if why is None:
            if kept and kept[-1][1] == start:
                kept[-1] = (kept[-1][0], end)
            else:
                kept.append((start, end))
            shown.append(change)
            run = max(run, *patch.runs[i:j])
        else:
            left.append((change.path, why))
        i = j
    with memoryview(patch.data) as view:
        text = "".join(str(view[s:e], "utf-8", "replace") for s, e in kept)
    # A fence no line of the text can close (what textsafe.fence_for finds in it: a backtick
    # is one byte in UTF-8).
    fence = "`" * (run + 1) if run >= 3 else "```"
    return Diff(rng, settings, text, tuple(shown), tuple(left), fence)


def diff_command(rng: Range, settings: DiffSettings) -> tuple[str, ...]:
    """The arguments of the one git command that lists the change and makes its patch."""
    flags = ("-r", "-p", *settings.flags(), *_PINNED_FLAGS, "--raw", "-z", "--no-abbrev")
    return (*_pinned(), "diff-tree", *flags, rng.base, rng.head, "--")


def driver_config(root: Path, changes: Sequence[Change]) -> list[str]:
    """The config that takes every diff driver the changed paths' ``diff`` attribute names
    out of the patch: the default function line, binary only when git sees it is (its
    external ``command`` and ``textconv`` are off by flags)."""
    paths = dict.fromkeys(p for c in changes for p in (c.old_path, c.path))
    if not paths:
        return []
    stdin = b"".join(os.fsencode(p) + b"\0" for p in paths)
    # -a (every attribute set): the listing is short (only attributes that are set).
    out = git_output(root, "check-attr", "-a", "-z", "--stdin", stdin=stdin)
    if out is None:
        raise InputError("git could not show the change (check-attr failed)")
    f = out.split(b"\0")
    named = {os.fsdecode(f[i + 2]) for i in range(0, len(f) - 2, 3) if f[i + 1] == b"diff"}
    drivers = sorted(named - _NO_DRIVER)
    bad = next((d for d in drivers if "=" in d), None)
    if bad is not None:
        raise InputError(f"the diff driver {bad!r} a .gitattributes names cannot be overridden")
    return [
        kv
        for d in drivers
        for kv in (f"diff.{d}.xfuncname={DEFAULT_FUNCNAME}", f"diff.{d}.binary=auto")
    ]


@dataclass(frozen=True)
class BaseMarks:
    """What the base commit's ``.gitattributes`` files mark among a change's paths."""

    generated: frozenset[str] = frozenset()
    """Marked ``linguist-generated``."""
    binary: frozenset[str] = frozenset()
    """Marked ``-diff`` (or ``binary``): git shows them as binary whatever they hold."""


def base_marks(root: Path, base: str, paths: Sequence[str]) -> BaseMarks:
    """What ``.gitattributes`` marks among ``paths`` as the commit ``base`` has them: a change
    cannot hide its own files by marking them (nor by adding a ``.gitattributes`` next to
    them). Nothing when git cannot say."""
    out = base_attributes(root, base, paths, "linguist-generated", "diff") if paths else None
    if out is None:
        return BaseMarks()
    f = out.split(b"\0")
    triples = [(os.fsdecode(f[i]), f[i + 1], f[i + 2]) for i in range(0, len(f) - 2, 3)]
    generated = (b"set", b"true")
    return BaseMarks(
        frozenset(p for p, a, v in triples if a == b"linguist-generated" and v in generated),
        frozenset(p for p, a, v in triples if a == b"diff" and v == b"unset"),
    )


def binary_by_attribute(root: Path, paths: Sequence[str]) -> set[str]:
    """Which of ``paths`` the attributes git reads while it diffs (the work tree's
    ``.gitattributes``, then the index's) mark ``-diff``: git shows them as binary."""
    stdin = b"".join(os.fsencode(p) + b"\0" for p in paths)
    out = git_output(root, "check-attr", "-z", "--stdin", "diff", stdin=stdin) if paths else None
    if out is None:
        return set()
    f = out.split(b"\0")
    return {os.fsdecode(f[i]) for i in range(0, len(f) - 2, 3) if f[i + 2] == b"unset"}


def base_attributes(root: Path, base: str, paths: Sequence[str], *names: str) -> bytes | None:
    """``git check-attr -z NAMES`` of ``paths`` with the ``.gitattributes`` files of the
    commit ``base`` (and ``.git/info/attributes``, the operator's ``core.attributesFile``),
    never the work tree's or the index's; None when git cannot say.

    git 2.39 has no ``check-attr --source``: the attribute files that can apply to the paths
    (one per folder above each) are looked up in ``base``, put in a temporary index of their
    own, and ``check-attr --cached`` reads that index."""
    folders = {""}
    for p in paths:
        parts = p.split("/")[:-1]
        folders.update("/".join(parts[: i + 1]) + "/" for i in range(len(parts)))
    # One name a line: a folder with a line break in its name is not looked up (its file
    # could only mark fewer paths as noise).
    candidates = sorted(f"{d}.gitattributes" for d in folders if "\n" not in d)
    stdin = b"".join(os.fsencode(f"{base}:{c}") + b"\n" for c in candidates)
    found = git_output(root, "cat-file", "--batch-check=%(objectname) %(objecttype)", stdin=stdin)
    if found is None:
        return None
    entries = b"".join(
        b"100644 " + line.split(b" ", 1)[0] + b"\t" + os.fsencode(c) + b"\0"
        for c, line in zip(candidates, found.splitlines(), strict=False)
        if line.endswith(b" blob")
    )
    with tempfile.TemporaryDirectory(prefix="deepseek-review-attr-") as tmp:
        env = {"GIT_INDEX_FILE": os.path.join(tmp, "index")}
        if entries and (
            git_output(root, "update-index", "-z", "--index-info", stdin=entries, env=env) is None
        ):
            return None
        stdin = b"".join(os.fsencode(p) + b"\0" for p in paths)
        return git_output(
            root, "check-attr", "-z", "--stdin", "--cached", *names, stdin=stdin, env=env
        )
