"""Which of a change's files a review keeps, decided as git's patch arrives.

Once the listing is whole, what it alone decides is asked of git on other threads while git
makes the patch (:class:`Aside`: the diff drivers to set back, the noise rules' attributes);
then each listed change is paired with its section(s) of the patch as they arrive, and kept
or left out (:class:`Keeper`), so little is left to do when git ends.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from .errors import InputError
from .gitpatch import Change, PatchReader

T = TypeVar("T")
#: Why a file is left out of the diff (None: shown), given its change and whether git
#: shows it as binary.
Decide = Callable[[Change, bool], str | None]


class Background(Generic[T]):
    """``fn(*args)`` run on a thread of its own in a copy of the caller's context (an
    option named in a message is spelled as the caller spells it); :meth:`result` waits for
    it and raises what it raised."""

    def __init__(self, fn: Callable[..., T], *args: Any) -> None:
        self._value: T | None = None
        self._error: BaseException | None = None
        context = contextvars.copy_context()
        self._thread = threading.Thread(target=context.run, args=(self._run, fn, *args))
        self._thread.start()

    def _run(self, fn: Callable[..., T], *args: Any) -> None:
        try:
            self._value = fn(*args)
        except BaseException as exc:  # handed to the caller's thread by result()
            self._error = exc

    def succeeded(self) -> bool:
        """Whether it has ended without raising (not waiting for it)."""
        return not self._thread.is_alive() and self._error is None

    def join(self) -> None:
        self._thread.join()

    def result(self) -> T:
        self._thread.join()
        if self._error is not None:
            raise self._error
        return self._value  # type: ignore[return-value]


class Aside:
    """What the listing alone decides, worked out while git makes the patch: the diff
    drivers to set back (``drivers``, None: left as configured) and why each change would
    be left out (``rules``); both ask git."""

    def __init__(
        self,
        changes: list[Change],
        rules: Callable[[list[Change]], Decide],
        drivers: Callable[[list[Change]], list[str]] | None,
    ) -> None:
        self._drivers = Background(drivers, changes) if drivers is not None else None
        self._rules = Background(rules, changes)

    def ready(self) -> Decide | None:
        """The rules, once both are known and no driver is to be set back (the patch that
        arrives is then the one kept); else None, for now (an error waits for its turn:
        :meth:`config`, then :meth:`decide`, once git has ended)."""
        works = (self._drivers, self._rules)
        if not all(w is None or w.succeeded() for w in works) or self.config():
            return None
        return self.decide()

    def config(self) -> list[str]:
        return self._drivers.result() if self._drivers is not None else []

    def decide(self) -> Decide:
        return self._rules.result()

    def join(self) -> None:
        for work in (self._drivers, self._rules):
            if work is not None:
                work.join()


class Keeper:
    """The listed ``changes`` paired with their sections of the patch, as the sections
    arrive (:meth:`advance`), each kept or left out."""

    def __init__(self, changes: list[Change]) -> None:
        self.changes = changes
        self.kept: list[tuple[int, int]] = []
        """The kept sections' bounds in the patch, contiguous ones as one."""
        self.shown: list[Change] = []
        self.left: list[tuple[str, str]] = []
        """(path, why) of every file left out."""
        self.run = 0
        """The longest run of backticks in what is kept, when it holds one of 3 or more."""
        self._next = 0  # the next change to decide
        self._section = 0  # its first section

    def advance(self, patch: PatchReader, decide: Decide, *, final: bool = False) -> None:
        """Decide every change whose sections are all whole; ``final``: the patch is whole
        (every change is decided, or git's listing and patch disagree: InputError)."""
        starts, binary, runs = patch.starts, patch.binary, patch.runs
        if final and len(starts) != sum(c.sections for c in self.changes):
            raise InputError(
                f"git listed {len(self.changes)} changed files but its patch has "
                f"{len(starts)} sections: cannot tell them apart"
            )
        changes, kept, i = self.changes, self.kept, self._section
        while self._next < len(changes):
            change = changes[self._next]
            j = i + 1 if change.status != "T" else i + 2  # its sections (Change.sections)
            if j > len(binary):
                break  # its sections are not all here yet
            start, end = starts[i], starts[j] if j < len(starts) else len(patch.data)
            why = decide(change, binary[i] if j == i + 1 else any(binary[i:j]))
            if why is None:
                if kept and kept[-1][1] == start:
                    kept[-1] = (kept[-1][0], end)  # contiguous: one slice
                else:
                    kept.append((start, end))
                self.shown.append(change)
                self.run = max(self.run, *runs[i:j])
            else:
                self.left.append((change.path, why))
            self._next, i = self._next + 1, j
        self._section = i

    def text(self, patch: PatchReader) -> str:
        """The kept sections' text (UTF-8; bytes that are not are replaced)."""
        with memoryview(patch.data) as view:
            return "".join(str(view[s:e], "utf-8", "replace") for s, e in self.kept)

    def fence(self) -> str:
        """A backtick fence no line of :meth:`text` can close (what
        :func:`.prompt.fence_for` finds in it: a backtick is one byte in UTF-8)."""
        return "`" * (self.run + 1) if self.run >= 3 else "```"
