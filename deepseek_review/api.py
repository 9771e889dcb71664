"""The library API: one call per command, plain values in, dataclasses out.

    from deepseek_review import review, verify, run_batch

    result = review(context=["docs/spec.md"], prompt="Check the arithmetic.",
                    endpoint="http://127.0.0.1:11434", topic="spec_check")
    print(result.segments[-1].answer_path, result.truncated, result.text[:200])

    report = verify(["reviews"], root=".", strict=True)
    assert report.ok, report.failed_checks

    batch = run_batch("reviews.toml", jobs=8)
    print(batch.status, batch.counts)

Every call applies keywords > environment (``DEEPSEEK_REVIEW_*``) > the repository's config
file > built-in defaults exactly as its command does (the command line calls these very
functions): keywords are the command's options in snake_case, from one option table
(:mod:`.options`). Failures raise :class:`~deepseek_review.errors.ReviewError` subclasses
(each with its ``exit_code``), never ``SystemExit``; an error names an option by its key;
nothing is printed (status goes to the ``deepseek_review`` logger).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .manifestfile import ManifestError

if TYPE_CHECKING:
    from .batch import BatchOptions, BatchReport, EventFn, PreparedBatch
    from .calls import ProgressFn
    from .config import Settings
    from .finding.export import FindingsExport
    from .pipeline import ReviewOptions, ReviewPlan, ReviewResult
    from .records.stored import ChainSegment
    from .resume import ContinueOutcome
    from .signing.existing import SignReport
    from .signing.segments import SigningKey
    from .stats import Stats
    from .verification import VerifyReport

log = logging.getLogger("deepseek_review")
PathArg = str | os.PathLike[str]


def repo_root(path: PathArg | None = None) -> Path:
    """The repository root: ``path``, else the enclosing git work tree, else the current
    folder (every call takes ``repo_root=`` and finds it the same way)."""
    from .repo import find_repo_root

    return find_repo_root(path)


@dataclass(frozen=True)
class Configuration:
    """Every setting's effective value and source (``deepseek-review config``)."""

    root: Path
    settings: Settings
    endpoint: str
    """The chat-completions URL a review would be sent to."""


def configuration(
    *, repo_root: PathArg | None = None, env: Mapping[str, str] | None = None
) -> Configuration:
    """The effective settings (environment > config file > defaults) and their sources."""
    from .config import resolve
    from .endpoint import resolve_endpoint
    from .repo import find_repo_root

    env = os.environ if env is None else env
    root = find_repo_root(repo_root)
    found = resolve(root, env=env)
    endpoint = resolve_endpoint(
        found["endpoint"],
        env,
        key_env=found["api_key_env"],
        named_by=found.items["endpoint"].named_by,
    )
    return Configuration(root, found, endpoint.url)


def api_key(api_key_env: str | None = None, *, env: Mapping[str, str] | None = None) -> str | None:
    """The key a call would send where a key may go: the variable ``api_key_env`` names, else
    the one ``DEEPSEEK_REVIEW_API_KEY_ENV`` names, else ``OLLAMA_API_KEY``'s. (The command
    line keeps it out of everything it prints.)"""
    from .endpoint import DEFAULT_KEY_ENV
    from .options import OPTIONS

    env = os.environ if env is None else env
    name = api_key_env or env.get(OPTIONS["api_key_env"].env_name or "", "").strip()
    return env.get(name or DEFAULT_KEY_ENV, "").strip() or None


# --------------------------------------------------------------------------- run


def plan_review(
    *, env: Mapping[str, str] | None = None, repo_root: PathArg | None = None, **options: Any
) -> ReviewPlan:
    """Check everything and build the exact request of :func:`review`, sending and writing
    nothing (``run --dry-run``); :func:`send_review` sends it."""
    from .frontdoor import review_options
    from .pipeline import plan_review as _plan

    _, planned = review_options(options, repo_root=repo_root, env=env)
    return _plan(planned, env)


