"""Where the external programs the tool runs (git, ssh-keygen) are found: one lookup for all.

``PATH`` is the operator's, but its empty and relative entries (``:/usr/bin``, ``.``) name
the working folder, which is usually the repository under review: a ``git`` or
``ssh-keygen`` planted there would run with the operator's keys and tokens. Only absolute
entries are searched.
"""

from __future__ import annotations

import os
import shutil

from deepseek_review.errors import ConfigError


def search_path() -> str:
    """The absolute entries of ``PATH`` (``os.defpath`` when it is unset), in order."""
    entries = os.environ.get("PATH", os.defpath).split(os.pathsep)
    return os.pathsep.join(d for d in entries if os.path.isabs(d))


def find_program(name: str) -> str | None:
    """``name`` from an absolute entry of ``PATH``; None when none holds it."""
    return shutil.which(name, path=search_path())


def require_program(name: str, why: str) -> str:
    """``name`` as :func:`find_program` finds it, or a :class:`ConfigError` naming the
    program and the ``PATH`` searched (``why``: what needs it)."""
    found = find_program(name)
    if found is None:
        shown = os.environ.get("PATH", os.defpath)
        raise ConfigError(
            f"{name} not found on PATH ({shown}; only absolute entries are searched): {why}"
        )
    return found
