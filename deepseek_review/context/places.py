"""Where a path named as context really leads, and whether that may be sent: nothing outside
the repository, never git's own data (any ``.git`` folder, a git dir kept elsewhere in the
tree), and through a symlink nothing git ignores (a link would smuggle in ``.env``).
Worked out once per root (:func:`layout_of`), looked up once per file.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from deepseek_review.context.ignore import IgnoreWalker, git_lists
from deepseek_review.context.types import (
    GIT_DATA,
    KIND_GIT_DATA,
    KIND_IGNORED_LINK,
    KIND_LINK_OUT,
    LINK_OUT,
    LINK_TO_GIT_DATA,
)
from deepseek_review.errors import InputError
from deepseek_review.git.runner import git_dirs, git_output, in_git_work_tree, under_dot_git
from deepseek_review.util.path_cache import settled


@dataclass(frozen=True)
class Layout:
    """What every check on a file below ``root`` needs, worked out once per root."""

    prefix: str
    """``root`` ending in a separator: the path of ``rel`` is ``prefix + rel``."""
    git_dirs: tuple[tuple[str, str], ...]
    """(path, repo-relative name) of the repository's git dirs inside the tree that
    :func:`git.runner.under_dot_git` does not already catch (``--separate-git-dir``); usually none.
    git lists their files as untracked."""


_LAYOUTS: dict[str, Layout] = {}


def layout_of(root: Path) -> Layout:
    # A plain dict keyed by the path's text: a batch plans each entry with its own Path
    # object of the same root.
    key = os.fspath(root)
    layout = _LAYOUTS.get(key)
    if layout is None:
        prefix = os.path.join(key, "")
        dirs = tuple(
            (d, d[len(prefix) :].replace(os.sep, "/") + "/")
            for d in git_dirs(root)
            if d.startswith(prefix) and not under_dot_git(d[len(prefix) :].replace(os.sep, "/"))
        )
        layout = _LAYOUTS.setdefault(key, Layout(prefix, dirs))
    return layout


def git_data(layout: Layout, real: str, real_rel: str) -> str | None:
    """Which of git's folders ``real`` (``real_rel`` below the root) is in, or None."""
    if under_dot_git(real_rel):
        return ".git/"
    for path, name in layout.git_dirs:
        if real == path or real.startswith(path + os.sep):
            return name
    return None


def why_not_context(root: Path, rel: str, real: str, is_dir: bool) -> tuple[str, str] | None:
    """Why ``rel`` (as named), which really is ``real`` (resolved), may not be context: the
    reason and its kind (``KIND_*``), or None when it may.

    Nothing outside the root may. git's own data never may (any folder named ``.git``, the
    repository's git dir wherever it is); through a symlink (``real`` is not ``rel``) neither
    may a file or folder git ignores, which the link would smuggle in (``.env``).
    """
    layout = layout_of(root)
    if real.startswith(layout.prefix):
        real_rel = real[len(layout.prefix) :]
    elif real + os.sep == layout.prefix:
        real_rel = "."
    else:
        return LINK_OUT.format(real=real), KIND_LINK_OUT
    linked = real_rel != rel
    where = git_data(layout, real, real_rel)
    if where is not None:
        return (LINK_TO_GIT_DATA if linked else GIT_DATA).format(where=where), KIND_GIT_DATA
    if linked and not git_lists(root, real_rel, is_dir):
        return f"a symlink to {real_rel}, which git ignores", KIND_IGNORED_LINK
    return None


# --------------------------------------------------------------------------- named paths

#: Why a path-valued option may not name a place in git's data (its own words: not context).
GIT_DATA_NAMED = "inside {where} (git's own data: never read or written)"
#: Why a repository file (a manifest) may not name a file git ignores.
IGNORED_NAMED = (
    "git ignores it, and {by} may not name an ignored file (.env, tokens); name it on the "
    "command line to send it"
)


def _dot_git_in(parts: Iterable[str]) -> bool:
    return any(p.lower() == ".git" for p in parts)


