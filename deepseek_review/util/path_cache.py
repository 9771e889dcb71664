"""Path resolutions settled once while a batch plans its manifest.

A batch plans hundreds of entries naming the same root and output folder (and shares the files
they gather the same way); inside :func:`paths_settled`, :mod:`git.runner` resolves each of them
once. Only results are kept, never refusals: each caller words its own.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

_T = TypeVar("_T")

_SETTLED: ContextVar[dict[tuple[Any, ...], Any] | None] = ContextVar(
    "deepseek_review_settled_paths", default=None
)


@contextmanager
def paths_settled() -> Iterator[None]:
    """Within the block, the root and each path given to :func:`git.runner.resolve_inside` are
    resolved once."""
    token = _SETTLED.set({})
    try:
        yield
    finally:
        _SETTLED.reset(token)


def settled(key: tuple[Any, ...], resolve: Callable[[], _T]) -> _T:
    """``resolve()``, or inside :func:`paths_settled` what it gave for ``key`` before."""
    memo = _SETTLED.get()
    if memo is None:
        return resolve()
    if key not in memo:
        memo[key] = resolve()
    got: _T = memo[key]
    return got
