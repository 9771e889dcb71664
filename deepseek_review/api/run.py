"""The library calls of ``run``, ``continue``, ``show`` and ``config`` (see :mod:`.api`).

Planning (``run --dry-run``) imports no HTTP stack: only :func:`send_review` and
:func:`continue_review` load the client. What ``config`` and ``show`` return lives in
:mod:`deepseek_review.api.views`, so that ``run`` does not build those classes.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepseek_review.util.logs import log

if TYPE_CHECKING:
    from deepseek_review.api.views import Configuration, ShownChain
    from deepseek_review.chat.types import ProgressFn
    from deepseek_review.reviewing.continuation import ContinueOutcome
    from deepseek_review.reviewing.pipeline import ReviewOptions, ReviewPlan, ReviewResult
    from deepseek_review.reviewing.split_plan import SplitReview
    from deepseek_review.reviewing.split_run import SplitOutcome

PathArg = str | os.PathLike[str]


def repo_root(path: PathArg | None = None) -> Path:
    """The repository root: ``path``, else the enclosing git work tree, else the current
    folder (every call takes ``repo_root=`` and finds it the same way)."""
    from deepseek_review.git.runner import find_repo_root

    return find_repo_root(path)


def configuration(
    *, repo_root: PathArg | None = None, env: Mapping[str, str] | None = None
) -> Configuration:
    """The effective settings (environment > config file > defaults) and their sources.

    Never fails on a refused setting: what was read is all there, each refusal listed in
    :attr:`~api.views.Configuration.refused` with the error a run would stop with (a run
    uses the next source only in ``config``: it stops)."""
    from deepseek_review.api.views import Configuration
    from deepseek_review.chat.endpoint import resolve_endpoint
    from deepseek_review.errors import ConfigError
    from deepseek_review.git.runner import find_repo_root
    from deepseek_review.options.config import Refusal, resolve, spelled, spellings
    from deepseek_review.options.table import naming_as

    env = os.environ if env is None else env
    root = find_repo_root(repo_root)
    found = resolve(root, env=env, collect=True)
    refused = list(found.refused)
    url: str | None
    try:
        with naming_as(spellings(found.items)):
            url = resolve_endpoint(
                found["endpoint"],
                env,
                key_env=found["api_key_env"],
                named_by=found.items["endpoint"].named_by,
            ).url
    except ConfigError as exc:
        url = None
        setting = found.items["endpoint"]
        where = spelled(setting) or setting.source
        refused.append(Refusal(where, "endpoint", setting.value, exc.message))
    return Configuration(root, found, url, tuple(refused))


def api_key(api_key_env: str | None = None, *, env: Mapping[str, str] | None = None) -> str | None:
    """The key a call would send where a key may go: the variable ``api_key_env`` names, else
    the one ``DEEPSEEK_REVIEW_API_KEY_ENV`` names, else ``OLLAMA_API_KEY``'s. (The command
    line keeps it out of everything it prints.)"""
    from deepseek_review.chat.endpoint import DEFAULT_KEY_ENV
    from deepseek_review.options.table import OPTIONS

    env = os.environ if env is None else env
    name = api_key_env or env.get(OPTIONS["api_key_env"].env_name or "", "").strip()
    return env.get(name or DEFAULT_KEY_ENV, "").strip() or None


def plan_review(
    *,
    env: Mapping[str, str] | None = None,
    repo_root: PathArg | None = None,
    ask_server: bool = False,
    max_total_tokens: int | None = None,
    jobs: int | None = None,
    max_cost: float | None = None,
    **options: Any,
) -> ReviewPlan | SplitReview:
    """Check everything and build the exact requests of :func:`review`, sending and writing
    nothing (``run --dry-run``), from every option ``run`` takes: one review's
    :class:`~deepseek_review.reviewing.pipeline.ReviewPlan` (:func:`send_review` sends it),
    or with ``split`` (option, environment or config file) a split review's parts
    (:class:`~deepseek_review.reviewing.split_plan.SplitReview`, sent by :func:`send_split`
    ``jobs`` at a time, over every server when ``endpoint`` is a list), unless the whole
    context fits. ``max_total_tokens`` (split reviews) and ``max_cost`` (operator prices,
    :mod:`deepseek_review.reviewing.cost_cap`) refuse before anything is sent.

    ``ask_server``: the server is also asked what :func:`send_review` asks before its first
    request (Ollama: does the prompt fit its context, can the model think at ``reasoning``'s
    level; metadata endpoints only), refusing as the run would (``run --dry-run``)."""
    from deepseek_review.options.table import check, naming_as
    from deepseek_review.reviewing.setup import review_setup

    if jobs is not None:
        check("jobs", jobs)
    root, planned, names = review_setup(options, repo_root=repo_root, env=env)
    with naming_as(names):
        if planned.split:
            from deepseek_review.reviewing.split_plan import (
                SplitReview,
                plan_split_review,
                window_from_server,
            )

            env = os.environ if env is None else env
            done = plan_split_review(
                planned,
                env,
                window_of=window_from_server(planned),
                max_total_tokens=max_total_tokens,
            )
            if isinstance(done, SplitReview):
                prompts = [p.plan.token_estimate for p in done.parts] + [done.synthesis_estimate]
                _refuse_over_cost(max_cost, root, env, done, prompts, "the split review")
                return dataclasses.replace(done, names=names, jobs=jobs or 1)
            # The whole context fits: one ordinary review, planned as such.
            planned = dataclasses.replace(planned, split=False)
        elif max_total_tokens is not None:
            from deepseek_review.errors import ConfigError
            from deepseek_review.options.table import name_of

            raise ConfigError(
                f"{name_of('max_total_tokens')} applies to {name_of('split')} reviews "
                f"and batches: for one review, use {name_of('max_run_tokens')}"
            )
        plan = _planned(planned, names, env, ask_server)
        _refuse_over_cost(max_cost, root, env, plan, [plan.token_estimate], "the review")
        return plan


#: The earlier name of :func:`plan_review`, kept for library users.
plan_run = plan_review


def _planned(
    planned: ReviewOptions, names: dict[str, str], env: Mapping[str, str] | None, ask: bool
) -> ReviewPlan:
    """The plan of settled options; with ``ask``, the server asked what the run would ask."""
    from deepseek_review.reviewing.plan import plan_review as _plan

    plan = dataclasses.replace(_plan(planned, env), names=names)
    if ask:
        from deepseek_review.reviewing.pipeline import preflight_review

        plan = preflight_review(plan)
    return plan


def _refuse_over_cost(
    limit: float | None,
    root: Path,
    env: Mapping[str, str] | None,
    plan: ReviewPlan | SplitReview,
    prompts: list[int],
    what: str,
) -> None:
    """``max_cost`` held against the plan's worst case (nothing loaded when it is not set)."""
    if limit is None:
        return
    from deepseek_review.reviewing.cost_cap import refuse_plan_over_cost

    refuse_plan_over_cost(limit, root, env, plan.options, plan.endpoint.url, prompts, what)


