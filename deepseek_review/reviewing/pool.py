"""One run over several servers (``batch`` or ``run --split`` with ``--endpoint`` given more
than once): where each request goes.

The operator names the servers; nothing in the repository can (the trust rule: a pool is made
only from the command line and ``DEEPSEEK_REVIEW_ENDPOINTS``). The servers are taken to be
interchangeable (the same model behind each), so an entry may run on any of them and a review
any of them wrote counts when a batch is resumed. What the pool decides:

* **how many at once, per server**: ``--jobs-per-endpoint``, else ``--jobs`` spread evenly.
  A server that answers 429 or 503 gets one fewer (never under one); after as many clean
  answers as it has slots, one more again, up to where it started;
* **which server**: an entry's first request goes to the server that already served its
  context (same model and context files: the server's prefix cache holds them) when that
  server has a free slot, else to the least busy server with one; its continuations stay
  on the server its chain is on. No server idles for the sake of affinity;
* **a server that stops answering** (refused or timed out after every retry) is drained:
  one warning line says so, nothing more is sent there, and the entries it held go to the
  others (a chain it cut off is continued there). When every server is drained, the entries
  fail with the last error.
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field

from deepseek_review.chat.client import ChatClient
from deepseek_review.chat.endpoint import Endpoint, safe_url
from deepseek_review.chat.native import is_native, native_endpoint
from deepseek_review.chat.retry import Throttle
from deepseek_review.chat.types import Completion, ProgressFn
from deepseek_review.errors import Interrupted, ServerError
from deepseek_review.reviewing.job import JobResult, run_job
from deepseek_review.reviewing.job_spec import Job, ProgressSink, job_from_plan
from deepseek_review.reviewing.pipeline import ReviewResult, make_client
from deepseek_review.reviewing.plan import ReviewOptions, ReviewPlan
from deepseek_review.reviewing.segment import Segment
from deepseek_review.util.logs import log


class PoolThrottle(Throttle):
    """A server's throttle: besides the ``Retry-After`` waits, a 429 or 503 tells the pool,
    and the request that got it queues again for one of the server's (fewer) slots before
    it is retried."""

    def __init__(self, pool: Pool, server: Server, stop: threading.Event) -> None:
        super().__init__(stop)
        self._pool = pool
        self._server = server
        self._told = threading.local()

    def busy(self) -> None:
        self._pool.overloaded(self._server)
        self._told.busy = True  # in the thread whose request it was

    def wait_turn(self) -> None:
        if getattr(self._told, "busy", False):
            self._told.busy = False
            self._pool.requeue(self._server)
        super().wait_turn()


@dataclass(eq=False)
class Server:
    """One server of the pool and what the pool knows of it."""

    endpoint: Endpoint
    """The operator's URL (a chat-completions URL) and the key that may go there."""
    limit: int
    """Requests it gets at once now."""
    ceiling: int
    """What ``limit`` started at (it never grows beyond)."""
    busy: int = 0
    alive: bool = True
    answered: int = 0
    """Answers it gave in this run."""
    calm: int = 0
    """Answers since its limit was last lowered."""
    throttle: Throttle = field(default_factory=Throttle)

    @property
    def url(self) -> str:
        return self.endpoint.url

    def serving(self, planned: Endpoint) -> Endpoint:
        """The endpoint an entry planned with ``planned`` is sent to here: this server's chat
        URL, or its ``/api/chat`` for Ollama's native API; the URL its receipts name."""
        api = "ollama" if is_native(planned.url) else "openai"
        return native_endpoint(self.endpoint, api)


def affinity(plan: ReviewPlan) -> Hashable:
    """What makes two entries' prompts share their start on a server: model and context."""
    return plan.options.model, tuple(sorted((f.path, f.sha256) for f in plan.files))


