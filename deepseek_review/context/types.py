"""The values of context gathering: a file as sent, the limits, what is left out and why.

Shared by expansion (:mod:`context.gather`), reading (:mod:`context.read`) and everything that
takes a gathered file list (prompt framing, the secret scan, records).
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from deepseek_review.options.table import check, default
from deepseek_review.records.naming import name_order, topic_of
from deepseek_review.records.storage import TEMP_PREFIX, TEMP_SUFFIX

#: Sized for a 128k-token model: ~4 bytes a token leaves about 28k tokens for the template
#: and the answer.
DEFAULT_MAX_CONTEXT_BYTES: int = default("max_context_bytes")
DEFAULT_MAX_FILE_BYTES: int = default("max_file_bytes")

_GLOB_CHARS = re.compile(r"[*?\[]")


class ContextFile(NamedTuple):
    """One file as it goes into the prompt."""

    path: str
    """Repo-relative POSIX path, as receipts name it."""
    text: str
    """The file's text (decoded UTF-8, byte for byte what is sent): with ``lines``, only those
    lines of it."""
    sha256: str
    """``sha256:<hex>`` of the bytes sent (the whole file's, or its lines')."""
    size: int
    """Size in bytes of what is sent."""
    lines: LineRange | None = None
    """Only these lines of the file are sent (``path#L120-L260``); None: the whole file."""
    whole: ContextFile | None = None
    """With ``lines``: the whole file as read (what it is pinned by); the ranges of one file
    share it. Dropped once pinned (a plan keeps ``lines`` only)."""


class LineRange(NamedTuple):
    """A range of a file's lines (1-based, inclusive) and how many lines the file has."""

    first: int
    last: int
    total: int | None = None
    """The file's lines (None: not known, e.g. a continuation rebuilt from its record)."""

    @property
    def span(self) -> tuple[int, int]:
        """``(first, last)``, as a record says it."""
        return self.first, self.last


@dataclass(frozen=True)
class ContextLimits:
    """Size limits checked before anything is sent."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_context_bytes: int = DEFAULT_MAX_CONTEXT_BYTES

    def __post_init__(self) -> None:
        check("max_file_bytes", self.max_file_bytes)
        check("max_context_bytes", self.max_context_bytes)


#: The kinds of what a folder or glob leaves out, as the summary line counts them.
KIND_GIT_DATA = "in git's data"
KIND_IGNORED_LINK = "a symlink to what git ignores"
KIND_LINK_OUT = "a symlink out of the repository"
KIND_BINARY = "binary"
KIND_NOT_UTF8 = "not UTF-8"
KIND_TOO_BIG = "over --max-file-bytes"
KIND_UNREADABLE = "unreadable"
KIND_WRITTEN = "written by deepseek-review"
KIND_BAD_NAME = "badly named"
KIND_EXCLUDED = "excluded"
#: Left out for safety: each is warned about on its own line (a repository that links into
#: git's data or to an ignored file, or names a file with control characters, may be trying
#: something).
WARNED_KINDS = frozenset({KIND_GIT_DATA, KIND_IGNORED_LINK, KIND_BAD_NAME})


@dataclass(frozen=True)
class Skipped:
    """What a folder or glob listed that is left out, and why (``--dry-run`` lists it, a
    review sums it up in one line)."""

    path: str
    """Repo-relative; a folder left out whole ends in ``/``."""
    reason: str
    kind: str = ""
    """What the summary line counts it as: a ``KIND_*`` word, or where an output is."""
    files: int = 1
    """How many listed files this stands for (a folder left out whole: all of them)."""
    own: bool = False
    """The tool's own output (left out as a rule, not because it could not be sent)."""


@dataclass(frozen=True)
class Output:
    """A path the tool writes to (an output folder, a batch report): folders and globs never
    list it, nor anything below it. ``path`` is repo-relative; ``.`` (writing into the root)
    leaves out nothing by place, only by name (:func:`written_by_tool`)."""

    path: str
    what: str = "the output folder"

    def holds(self, rel: str) -> bool:
        return self.path != "." and (rel == self.path or rel.startswith(self.path + "/"))


class Gathered(list[ContextFile]):
    """The context files in order (a list), and what expansion found but left out."""

    def __init__(self, files: Iterable[ContextFile] = (), skipped: Iterable[Skipped] = ()) -> None:
        super().__init__(files)
        self.skipped = tuple(skipped)


#: Why a path is refused (named) or skipped (listed): git's own data, in ``where``.
GIT_DATA = "inside {where} (git's own data, never context)"
LINK_TO_GIT_DATA = "a symlink into {where} (git's own data, never context)"
LINK_OUT = "a symlink leads outside the repository root ({real})"
UNSAFE_NAME = (
    "name holds control characters (e.g. a newline, a bidi override or a zero-width space)"
)
_STAMP_END = re.compile(r"_[0-9]{8}T[0-9]{6}Z\Z")
#: In every name :func:`written_by_tool` says yes to that is not a temporary file's.
WRITTEN_MARK = "_deepseek_"


def written_by_tool(rel: str) -> bool:
    """Whether ``rel`` is named as this tool names the files it writes: an answer, receipt,
    request record or kept reasoning (``<topic>_deepseek_<model>[_continuation]_<stamp>
    [-N].{md,receipt.json,request.json,reasoning.md}``, see :func:`.records.naming.stem_for`), or
    a temporary file a killed writer left."""
    name = rel.rpartition("/")[2]
    if name.startswith(TEMP_PREFIX) and name.endswith(TEMP_SUFFIX):
        return True
    if WRITTEN_MARK not in name:  # what every name :func:`.records.naming.topic_of` reads has
        return False
    _, base, _, suffix = name_order(name)
    return bool(suffix) and topic_of(base) is not None and _STAMP_END.search(base) is not None


def is_glob(spec: str) -> bool:
    return _GLOB_CHARS.search(spec) is not None


#: How a context spec says "leave this out": git's ``:(exclude)``, ``:!`` and ``:^`` magic
#: (``--exclude PATTERN`` is passed on as ``:(exclude)PATTERN``).
_EXCLUDE_PREFIXES = (":(exclude)", ":!", ":^")


def split_exclusions(specs: Iterable[str]) -> tuple[list[str], list[str]]:
    """The specs that name context, and the patterns of those that exclude (git's magic)."""
    names: list[str] = []
    patterns: list[str] = []
    for spec in specs:
        prefix = next((p for p in _EXCLUDE_PREFIXES if spec.startswith(p)), None)
        if prefix is None:
            names.append(spec)
        else:
            patterns.append(spec[len(prefix) :])
    return names, patterns


def excluded(rel: str, patterns: Sequence[str]) -> bool:
    """Whether a git pathspec of ``patterns`` matches ``rel``, as git matches one without
    magic: the path itself or a folder above it, wildcards (``*``, ``?``, ``[...]``) matching
    across ``/`` too."""
    for pattern in patterns:
        p = pattern.rstrip("/")
        if p in ("", "."):
            return True
        if rel == p or rel.startswith(p + "/"):
            return True
        if is_glob(p) and (fnmatch.fnmatchcase(rel, p) or fnmatch.fnmatchcase(rel, p + "/*")):
            return True
    return False