def cost_estimate(plan: ReviewPlan, *, env: Mapping[str, str] | None = None) -> float | None:
    """What ``plan`` would cost at most (its prompt estimate, the whole ``max_tokens``, no
    cache hit), at the ``prices`` setting's price of its model; None when it has none."""
    from .config import resolve
    from .ollama.pricing import parse, price_of

    price = price_of(
        parse(resolve(plan.root, env=env)["prices"]), plan.options.model, plan.endpoint.url
    )
    if price is None:
        return None
    return round(price.cost(plan.token_estimate, plan.options.max_tokens), 6)


def send_review(plan: ReviewPlan, *, progress: ProgressFn | None = None) -> ReviewResult:
    """Send a planned review, write its files, and continue it while it is cut off."""
    from .pipeline import make_client
    from .pipeline import send_review as _send

    log.info(
        "sending %d context files (%d bytes, ~%d tokens) to %s as %s",
        len(plan.files),
        plan.context_bytes,
        plan.token_estimate,
        plan.endpoint.url,
        plan.options.model,
    )
    with make_client(plan.endpoint, plan.options) as client:
        return _send(plan, client, progress=progress)


def review(
    options: ReviewOptions | None = None,
    /,
    *,
    env: Mapping[str, str] | None = None,
    progress: ProgressFn | None = None,
    repo_root: PathArg | None = None,
    **fields: Any,
) -> ReviewResult:
    """Run one review end to end (``deepseek-review run``).

    Keywords are ``run``'s options in snake_case (``context``, ``prompt`` or ``prompt_file``,
    ``topic``, ``model``, ``endpoint``, ``max_tokens``, ``max_continuations``, ``server``,
    ...); ``prompt`` may also be a text stream, read up to ``max_context_bytes``. What they
    leave unset comes from the environment and the repository's config file, exactly as for
    ``run``. A :class:`~deepseek_review.pipeline.ReviewOptions` instead is taken as complete
    (no config applied), with keywords replacing its fields. ``env`` replaces ``os.environ``.
    """
    if options is None:
        return send_review(plan_review(env=env, repo_root=repo_root, **fields), progress=progress)
    from .pipeline import plan_review as _plan

    if fields or repo_root is not None:
        if repo_root is not None:
            fields["repo_root"] = os.fspath(repo_root)
        options = dataclasses.replace(options, **fields)
    return send_review(_plan(options, env), progress=progress)


# --------------------------------------------------------------------------- continue, show


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
    from .frontdoor import continue_options
    from .resume import continue_existing

    _, planned = continue_options(path, options, repo_root=repo_root, env=env)
    return continue_existing(planned, env=env, progress=progress)


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


def show(path: str, *, repo_root: PathArg | None = None) -> ShownChain:
    """The chain ``path`` belongs to, every segment's hash checked, and its stitched answer."""
    from .chain import find_chain, stitched_text
    from .repo import find_repo_root

    root = find_repo_root(repo_root)
    chain = find_chain(root, path)
    return ShownChain(root, tuple(chain), stitched_text(root, chain))


# --------------------------------------------------------------------------- verify, stats


def _default_folder(root: Path, paths: Sequence[str], env: Mapping[str, str] | None) -> str:
    """Where ``run`` writes (the configured ``output_dir``) when no path is given."""
    from .config import resolve
    from .verification import DEFAULT_FOLDER

    return DEFAULT_FOLDER if paths else str(resolve(root, env=env)["output_dir"])


def verify(
    paths: Sequence[str] = (),
    *,
    root: PathArg | None = None,
    strict: bool = False,
    jobs: int | None = None,
    env: Mapping[str, str] | None = None,
    allowed_signers: PathArg | None = None,
    require_signature: bool | None = None,
) -> VerifyReport:
    """Check receipts without re-running the model (``deepseek-review verify``).

    ``paths`` are receipts, answers or folders relative to ``root`` (default: the enclosing
    git work tree); none means the configured output folder. The report lists every check of
    every receipt; ``report.ok`` is the verdict. ``allowed_signers`` (git's format; default:
    ``DEEPSEEK_REVIEW_ALLOWED_SIGNERS``, else git's ``gpg.ssh.allowedSignersFile``) checks
    each segment's signature; ``require_signature`` makes an unsigned segment fail.
    """
    from .repo import find_repo_root
    from .verification import verify as _verify
    from .verification.signature_checks import SignatureChecks

    repo = find_repo_root(root)
    default = _default_folder(repo, paths, env)
    allowed = None if allowed_signers is None else os.fspath(allowed_signers)
    checks = SignatureChecks.configured(repo, allowed, require_signature, env)
    return _verify(
        list(paths), root=repo, strict=strict, jobs=jobs, default_folder=default, signatures=checks
    )


