"""On Ollama's native API, one ``num_ctx`` per model for a whole batch, and a ``keep_alive``
that spans it.

Ollama reloads a model whenever a request asks for another ``num_ctx`` than the one it runs
with (``server/sched.go``: ``needsReload``), and a reload drops the prefix cache. ``run`` sizes
``num_ctx`` to each request (a step of :data:`chat.native.STEPS`); a batch instead sends every
native request of a model with the largest step any of them needs, so the model loads once
(entries that share a context also run back to back: :func:`batch.run._grouped`). The model
is asked to stay loaded for :data:`KEEP_ALIVE` after each request (Ollama's default is five
minutes), unless an entry's ``extra_body`` sets ``keep_alive`` itself.

Both fields are in the body, so in ``prompt_sha256``; a re-run of the same manifest sizes the
same, and resume also finds a review sent with the entry's own step (as ``run`` sent it) or
with any larger step (as an earlier batch of other entries sized it): :func:`resized`.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from deepseek_review.batch.manifest import PlannedEntry
from deepseek_review.chat.native import STEPS, is_native
from deepseek_review.reviewing.request import PreparedRequest, with_native_fields

#: How long Ollama keeps the model loaded after each request of a batch.
KEEP_ALIVE = "30m"


def _num_ctx(entry: PlannedEntry) -> int | None:
    plan = entry.plan
    if not is_native(plan.endpoint.url):
        return None
    options = json.loads(plan.prepared.body_bytes).get("options") or {}
    ctx = options.get("num_ctx")
    return ctx if isinstance(ctx, int) else None


def one_context_per_model(entries: tuple[PlannedEntry, ...]) -> tuple[PlannedEntry, ...]:
    """The entries, each native one's request sent with its model's largest ``num_ctx`` in
    the batch and :data:`KEEP_ALIVE`; the others as they are."""
    sizes = {id(e): _num_ctx(e) for e in entries}
    largest: dict[str, int] = {}
    for e in entries:
        ctx = sizes[id(e)]
        if ctx is not None:
            model = e.plan.options.model
            largest[model] = max(largest.get(model, 0), ctx)
    if not largest:
        return entries
    out = []
    for e in entries:
        if sizes[id(e)] is None:
            out.append(e)
            continue
        prepared = with_native_fields(e.plan.prepared, largest[e.plan.options.model], KEEP_ALIVE)
        out.append(replace(e, plan=replace(e.plan, prepared=prepared)))
    return tuple(out)


def keep_loaded(prepared: PreparedRequest) -> tuple[int, Any] | None:
    """What a batch entry's continuations ask for as its request did: its ``num_ctx`` (at
    least) and ``keep_alive``; None for a request that is not a batch's native one."""
    fields = prepared.sent_fields
    options = fields.get("options")
    ctx = options.get("num_ctx") if isinstance(options, dict) else None
    if not isinstance(ctx, int) or "keep_alive" not in fields:
        return None
    return ctx, fields["keep_alive"]


def resized(entry: PlannedEntry) -> list[PlannedEntry]:
    """The entry (as planned alone) as any batch could have sized it: with each ``num_ctx``
    step at least its own and :data:`KEEP_ALIVE`. An earlier batch of other entries (one
    entry fewer, a smaller largest one) sent the same review with another step: resume
    looks for each, so a grown manifest does not send its finished entries again."""
    own = _num_ctx(entry)
    if own is None:
        return []
    out = []
    for step in (s for s in STEPS if s >= own):
        prepared = with_native_fields(entry.plan.prepared, step, KEEP_ALIVE)
        out.append(replace(entry, plan=replace(entry.plan, prepared=prepared)))
    return out
