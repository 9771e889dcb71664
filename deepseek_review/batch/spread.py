"""The order a batch runs its entries in, and how they are expected to spread over a pool of
servers: what ``batch --dry-run`` shows of the pool before anything is sent.

Entries that share their model and context files (an affinity group) run back to back, and a
group sticks to the server that served it while that server has a free slot. Where each group
goes depends on how long each review takes; the dry run plays the pool's own choices
(:class:`~deepseek_review.reviewing.pool.Pool`) over the entries in run order as if every
review took as long as the others: the expectation, not a promise.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

from deepseek_review.batch.plan import Work
from deepseek_review.chat.endpoint import Endpoint
from deepseek_review.reviewing.pool import Pool, Server, affinity


def grouped(todo: list[tuple[int, Work]]) -> list[tuple[int, Work]]:
    """The entries to run, those that share their model and context back to back (in the
    order each group first appears): a server's prefix cache, and on Ollama its loaded
    model, serve the next of them. Otherwise the manifest's order."""
    groups: dict[Hashable, int] = {}
    return sorted(todo, key=lambda iw: groups.setdefault(affinity(iw[1].planned.plan), len(groups)))


def pooled(work: Work, servers: int) -> bool:
    """The entry goes to the pool: its endpoint is the operator's (an entry that names its
    own server is sent there)."""
    return servers > 1 and work.planned.plan.endpoint.source == "endpoint"


@dataclass(frozen=True)
class ServerShare:
    """One server of the pool: how many requests it gets at once, and the entries expected
    to start there."""

    url: str
    concurrency: int
    topics: tuple[str, ...]


@dataclass(frozen=True)
class Group:
    """Entries sharing their model and context files, in the order they run."""

    number: int
    model: str
    context_files: int
    topics: tuple[str, ...]
    servers: tuple[str, ...]
    """The servers its entries are expected on (one, unless it outgrows that one's slots)."""


@dataclass(frozen=True)
class PoolSpread:
    """The whole pool of a batch and how its entries are expected to spread over it."""

    jobs: int
    servers: tuple[ServerShare, ...]
    groups: tuple[Group, ...]
    expected: dict[str, str]
    """The server each pooled entry is expected to start on, by topic."""

    def group_of(self, topic: str) -> int | None:
        return next((g.number for g in self.groups if topic in g.topics), None)


def expected_spread(
    work: Sequence[Work], endpoints: Sequence[Endpoint], jobs: int, per_server: int | None
) -> PoolSpread | None:
    """The pool's servers with their concurrency, and where the entries to send (not the
    skipped, not those naming their own endpoint) are expected to go; None without a pool."""
    if len(endpoints) < 2:
        return None
    pool = Pool(endpoints, jobs, per_server, threading.Event())
    cap = min(jobs, sum(s.limit for s in pool.servers))
    todo = grouped([(i, w) for i, w in enumerate(work) if w.action != "skip"])
    todo = [(i, w) for i, w in todo if pooled(w, len(endpoints))]
    running: deque[Server] = deque()
    on: dict[str, Server] = {}
    keys: dict[Hashable, list[Work]] = {}
    for _, w in todo:
        key = affinity(w.planned.plan)
        keys.setdefault(key, []).append(w)
        if len(running) >= cap:  # the oldest review ends first (reviews of equal length)
            pool.give_back(running.popleft())
        server = pool.take(key)
        assert server is not None, "a slot is free: fewer than the pool's slots are held"
        running.append(server)
        on[w.topic] = server
    shares = tuple(
        ServerShare(s.url, s.ceiling, tuple(t for t, at in on.items() if at is s))
        for s in pool.servers
    )
    groups = tuple(
        Group(
            n,
            ws[0].planned.plan.options.model,
            len(ws[0].planned.plan.files),
            tuple(w.topic for w in ws),
            tuple(dict.fromkeys(on[w.topic].url for w in ws)),
        )
        for n, ws in enumerate(keys.values(), 1)
    )
    return PoolSpread(jobs, shares, groups, {t: s.url for t, s in on.items()})
