"""Shared pytest fixtures."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from deepseek_review.simulator import Simulator


@pytest.fixture
def simulator() -> Iterator[Simulator]:
    """A started simulator with the default config, stopped after the test."""
    sim = Simulator().start()
    try:
        yield sim
    finally:
        sim.stop()


@pytest.fixture
def make_simulator() -> Iterator[Callable[..., Simulator]]:
    """A factory of started simulators (config overrides as keywords); all stopped after."""
    made: list[Simulator] = []

    def make(**overrides: Any) -> Simulator:
        sim = Simulator(**overrides).start()
        made.append(sim)
        return sim

    try:
        yield make
    finally:
        for sim in made:
            sim.stop()