def send_split(review: SplitReview, *, progress: ProgressFn | None = None) -> SplitOutcome:
    """Send the parts of a split review not done yet, then its synthesis, and write the split
    record; the first failure is the outcome's (``outcome.failure``): raise it to stop."""
    from deepseek_review.options.table import naming_as
    from deepseek_review.reviewing.pipeline import make_client
    from deepseek_review.reviewing.split_run import run_split

    if review.options.pool:  # --endpoint given more than once: the parts spread over them
        import threading

        from deepseek_review.reviewing.pool import PoolSender

        stop = threading.Event()  # never set: an interruption stops the parts themselves
        with naming_as(review.names), PoolSender(review.options, review.jobs, stop) as pool:
            return run_split(review, pool, progress=progress)
    with naming_as(review.names), make_client(review.endpoint, review.options) as client:
        return run_split(review, client, progress=progress)


def cost_estimate(plan: ReviewPlan, *, env: Mapping[str, str] | None = None) -> float | None:
    """What ``plan`` would cost at most (its prompt estimate, the whole ``max_tokens``, no
    cache hit), at the ``prices`` setting's price of its model, else the bundled list's
    (DeepSeek's API); None when neither has one."""
    from deepseek_review.ollama.pricing import parse, shown_price_of
    from deepseek_review.options.config import resolve

    prices = parse(resolve(plan.root, env=env)["prices"])
    price = shown_price_of(prices, plan.options.model, plan.endpoint.url)
    if price is None:
        return None
    return round(price.cost(plan.token_estimate, plan.options.max_tokens), 6)


def send_review(plan: ReviewPlan, *, progress: ProgressFn | None = None) -> ReviewResult:
    """Send a planned review, write its files, and continue it while it is cut off."""
    from deepseek_review.options.table import naming_as
    from deepseek_review.reviewing.pipeline import make_client
    from deepseek_review.reviewing.pipeline import send_review as _send

    log.info(
        "sending %s to %s as %s (~%d tokens)",
        sent_summary(plan),
        plan.endpoint.url,
        plan.options.model,
        plan.token_estimate,
    )

    with naming_as(plan.names), make_client(plan.endpoint, plan.options) as client:
        return _send(plan, client, progress=progress)


