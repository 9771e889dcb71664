"""What the entries of a manifest share while they are planned.

A batch's hundreds of entries mostly name the same prompt files, the same options but for
topic and prompt, and the same context: each of those is read, built or gathered once per
manifest here, and every entry gets the same value, or the same refusal, its own planning
would have made.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepseek_review.context.gather import ContextLimits, Gathered, Output, gather_context
from deepseek_review.errors import InputError, ReviewError
from deepseek_review.reviewing.setup import read_prompt_file

if TYPE_CHECKING:
    from deepseek_review.batch.manifest_file import Entry
    from deepseek_review.reviewing.pipeline import GatherFn, ReviewOptions


class PromptFiles:
    """Prompt files read once each (many entries often share one)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._texts: dict[tuple[Path, int], str | InputError] = {}

    def read(self, path: Path, shown: str, limit: int) -> str:
        with self._lock:
            cached = self._texts.get((path, limit))
        if cached is None:
            try:
                cached = read_prompt_file(path, shown, limit)
            except InputError as exc:
                cached = exc
            with self._lock:
                self._texts[(path, limit)] = cached
        if isinstance(cached, InputError):
            raise cached
        return cached


#: An entry's keys that :class:`EntryOptions` does not share options across.
_PER_ENTRY = frozenset({"topic", "prompt", "prompt_file"})


class EntryOptions:
    """The options of entries that differ only in topic and prompt, built once (a batch's
    hundreds of entries mostly differ in nothing else): the same options, or the same
    refusal, each entry's own merge would have made. One per manifest and its levels."""

    def __init__(self, outputs: tuple[Output, ...] = ()) -> None:
        self.outputs = outputs
        """What every entry's folders and globs leave out (``ReviewOptions.outputs``)."""
        self._built: dict[str, tuple[Any, ReviewOptions | ReviewError]] = {}

    def key(self, entry: Entry) -> str:
        """The entry's keys but its topic and prompt (checked values: plain TOML or JSON)."""
        return repr([kv for kv in entry.values.items() if kv[0] not in _PER_ENTRY])

    def get(self, key: str) -> tuple[Any, ReviewOptions | ReviewError] | None:
        """The ``max_context_bytes`` (a prompt file's limit) and options built for ``key``."""
        return self._built.get(key)

    def put(self, key: str, limit: Any, built: ReviewOptions | ReviewError) -> None:
        self._built[key] = (limit, built)


_GatherKey = tuple[Path, tuple[str, ...], ContextLimits, tuple[Output, ...]]


class ContextCache:
    """Context gathered once per distinct (specs, limits, outputs) for the whole batch.

    Entries that name the same context share the same :class:`ContextFile` objects, so the
    bytes hashed into every receipt are the bytes sent. Refusals are cached too.
    """

    def __init__(self, gather: GatherFn = gather_context) -> None:
        self._gather = gather
        self._lock = threading.Lock()
        self._done: dict[_GatherKey, Gathered] = {}
        self._failed: dict[_GatherKey, ReviewError] = {}

    def __call__(
        self, root: Path, specs: Sequence[str], limits: ContextLimits, outputs: Sequence[Output]
    ) -> Gathered:
        key = (root, tuple(specs), limits, tuple(outputs))
        with self._lock:
            if key in self._done:
                done = self._done[key]
                return Gathered(done, done.skipped)
            if key in self._failed:
                raise self._failed[key]
        try:
            files = self._gather(root, specs, limits, outputs)
        except ReviewError as exc:
            with self._lock:
                self._failed.setdefault(key, exc)
            raise
        with self._lock:
            self._done.setdefault(key, files)
        return Gathered(files, files.skipped)
