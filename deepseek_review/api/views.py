"""What ``config`` and ``show`` return (see :mod:`.api`).

Apart from :mod:`deepseek_review.api.run`, whose functions make them: ``run`` returns neither.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from deepseek_review.options.config import Refusal, Settings
    from deepseek_review.records.stored import ChainSegment


@dataclass(frozen=True)
class Configuration:
    """Every setting's effective value and source (``deepseek-review config``)."""

    root: Path
    settings: Settings
    endpoint: str | None
    """The chat-completions URL a review would be sent to; None when it is refused."""
    refused: tuple[Refusal, ...] = ()
    """What was read but refused, each with the error a run stops with."""


@dataclass(frozen=True)
class ShownChain:
    """A chain read back (``deepseek-review show``): its segments and its stitched answer."""

    root: Path
    segments: tuple[ChainSegment, ...]
    text: str

    @property
    def cut_off(self) -> bool:
        """The last segment ended at the token cap."""
        return self.segments[-1].finish_reason == "length"