def stats(
    paths: Sequence[str] = (),
    *,
    repo_root: PathArg | None = None,
    env: Mapping[str, str] | None = None,
) -> Stats:
    """Reviews, segments and tokens per model and month, from the receipts under ``paths``
    (none: the configured output folder) (``deepseek-review stats``)."""
    from .config import resolve
    from .ollama.pricing import parse
    from .repo import find_repo_root
    from .stats import collect_stats

    root = find_repo_root(repo_root)
    prices = parse(resolve(root, env=env)["prices"])
    folder = _default_folder(root, (), env)
    return collect_stats(root, list(paths), default_folder=folder, prices=prices)


def findings(
    paths: Sequence[str] = (),
    *,
    format: str = "json",
    output: PathArg | None = None,
    fail_on: str | None = None,
    repo_root: PathArg | None = None,
    env: Mapping[str, str] | None = None,
) -> FindingsExport:
    """The findings of the reviews under ``paths`` (none: the configured output folder) in
    ``format`` (json, sarif, rdjson, rdjsonl, github, markdown), written to ``output`` when
    given (``deepseek-review findings``). ``fail_on``: a severity; call
    ``raise_for_gate()`` on the result to raise :class:`~.errors.FindingsGate` (exit 13)."""
    from .finding.export import export
    from .repo import find_repo_root

    root = find_repo_root(repo_root)
    where = list(paths) or [_default_folder(root, (), env)]
    out = None if output is None else Path(output)
    return export(root, where, format, out, fail_on)


# --------------------------------------------------------------------------- signing


def signing_key(
    sign: bool | None = None,
    signing_key: str | None = None,
    *,
    repo_root: PathArg | None = None,
    env: Mapping[str, str] | None = None,
) -> SigningKey | None:
    """The key ``run --sign`` / ``batch --sign`` signs with, checked by signing a probe
    (a one-line :class:`ConfigError` when it cannot sign), or None when not signing.
    Unset, ``sign`` and ``signing_key`` come from the environment (``DEEPSEEK_REVIEW_SIGN``,
    ``DEEPSEEK_REVIEW_SIGNING_KEY``; ``sign`` also from the config file), the key then from
    git's ``user.signingkey`` (``gpg.format = ssh``). Use it with :func:`signed_with`."""
    from .repo import find_repo_root
    from .signing.keys import configured_key

    return configured_key(sign, signing_key, find_repo_root(repo_root), env)


def signed_with(key: SigningKey | None) -> contextlib.AbstractContextManager[None]:
    """Inside, every segment written is signed with ``key`` right after its receipt."""
    from .signing.hook import signing as _signing

    return _signing(key)


def sign(
    paths: Sequence[str] = (),
    *,
    root: PathArg | None = None,
    signing_key: str | None = None,
    env: Mapping[str, str] | None = None,
) -> SignReport:
    """Sign the segments under ``paths`` (none: the configured output folder) that verify
    and are not signed yet (``deepseek-review sign``)."""
    from .repo import find_repo_root
    from .signing.existing import sign_existing
    from .signing.keys import configured_key

    repo = find_repo_root(root)
    key = configured_key(True, signing_key, repo, env)
    assert key is not None  # sign=True: a key or an error
    default = _default_folder(repo, paths, env)
    return sign_existing(repo, list(paths), key, default_folder=default)


