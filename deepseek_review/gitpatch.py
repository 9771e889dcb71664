"""``diff-tree --raw -z -p``'s output read as git writes it: the change's listing once it is
whole, then where each file's section of the patch begins and whether git shows it as binary.

One pass over the bytes as they arrive (:class:`PatchReader`), so the listing's other
questions to git and the splitting of the patch run while git is still making the rest of
the patch; what is found is exactly what reading the whole output at once finds.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass


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


_SECTION = b"diff --git "
_NEXT_SECTION = b"\n" + _SECTION
_BINARY_RE = re.compile(rb"^(?:Binary files .* differ|GIT binary patch)$", re.MULTILINE)


def _is_binary(patch: bytes | bytearray, start: int, end: int) -> bool:
    """Whether git shows the section ``patch[start:end]`` as binary (in its header)."""
    head = patch.find(b"\n@@", start, end)
    return _BINARY_RE.search(patch, start, end if head < 0 else head) is not None


_BACKTICKS_RE = re.compile(rb"`{3,}")


def _longest_run(patch: bytes | bytearray, start: int, end: int) -> int:
    """The longest run of 3 or more backticks in ``patch[start:end]``; 0 when none."""
    if patch.find(b"```", start, end) < 0:
        return 0
    return max(len(m) for m in _BACKTICKS_RE.findall(patch, start, end))


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
        self._listed: list[Change] = []
        self._at = 0  # the listing's next record
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
        """Read the listing's records that arrived whole; whether the listing is whole."""
        data = self.data
        while self._at < len(data) and data[self._at] == 0x3A:  # ":" begins a record
            try:
                self._at = self._record(self._at)
            except ValueError:  # cut short: the rest is on its way
                if final:
                    raise
                return False
        pos = self._at
        if pos >= len(data) and not final:
            return False  # another record may follow
        self.changes = self._listed
        if self._listed:  # an empty record ends the listing, then the patch begins
            self._begin = self._next = pos + 1
        return True

    def _record(self, pos: int) -> int:
        """Parse the record at ``pos``; where the next one begins."""
        data = self.data
        end = data.index(b"\0", pos)
        _, new_mode, old_blob, new_blob, status = data[pos + 1 : end].decode().split(" ")
        names = []
        for _ in range(2 if status[:1] in ("R", "C") else 1):
            start, end = end + 1, data.index(b"\0", end + 1)
            names.append(os.fsdecode(bytes(data[start:end])))
        self._listed.append(Change(status, names[-1], names[0], old_blob, new_blob, new_mode))
        return end + 1

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
