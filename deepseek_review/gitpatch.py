"""``diff-tree --raw -z -p``'s output read as git writes it: the change's listing once it is
whole, then where each file's section of the patch begins and whether git shows it as binary.

One pass over the bytes as they arrive (:class:`PatchReader`), so the listing's other
questions to git and the splitting of the patch run while git is still making the rest of
the patch; what is found is exactly what reading the whole output at once finds.
"""

from __future__ import annotations

import re
import sys
from typing import NamedTuple


class Change(NamedTuple):
    """One file of the change, as ``diff --raw`` lists it (a named tuple: a change of
    thousands of files builds thousands, where a frozen dataclass costs four times more)."""

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


def _is_binary(patch: bytes | bytearray, start: int, end: int) -> bool:
    """Whether git shows the section ``patch[start:end]`` as binary (in its header)."""
    head = patch.find(b"\n@@", start, end)
    stop = end if head < 0 else head
    if (  # each line's first words, found quicker than by the pattern
        patch.find(b"\nBinary files ", start, stop) < 0
        and patch.find(b"\nGIT binary patch", start, stop) < 0
    ):
        return False
    return _BINARY_RE.search(patch, start, stop) is not None


_BACKTICKS_RE = re.compile(rb"`{3,}")


def _longest_run(patch: bytes | bytearray, start: int, end: int) -> int:
    """The longest run of 3 or more backticks in ``patch[start:end]``; 0 when none."""
    tick = patch.find(b"`", start, end)  # one byte is looked for far quicker than three
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


class PatchReader:
    """Fed git's output chunk by chunk (:meth:`feed`, then :meth:`end`).

    With ``listing``, the output starts with a ``--raw -z`` listing (NUL-ended records, then
    an empty one) and :attr:`changes` is None until it is whole; without, it is a patch alone.
    A section begins at a line ``diff --git `` (no line of a hunk starts so: each has its
    ``+``, ``-`` or space)."""

    def __init__(self, *, listing: bool = True) -> None:
        self.data = bytearray()
        """Everything read so far."""
        self.changes: list[Change] | None = None if listing else []
        """The listed changes, in the patch's order, once the listing is whole."""
        self.starts: list[int] = []
        """Where each section found so far begins, in :attr:`data`."""
        self.binary: list[bool] = []
        """Whether git shows each section whose end is known as binary."""
        self.runs: list[int] = []
        """The longest run of backticks in each section whose end is known, when it holds
        one of 3 or more (else 0): what a fence around it must be longer than."""
        self._at = 0  # where the listing's end is looked for next
        self._begin: int | None = None if listing else 0  # where the patch begins
        self._first = False  # whether a section at the patch's first byte was looked for
        self._next = 0  # where the next look for a section's start begins

    def feed(self, chunk: bytes) -> None:
        self.data += chunk
        self._advance(final=False)

    def end(self) -> None:
        """Everything was fed: the listing and the last section are whole."""
        self._advance(final=True)

    def _advance(self, *, final: bool) -> None:
        if self.changes is None and not self._list(final):
            return
        if self._begin is not None:
            self._split(final)

    def _list(self, final: bool) -> bool:
        """Read the listing once it is whole (an empty record ends it: paths are never
        empty, so the first two NULs in a row are its end); whether it is."""
        data = self.data
        end = data.find(b"\0\0", self._at)
        if end < 0 and not final:
            self._at = max(self._at, len(data) - 1)  # where two NULs may yet begin
            return False
        self.changes, pos = _records(bytes(data[: end + 1] if end >= 0 else data))
        if self.changes:  # the empty record, then the patch
            self._begin = self._next = pos + 1
        return True

    def _split(self, final: bool) -> None:
        """Find the sections' starts in what arrived, and look at each section now whole."""
        data, begin = self.data, self._begin
        assert begin is not None
        if not self._first:
            if len(data) - begin < len(_SECTION) and not final:
                return
            if data.startswith(_SECTION, begin):
                self.starts.append(begin)
            self._first = True
        at = data.find(_NEXT_SECTION, self._next)
        while at >= 0:
            self.starts.append(at + 1)
            at = data.find(_NEXT_SECTION, at + 1)
        self._next = max(self._next, len(data) - len(_NEXT_SECTION) + 1)
        whole = len(self.starts) if final else len(self.starts) - 1
        bounds = self.starts
        for j in range(len(self.binary), whole):
            start, end = bounds[j], bounds[j + 1] if j + 1 < len(bounds) else len(data)
            self.binary.append(_is_binary(data, start, end))
            self.runs.append(_longest_run(data, start, end))
