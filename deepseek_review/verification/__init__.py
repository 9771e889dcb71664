"""Verifying receipts (``deepseek-review verify``): five named checks per receipt.

``schema``
    The receipt is UTF-8 JSON (no duplicate keys, no NaN) that validates against the frozen
    schema with format checking. A receipt that fails it is not checked further.
``answer``
    The answer file exists inside the repository and its bytes hash to ``answer_sha256``.
``chain``
    A continuation's ``previous_answer_path`` exists, is the answer of exactly one valid
    receipt, and walking back leads to a primary without a loop; a primary names context
    files, a continuation none; no other receipt claims the same answer.
``context``
    Every ``context_files`` entry is a file under the repository root (missing: a warning,
    a failure with ``strict``; a path leading outside the root: always a failure).
``prompt``
    Where the request record ``<stem>.request.json`` exists, it must agree with the receipt
    and rebuild, from the repository, the exact request bytes whose hash is
    ``prompt_sha256``. A context file changed (or missing) since the review is named and is a
    warning (a failure with ``strict``); anything else that does not add up is a failure.
    Without a record (receipts from other emitters) the prompt is "not re-checkable": info.

Every path taken from a receipt or a record goes through :func:`repo.resolve_inside` (the
directories it names are resolved once and cached; a final component that is a symlink is
resolved in full), so no receipt can make verify read or hash a file outside the root.

A plain-Python check accepts the receipts of the form the tool writes
(:mod:`..records.receipt_fast`); any other form goes to jsonschema, which decides and
names the errors. Every file is read at most once per run and every hash taken once; the git
and signing modules are used only for the receipts that need them.
"""

from __future__ import annotations

import gc
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Any

from deepseek_review.records.naming import name_order
from deepseek_review.records.receipt import parse_receipt
from deepseek_review.verification.checks import LocalChecked, Verifier
from deepseek_review.verification.discovery import discover
from deepseek_review.verification.reports import (
    CHECKS,
    DEFAULT_FOLDER,
    PASSED_BY_VALUE,
    REPORT_SCHEMA,
    CheckResult,
    CheckStatus,
    ReceiptReport,
    ReceiptStatus,
    VerifyReport,
)
from deepseek_review.verification.signature_checks import SignatureChecks, Signed

__all__ = [
    "CHECKS",
    "DEFAULT_FOLDER",
    "REPORT_SCHEMA",
    "CheckResult",
    "CheckStatus",
    "ReceiptReport",
    "ReceiptStatus",
    "VerifyReport",
    "default_jobs",
    "discover",
    "parse_receipt",
    "verify",
]

POOL_MIN_RECEIPTS = 2000
_CHUNK = 100  # taken one at a time: the last one is what a child may finish behind


_Packed = tuple[
    str,
    "dict[str, Any] | None",
    list[str],
    list[tuple[str, CheckStatus, str]],
    str | None,
    tuple[str, str, int, str],
    "tuple[tuple[str, CheckStatus, str] | None, tuple[str, str, str] | None] | None",
]


def _local_checks(
    root: Path, strict: bool, signatures: SignatureChecks | None, exclude: frozenset[str]
) -> Callable[[list[str]], list[_Packed]]:
    """What a worker process does with a chunk of receipts: the local checks (with its own
    caches), as plain tuples (sent back to the parent).

    Each carries its receipt's :func:`name_order` key, which the report is sorted by: made
    here, in parallel, not one by one in the parent; so is its signature check, when there
    is one (the parent's :class:`SignatureChecks`, inherited by the fork).
    """
    verifier: Verifier | None = None

    def work(chunk: list[str]) -> list[_Packed]:
        nonlocal verifier
        if verifier is None:
            verifier = Verifier(root, strict=strict, exclude=exclude)
        for rel in chunk:
            verifier.load(rel)  # the chunk's continuations tell which answers to keep
        out: list[_Packed] = []
        for rel in chunk:
            done = verifier.local(rel)
            checks = [(c.name, c.status, c.detail) for c in done.checks]
            signed = None
            if signatures is not None:
                result, who = signatures.check(rel)
                signed = (
                    None if result is None else (result.name, result.status, result.detail),
                    None if who is None else (who.principal, who.fingerprint, who.key_type),
                )
            out.append((rel, done.data, done.problems, checks, done.continues,
                        name_order(rel), signed))  # fmt: skip
        return out

    return work


def default_jobs(receipts: int) -> int:
    """Worker processes for ``receipts``: 1 (none) unless there are many and a fork is safe
    (Linux, one thread, several cores): records pinned to git spend much of their time
    waiting on git, which a second process overlaps."""
    if receipts < POOL_MIN_RECEIPTS or not sys.platform.startswith("linux"):
        return 1
    cpus = len(os.sched_getaffinity(0))
    if cpus < 2 or threading.active_count() > 1:  # forking a threaded process can deadlock
        return 1
    return min(cpus, 4)