def sent_summary(plan: ReviewPlan) -> str:
    """What a review sends, in words: ``a diff of 3 files (41 lines) and 1 context file (61
    bytes)`` (a change's files are counted as the diff shows them)."""
    from deepseek_review.util.textsafe import plural

    parts = []
    if plan.change_lines is not None:
        diff = (plan.pins or {}).get("diff") or {}
        shown = len(diff.get("shown") or ())
        parts.append(f"a diff of {plural(shown, 'file')} ({plural(plan.change_lines, 'line')})")
    if plan.files or not parts:
        files = plural(len(plan.files), "context file")
        parts.append(f"{files} ({plural(plan.context_bytes, 'byte')})")
    return " and ".join(parts)


def review(
    options: ReviewOptions | None = None,
    /,
    *,
    env: Mapping[str, str] | None = None,
    progress: ProgressFn | None = None,
    repo_root: PathArg | None = None,
    **fields: Any,
) -> ReviewResult | SplitOutcome:
    """Run a review end to end (``deepseek-review run``).

    Keywords are ``run``'s options in snake_case, every one of them (``context``, ``prompt``
    or ``prompt_file``, ``topic``, ``model``, ``endpoint``, ``max_tokens``, ``server``,
    ``split``, ``jobs``, ``max_total_tokens``, ``max_cost``, ...); ``prompt`` may also be a
    text stream, read up to ``max_context_bytes``; ``endpoint`` may be a list of servers (a
    split review's parts spread over them, as ``--endpoint`` given more than once). What they
    leave unset comes from the environment and the repository's config file, exactly as for
    ``run``. The result is the review's
    :class:`~deepseek_review.reviewing.pipeline.ReviewResult`, or with ``split`` the
    :class:`~deepseek_review.reviewing.split_run.SplitOutcome` of its parts and synthesis (a
    part that failed raises its error; re-running resumes). A
    :class:`~deepseek_review.reviewing.pipeline.ReviewOptions` instead is taken as complete
    (no config applied, one review), with keywords replacing its fields; ``max_cost`` still
    holds. ``env`` replaces ``os.environ``.
    """
    if options is None:
        planned = plan_review(env=env, repo_root=repo_root, **fields)
        from deepseek_review.reviewing.plan import ReviewPlan

        if isinstance(planned, ReviewPlan):
            return send_review(planned, progress=progress)
        outcome = send_split(planned, progress=progress)
        if outcome.failure is not None:
            raise outcome.failure
        return outcome
    from deepseek_review.reviewing.plan import plan_review as _plan

    max_cost = fields.pop("max_cost", None)
    if fields or repo_root is not None:
        if repo_root is not None:
            fields["repo_root"] = os.fspath(repo_root)
        options = dataclasses.replace(options, **fields)
    plan = _plan(options, env)
    _refuse_over_cost(max_cost, plan.root, env, plan, [plan.token_estimate], "the review")
    return send_review(plan, progress=progress)


def continue_review(
    path: str,
    *,
    env: Mapping[str, str] | None = None,
    progress: ProgressFn | None = None,
    repo_root: PathArg | None = None,
    **options: Any,
) -> ContinueOutcome:
    """Continue a truncated review from the last segment of the chain ``path`` (a receipt or
    answer, relative to the root) belongs to (``deepseek-review continue``).

    Keywords are ``continue``'s options in snake_case (``endpoint``, ``max_continuations``,
    ``continuation_max_tokens``, ``force``, ...), completed from the environment and the
    config file as for the command; the endpoint is the receipt's unless one is given."""
    from deepseek_review.reviewing.continuation import continue_existing, continue_options

    _, planned = continue_options(path, options, repo_root=repo_root, env=env)
    return continue_existing(planned, env=env, progress=progress)


def show(
    path: str,
    *,
    repo_root: PathArg | None = None,
    trusted_rev: str | None = None,
    allowed_signers: str | None = None,
) -> ShownChain:
    """The chain ``path`` belongs to, every segment's hash checked, and its stitched answer;
    a chain with a segment the trust rule sets aside (:mod:`trust.rule`: ``trusted_rev``,
    ``allowed_signers``, else their variables and ``CI``) is refused."""
    from deepseek_review.api.views import ShownChain
    from deepseek_review.git.runner import find_repo_root
    from deepseek_review.records.chain import stitched_text
    from deepseek_review.trust.rule import TrustPolicy, trusted_chain

    root = find_repo_root(repo_root)
    policy = TrustPolicy.configured(trusted_rev, allowed_signers)
    chain = trusted_chain(root, path, policy)
    return ShownChain(root, tuple(chain), stitched_text(root, chain))
