"""Where a path named as context really leads, and whether that may be sent: nothing outside
the repository, never git's own data (any ``.git`` folder, a git dir kept elsewhere in the
tree), and through a symlink nothing git ignores (a link would smuggle in ``.env``).
Worked out once per root (:func:`layout_of`), looked up once per file.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from .context_ignore import git_lists
from .context_types import (
    GIT_DATA,
    KIND_GIT_DATA,
    KIND_IGNORED_LINK,
    KIND_LINK_OUT,
    LINK_OUT,
    LINK_TO_GIT_DATA,
)
from .repo import git_dirs, under_dot_git


@dataclass(frozen=True)
class Layout:
    """What every check on a file below ``root`` needs, worked out once per root."""

    prefix: str
    """``root`` ending in a separator: the path of ``rel`` is ``prefix + rel``."""
    git_dirs: tuple[tuple[str, str], ...]
    """(path, repo-relative name) of the repository's git dirs inside the tree that
    :func:`.repo.under_dot_git` does not already catch (``--separate-git-dir``); usually none.
    git lists their files as untracked."""


_LAYOUTS: dict[str, Layout] = {}


def layout_of(root: Path) -> Layout:
    # A plain dict keyed by the path's text: looked up once per file, and a batch plans each
    # entry with its own Path object of the same root (comparing Paths costs more than a hit).
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
