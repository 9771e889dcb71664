"""What :mod:`reviewing.segment` calls right after a receipt is written: sign it, when a key is set.

The key is set for a whole run (``run --sign``, ``batch --sign``, or :func:`signing` in the
library) rather than carried through every review's options: one process-wide value that the
batch's worker threads see too.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING

from deepseek_review.errors import ConfigError, OutputError

if TYPE_CHECKING:
    from deepseek_review.signing.segments import SigningKey

_active: SigningKey | None = None


@contextmanager
def signing(key: SigningKey | None) -> Iterator[None]:
    """Sign every segment written inside (``None``: sign nothing)."""
    global _active
    before, _active = _active, key
    try:
        yield
    finally:
        _active = before


def after_receipt(root: Path, receipt_rel: str) -> None:
    """Sign the segment just committed, if a key is set. A key that stopped working since the
    pre-flight is an :class:`OutputError`: the segment is kept, valid and unsigned, and
    ``sign`` completes it."""
    key = _active
    if key is None:
        return
    from deepseek_review.signing.segments import sign_segment

    try:
        sign_segment(root, receipt_rel, key)
    except ConfigError as exc:
        raise OutputError(
            f"{receipt_rel}: written but not signed ({exc.message}); "
            "`deepseek-review sign` completes it"
        ) from None
