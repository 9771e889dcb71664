"""``diff-tree --raw -z -p``'s whole output split: the change's listing, then where each
file's section of the patch begins and whether git shows it as binary (:func:`parse_patch`).
"""

from __future__ import annotations

import re
import sys
from typing import NamedTuple


class Change(NamedTuple):
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


_SECTION = b"diff --git "
_NEXT_SECTION = b"\n" + _SECTION
_BINARY_RE = re.compile(rb"^(?:Binary files .* differ|GIT binary patch)$", re.MULTILINE)


def _is_binary(patch: bytes, start: int, end: int) -> bool:
    """Whether git shows the section ``patch[start:end]`` as binary (in its header)."""
    head = patch.find(b"\n@@", start, end)
    stop = end if head < 0 else head
    if (  # the header lines git writes for a binary file
        patch.find(b"\nBinary files ", start, stop) < 0
        and patch.find(b"\nGIT binary patch", start, stop) < 0
    ):
        return False
    return _BINARY_RE.search(patch, start, stop) is not None


_BACKTICKS_RE = re.compile(rb"`{3,}")


def _longest_run(patch: bytes, start: int, end: int) -> int:
    """The longest run of 3 or more backticks in ``patch[start:end]``; 0 when none."""
    tick = patch.find(b"`", start, end)  # no backtick, or none three in a row: no run
    if tick < 0 or patch.find(b"```", tick, end) < 0:
        return 0
    return max(len(m) for m in _BACKTICKS_RE.findall(patch, start, end))


def _records(listing: bytes) -> tuple[list[Change], int]:
    """The records a ``--raw -z`` listing at the start of ``listing`` holds, in the patch's
    order, and where what follows them begins; a record cut short is a ValueError."""
    fields = listing.split(b"\0")  # each NUL-ended but the last
    encoding, errors = sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()
    changes: list[Change] = []
    i = 0
    while i < len(fields) and fields[i].startswith(b":"):
        if i > len(fields) - 2:
            raise ValueError("a listing record cut short")
        _, new_mode, old_blob, new_blob, status = fields[i][1:].decode().split(" ")
        names = fields[i + 1 : i + (3 if status[:1] in ("R", "C") else 2)]
        if i + len(names) > len(fields) - 2 or not names:
            raise ValueError("a listing record cut short")
        old, new = names[0].decode(encoding, errors), names[-1].decode(encoding, errors)
        changes.append(Change(status, new, old, old_blob, new_blob, new_mode))
        i += 1 + len(names)
    return changes, sum(map(len, fields[:i])) + i  # each field and its NUL


class Patch(NamedTuple):
    """``diff-tree``'s whole output split: the listed changes and each section's bounds."""

    data: bytes
    """The output as git printed it."""
    changes: list[Change]
    """The listed changes, in the patch's order (empty for a patch alone)."""
    starts: list[int]
    """Where each section begins in :attr:`data`."""
    binary: list[bool]
    """Whether git shows each section as binary."""
    runs: list[int]
    """The longest run of 3 or more backticks in each section (else 0): what a fence
    around it must be longer than."""

    def end(self, section: int) -> int:
        """Where section ``section`` ends in :attr:`data`."""
        return self.starts[section + 1] if section + 1 < len(self.starts) else len(self.data)


def parse_patch(data: bytes, *, listing: bool = True) -> Patch:
    """Split git's whole output. With ``listing``, it starts with a ``--raw -z`` listing
    (NUL-ended records, then an empty one: paths are never empty, so the first two NULs in
    a row are its end); without, it is a patch alone. A section begins at a line
    ``diff --git `` (no line of a hunk starts so: each has its ``+``, ``-`` or space)."""
    changes: list[Change] = []
    begin: int | None = 0
    if listing:
        end = data.find(b"\0\0")
        changes, pos = _records(data[: end + 1] if end >= 0 else data)
        begin = pos + 1 if changes else None  # the empty record, then the patch
    starts: list[int] = []
    if begin is not None:
        if data.startswith(_SECTION, begin):
            starts.append(begin)
        at = data.find(_NEXT_SECTION, begin)
        while at >= 0:
            starts.append(at + 1)
            at = data.find(_NEXT_SECTION, at + 1)
    ends = [*starts[1:], len(data)][: len(starts)]
    binary = [_is_binary(data, s, e) for s, e in zip(starts, ends, strict=True)]
    runs = [_longest_run(data, s, e) for s, e in zip(starts, ends, strict=True)]
    return Patch(data, changes, starts, binary, runs)