def git_data_named(root: Path, spelled: str, real: Path) -> str | None:
    """Which of git's folders a path spelled ``spelled``, which really is ``real`` (resolved),
    is in, or None: a part ``.git`` in any case as spelled (``a/../.git``, a submodule's
    gitfile) or as resolved (a symlink to ``.git``), or the repository's git dir or common
    dir wherever they are (a linked worktree's, ``--separate-git-dir``)."""
    if _dot_git_in(spelled.replace(os.sep, "/").split("/")):
        return ".git/"
    text = os.fspath(real)
    layout = layout_of(root)
    if text.startswith(layout.prefix):
        where = git_data(layout, text, text[len(layout.prefix) :].replace(os.sep, "/"))
        if where is not None:
            return where
    elif _dot_git_in(real.parts):  # outside the root (a prompt file of the operator's)
        return ".git/"
    for folder in git_dirs(root):
        if text == folder or text.startswith(folder + os.sep):
            return os.path.basename(folder) + "/"
    return None


def refuse_git_data(root: Path, spelled: str, real: Path, *, what: str) -> None:
    """Refuse a path-valued option (``what``, as the reporting layer names it) that names a
    place in git's data: the checkout token lives in ``.git/config``, and a file written into
    ``.git/hooks`` or ``.git/refs`` is a hook or a broken ref."""
    where = git_data_named(root, spelled, real)
    if where is not None:
        raise InputError(f"{what} {spelled}: {GIT_DATA_NAMED.format(where=where)}")


def _ignored_listing(root: Path) -> frozenset[str] | None:
    """What git ignores in the work tree: untracked ignored files, and folders (``name/``)
    that hold nothing else; one ``git ls-files`` for the whole tree (a batch asks it once:
    :func:`deepseek_review.util.path_cache.paths_settled`). None when git failed."""
    args = ("-c", "core.quotePath=false", "ls-files", "-z", "--others", "--ignored")
    out = git_output(root, *args, "--exclude-standard", "--directory")
    if out is None:
        return None
    return frozenset(os.fsdecode(name) for name in out.split(b"\0") if name)


def ignored_of(root: Path, rels: Sequence[str]) -> list[str]:
    """Which of the files ``rels`` (repo-relative) git ignores: not tracked, and matched by
    its ignore rules (or inside an ignored folder); outside git, by the ``.gitignore`` files."""
    if not rels:
        return []
    if not in_git_work_tree(root):
        walker = IgnoreWalker(root)
        return [rel for rel in rels if walker.excluded(rel, False)]
    listing = settled(("ignored", os.fspath(root)), lambda: _ignored_listing(root))
    if listing is None:  # git failed: assume the worst
        return list(rels)

    def ignored(rel: str) -> bool:
        parts = rel.split("/")
        return rel in listing or any(
            "/".join(parts[:i]) + "/" in listing for i in range(1, len(parts))
        )

    return [rel for rel in rels if ignored(rel)]


def refuse_ignored(root: Path, named: Sequence[tuple[str, str, str]], *, by: str) -> None:
    """Refuse the first of ``named`` ((what, spelled, repo-relative path) triples: paths a
    repository file ``by`` names) that is a file git ignores, by its name or where a symlink
    leads (``prompt.md -> ../.env``). Folders are left alone: git's listing already leaves out
    what it ignores."""
    files: dict[str, tuple[str, str]] = {}
    prefix = layout_of(root).prefix
    for what, spelled, rel in named:
        real = os.path.realpath(prefix + rel)
        if not os.path.isfile(real):
            continue
        files.setdefault(rel, (what, spelled))
        if real.startswith(prefix):
            files.setdefault(real[len(prefix) :].replace(os.sep, "/"), (what, spelled))
    for rel in ignored_of(root, list(files))[:1]:
        what, spelled = files[rel]
        raise InputError(f"{what} {spelled}: {IGNORED_NAMED.format(by=by)}")
