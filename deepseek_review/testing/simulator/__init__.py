"""A test double of Ollama's OpenAI-compatible ``/v1/chat/completions`` endpoint (not a model).

It exists so the client, the demo and the benchmarks can be exercised over real HTTP without
a GPU: a deterministic answer per conversation (so continuations of a cut-off answer can be
checked byte for byte), Ollama's exact wire shapes (JSON, both SSE framings, error bodies),
and knobs for latency, capacity, token budgets, reasoning, and injected faults.

Layout: :mod:`.answer` (the deterministic text and continuation planning), :mod:`.wire`
(response shapes and the fault catalogue), :mod:`options.config` (knobs, the request log, request
checks), :mod:`.httpio` (bytes on the socket), :mod:`.handler` (routes: what each request
gets), :mod:`.server` (the :class:`Simulator` API and its shared state) and :mod:`.command`
(``python -m deepseek_review.testing.simulator``).
"""

from deepseek_review.testing.simulator.answer import TOKEN_RE, full_answer
from deepseek_review.testing.simulator.command import serve
from deepseek_review.testing.simulator.config import RecordedRequest, SimulatorConfig
from deepseek_review.testing.simulator.server import Simulator
from deepseek_review.testing.simulator.wire import ALL_FAULTS, GARBAGE_FAULTS, TRANSIENT_FAULTS

__all__ = [
    "ALL_FAULTS",
    "GARBAGE_FAULTS",
    "TOKEN_RE",
    "TRANSIENT_FAULTS",
    "RecordedRequest",
    "Simulator",
    "SimulatorConfig",
    "full_answer",
    "serve",
]