#: The chunk worker of the pool's processes, set in the parent just before they fork.
_WORK: Callable[[list[str]], list[_Packed]] | None = None


def _start_worker() -> None:
    """In a worker: Ctrl-C is the parent's to handle (it stops the pool)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _work_chunk(chunk: list[str]) -> list[_Packed] | None:
    """A chunk's results, or None when it failed here: the parent then checks it itself and
    fails (or not) exactly as one process would."""
    assert _WORK is not None
    try:
        return _WORK(chunk)
    except Exception:
        return None


def _parallel(
    v: Verifier,
    strict: bool,
    receipts: list[str],
    jobs: int,
    signatures: SignatureChecks | None,
    exclude: frozenset[str],
) -> list[LocalChecked]:
    """The local checks of ``receipts`` in a pool of ``jobs`` forked worker processes, each
    chunk's results indexed in ``v`` in receipt order; a chunk a worker could not check
    (it failed, or died) is checked here."""
    global _WORK
    chunks = [receipts[i : i + _CHUNK] for i in range(0, len(receipts), _CHUNK)]
    _WORK = work = _local_checks(v.root, strict, signatures, exclude)
    done: list[LocalChecked] = []
    fork = multiprocessing.get_context("fork")
    pool = ProcessPoolExecutor(jobs, mp_context=fork, initializer=_start_worker)
    try:
        results: Iterator[list[_Packed] | None] | None = pool.map(_work_chunk, chunks)
        for chunk in chunks:
            part = None
            if results is not None:
                try:
                    part = next(results)
                except BrokenProcessPool:  # a worker died: the rest is checked here
                    results = None
            for rel, data, problems, checks, continues, order, signed in part or work(chunk):
                if signatures is not None and signed is not None:
                    result, who = signed
                    signatures.adopt(
                        rel,
                        None if result is None else CheckResult(*result),
                        None if who is None else Signed(*who),
                    )
                checked = [PASSED_BY_VALUE.get(c) or CheckResult(*c) for c in checks]
                d = LocalChecked(rel, data, problems, checked, continues)
                v.adopt(d, order)
                done.append(d)
    finally:
        pool.shutdown(cancel_futures=True)  # the workers are stopped when leaving early
        _WORK = None
    return done


def verify(
    paths: Sequence[str],
    *,
    root: Path,
    strict: bool = False,
    jobs: int | None = None,
    default_folder: str = DEFAULT_FOLDER,
    signatures: SignatureChecks | None = None,
    exclude: frozenset[str] = frozenset(),
) -> VerifyReport:
    """Verify the receipts named by ``paths`` (receipts, answers or folders, searched
    recursively; none: ``default_folder``, whose absence means no receipts). Raises
    :class:`InputError` for a PATH that does not exist; every problem found in a receipt is
    in the report, never raised.

    ``jobs``: worker processes (None: :func:`default_jobs`, which uses up to 4 for runs of
    thousands of receipts on a machine with several cores, 1 otherwise). The workers run the
    checks that need one receipt; the chain check, which needs them all, runs here.
    ``signatures``: the ``signature`` check, added to every report it has something to say
    about (:mod:`.signature_checks`). ``exclude``: receipts the trust rule set aside
    (:mod:`deepseek_review.trust.rule`): not checked, and no other receipt's chain sees them.
    """
    found = discover(root, paths, default_folder)
    receipts = [r for r in found.receipts if r not in exclude] if exclude else found.receipts
    # Tens of thousands of small objects stay alive for the whole run and make no cycles
    # worth collecting: the cyclic collector would only walk them again and again.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    v = Verifier(root, strict=strict, exclude=exclude)
    try:
        if signatures is not None:
            signatures.know_listing(found.listed, found.signed)
        jobs = default_jobs(len(receipts)) if jobs is None else max(1, jobs)
        if jobs > 1 and len(receipts) > 1:
            done = _parallel(v, strict, receipts, jobs, signatures, exclude)
        else:
            v.index(receipts, set())
            done = [v.local(rel) for rel in receipts]
        v.mark_scanned(found.scanned)
        reports = sorted((v.finish(d) for d in done), key=lambda r: v.chain_order(r.receipt_path))
        if signatures is not None:
            signatures.share_files(v.files)
            reports = [signatures.apply(r) for r in reports]
    finally:
        v.close()
        if gc_was_enabled:
            gc.enable()
    return VerifyReport(
        root=str(root),
        strict=strict,
        receipts=reports,
        searched=found.shown,
        orphans=found.orphans,
    )