def attest(
    paths: Sequence[str] = (),
    *,
    root: PathArg | None = None,
    env: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The predicate of a GitHub artifact attestation over the segments under ``paths``
    (none: the configured output folder), all of which must verify (``deepseek-review
    attest``); its type is ``signing.attest.ATTEST_PREDICATE_TYPE``."""
    from .repo import find_repo_root
    from .signing.attest import attest_predicate

    repo = find_repo_root(root)
    return attest_predicate(repo, list(paths), default_folder=_default_folder(repo, paths, env))


# --------------------------------------------------------------------------- batch


@dataclass(frozen=True)
class BatchPlan:
    """A checked and planned batch, ready to run: what ``batch --dry-run`` shows."""

    prepared: PreparedBatch
    options: BatchOptions
    report: Path | None = None
    """Where :func:`execute_batch` writes the JSON report (checked to be writable)."""

    @property
    def api_key(self) -> str | None:
        """A key some entry's endpoint gets, if any."""
        keys = (w.planned.plan.endpoint.api_key for w in self.prepared.work)
        return next((k for k in keys if k), None)


def plan_batch(
    manifest: PathArg,
    *,
    env: Mapping[str, str] | None = None,
    repo_root: PathArg | None = None,
    overrides: Mapping[str, Any] | None = None,
    clean: bool = True,
    **options: Any,
) -> BatchPlan:
    """Check and plan every entry of ``manifest`` and decide what each needs (new, continue,
    skip), sending nothing. Raises :class:`ManifestError` listing every problem.

    Keywords are ``batch``'s options in snake_case; those of a review (``model``,
    ``endpoint``, ``max_tokens``, ...) apply to every entry that does not set them, as do
    ``overrides``. ``clean`` removes temporary files killed runs left."""
    from .batch import check_report_path, prepare_batch, remove_stale_temp_files
    from .frontdoor import batch_options

    given = {**(overrides or {}), **options}
    _, planned = batch_options(manifest, given, repo_root=repo_root, env=env)
    prepared = prepare_batch(planned, env=env, clean=clean)
    path = None if planned.report is None else Path(planned.report)
    if path is not None:
        check_report_path(path)
        if clean:
            remove_stale_temp_files(path.parent)
    return BatchPlan(prepared, planned, path)


def execute_batch(
    plan: BatchPlan,
    *,
    stop: threading.Event | None = None,
    on_event: EventFn | None = None,
) -> BatchReport:
    """Run a planned batch; resumes what exists. Set ``stop`` to stop starting new reviews;
    ``on_event`` receives a :class:`~deepseek_review.batch.BatchEvent` per start,
    continuation request, answer, finish or skip, in this thread, in the order they
    happened."""
    from .batch import execute_batch as _execute
    from .batch import write_report

    result = _execute(plan.prepared, plan.options, stop=stop, on_event=on_event)
    if plan.report is not None:
        write_report(result, plan.report)
    return result


def run_batch(
    manifest: PathArg,
    *,
    env: Mapping[str, str] | None = None,
    stop: threading.Event | None = None,
    on_event: EventFn | None = None,
    repo_root: PathArg | None = None,
    overrides: Mapping[str, Any] | None = None,
    **options: Any,
) -> BatchReport:
    """Run every review of a manifest (``deepseek-review batch``): :func:`plan_batch` then
    :func:`execute_batch`. ``resume_from`` (a git revision) adopts only receipts committed
    unchanged there; ``resume=False`` adopts none."""
    plan = plan_batch(manifest, env=env, repo_root=repo_root, overrides=overrides, **options)
    return execute_batch(plan, stop=stop, on_event=on_event)


__all__ = [
    "BatchPlan",
    "Configuration",
    "ManifestError",
    "ShownChain",
    "api_key",
    "attest",
    "configuration",
    "continue_review",
    "cost_estimate",
    "execute_batch",
    "plan_batch",
    "plan_review",
    "repo_root",
    "review",
    "run_batch",
    "send_review",
    "show",
    "sign",
    "signed_with",
    "signing_key",
    "stats",
    "verify",
]