class Pool:
    """The servers of one batch and their slots (thread-safe)."""

    def __init__(
        self,
        endpoints: Sequence[Endpoint],
        jobs: int,
        per_server: int | None,
        stop: threading.Event,
    ) -> None:
        each = per_server or max(1, -(-jobs // len(endpoints)))
        self.servers = [Server(ep, each, each) for ep in endpoints]
        for server in self.servers:
            server.throttle = PoolThrottle(self, server, stop)
        self.stop = stop
        self._cond = threading.Condition()
        self._homes: dict[Hashable, Server] = {}

    def alive(self) -> bool:
        with self._cond:
            return any(s.alive for s in self.servers)

    def take(self, key: Hashable, on: Server | None = None) -> Server | None:
        """A slot on a server: ``on`` (a chain's next request), else the one for ``key``.
        Waits for one; None when the batch stops or ``on`` is drained. Raises the pool's
        :class:`ServerError` when every server is drained."""
        with self._cond:
            while not self.stop.is_set():
                if on is not None and not on.alive:
                    return None
                chosen = self._free(on) if on is not None else self._choose(key)
                if chosen is not None:
                    chosen.busy += 1
                    return chosen
                self._cond.wait(0.1)
            return None

    def _free(self, server: Server) -> Server | None:
        return server if server.busy < server.limit else None

    def _choose(self, key: Hashable) -> Server | None:
        alive = [s for s in self.servers if s.alive]
        if not alive:
            raise ServerError(
                f"no server of the pool is answering (all {len(self.servers)} drained)"
            )
        home = self._homes.get(key)
        if home is not None and home.alive and self._free(home):
            return home
        free = [s for s in alive if self._free(s)]
        if not free:
            return None
        best = min(free, key=lambda s: s.busy / s.limit)
        if home is None or not home.alive:
            self._homes[key] = best
        return best

    def give_back(self, server: Server) -> None:
        with self._cond:
            server.busy -= 1
            self._cond.notify_all()

    def requeue(self, server: Server) -> None:
        """A request told the server is busy gives its slot back and waits for one again
        (the server's limit is lower now)."""
        with self._cond:
            server.busy -= 1
            self._cond.notify_all()
            while server.busy >= server.limit and server.alive and not self.stop.is_set():
                self._cond.wait(0.1)
            server.busy += 1  # the gate gives it back when the request ends

    def answered(self, server: Server) -> None:
        """An answer came back: after ``limit`` of them in a row, one slot more."""
        with self._cond:
            server.answered += 1
            server.calm += 1
            if server.limit < server.ceiling and server.calm >= server.limit:
                server.limit += 1
                server.calm = 0
                self._cond.notify_all()

    def overloaded(self, server: Server) -> None:
        """The server said 429 or 503: it gets one request fewer at once."""
        with self._cond:
            server.calm = 0
            if server.limit > 1:
                server.limit -= 1
                log.info(
                    "%s is busy (429/503): %d request(s) at once there now",
                    safe_url(server.url),
                    server.limit,
                )

    def drain(self, server: Server, error: ServerError) -> None:
        """The server stopped answering: nothing more goes there (said once)."""
        with self._cond:
            if not server.alive:
                return
            server.alive = False
            left = sum(1 for s in self.servers if s.alive)
            self._cond.notify_all()
        log.warning(
            "%s stopped answering (%s): drained; its entries go to the %s",
            safe_url(server.url),
            error.message,
            f"other {left} server(s)" if left else "others: none is left",
        )

    def drain_or_raise(self, server: Server, error: ServerError) -> None:
        """``error`` ended a request on ``server``: raised again unless it says the server
        stopped answering and another is left (then that server is drained, and the caller
        moves the review to another)."""
        if not error.unreachable:
            raise error
        self.drain(server, error)
        if not self.alive():
            raise error

    def served(self) -> str:
        """The answers each server gave, for the batch's last lines."""
        return ", ".join(
            f"{safe_url(s.url)} {s.answered}{'' if s.alive else ' (drained)'}" for s in self.servers
        )


class PoolSender:
    """``run --split`` over a pool: each part (and the synthesis) sent as an ordinary review
    on the server the pool gives it, moved to another with what it wrote of its chain when
    that server stops answering. Closes its clients on exit."""

    def __init__(self, options: ReviewOptions, jobs: int, stop: threading.Event) -> None:
        self.pool = Pool(options.pool, jobs, options.jobs_per_endpoint, stop)
        self._options = options
        self._clients: dict[tuple[int, str], ChatClient] = {}
        self._lock = threading.Lock()

    def __enter__(self) -> PoolSender:
        return self

    def __exit__(self, *exc: object) -> None:
        for client in self._clients.values():
            client.close()
        log.info("answers by server: %s", self.pool.served())

    def _client(self, index: int, endpoint: Endpoint) -> ChatClient:
        with self._lock:
            key = (index, endpoint.url)
            if key not in self._clients:
                client = make_client(endpoint, self._options)
                client.throttle = self.pool.servers[index].throttle
                self._clients[key] = client
            return self._clients[key]

    def send(self, plan: ReviewPlan, progress: ProgressFn | None = None) -> ReviewResult:
        done = JobResult()
        while True:
            server = self.pool.take(affinity(plan))
            if server is None:
                raise Interrupted("interrupted before sending")
            ep = server.serving(plan.endpoint)
            job = going_on(plan, tuple(done.segments))
            try:
                run_job(
                    job._replace(endpoint=ep),
                    self._client(self.pool.servers.index(server), ep),
                    events=_Answers(self.pool, server, progress),
                    result=done,
                )
            except ServerError as exc:
                self.pool.drain_or_raise(server, exc)
                continue
            finally:
                self.pool.give_back(server)
            files = plan.receipt_paths or tuple(f.path for f in plan.files)
            return ReviewResult(tuple(done.segments), ep.url, files)


def going_on(plan: ReviewPlan, chain: tuple[Segment, ...]) -> Job:
    """``plan``'s job going on from ``chain``, what a drained server wrote of it (which counts
    against the continuations allowed); its primary when ``chain`` is empty."""
    cap = plan.options.continuation.max_continuations
    left = max(cap - (len(chain) - 1), 0) if chain else None
    return job_from_plan(plan, chain, max_continuations=left, existing_git=plan.pins)


class _Answers(ProgressSink):
    """A part's progress, and each answer told to the pool (its server answered)."""

    def __init__(self, pool: Pool, server: Server, progress: ProgressFn | None) -> None:
        super().__init__(progress)
        self._pool, self._server = pool, server

    def answered(self, completion: Completion, tokens: int, estimated: bool, model: str) -> None:
        super().answered(completion, tokens, estimated, model)
        self._pool.answered(self._server)
