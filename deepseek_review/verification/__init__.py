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

Speed (issue 17: a small multiple of ``sha256sum`` over the files verify reads, with as many
processes): a plain-Python check accepts the receipts of the form the tool writes
(:mod:`..records.receipt_fast`); any other form goes to the schema compiled with
fastjsonschema, which decides valid/invalid; jsonschema (the authority, and slow to import)
runs only on receipts the fast validator rejects, to name the errors. Every file is read at
most once per run and every hash taken once; what ordinary receipts do not need (the git
modules, the signing modules, the process pool, the RFC validators) is not imported.
"""

from __future__ import annotations

import gc
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..records.naming import name_order
from ..records.receipt import parse_receipt
from .checks import Verifier, _Local
from .discovery import discover
from .reports import (
    _OK_BY_VALUE,
    CHECKS,
    DEFAULT_FOLDER,
    REPORT_SCHEMA,
    CheckResult,
    CheckStatus,
    ReceiptReport,
    ReceiptStatus,
    VerifyReport,
)
from .signature_checks import SignatureChecks, Signed

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
_CHUNK = 250
_worker: Verifier | None = None
_worker_args: tuple[Path, bool, SignatureChecks | None] | None = None


_Packed = tuple[
    str,
    "dict[str, Any] | None",
    list[str],
    list[tuple[str, CheckStatus, str]],
    str | None,
    tuple[str, str, int, str],
    "tuple[CheckResult | None, Signed | None] | None",
]


def _work(chunk: list[str]) -> list[_Packed]:
    """In a worker process: the local checks of a run of receipts (caches kept per worker).

    Results travel as tuples: pickling them costs a third of pickling the dataclasses.
    Each carries its receipt's :func:`name_order` key, which the report is sorted by: made
    here, in parallel, not one by one in the parent; so is its signature check, when there
    is one (the parent's :class:`SignatureChecks`, inherited by the fork).
    """
    global _worker
    if _worker is None:
        assert _worker_args is not None
        root, strict, _ = _worker_args
        _worker = Verifier(root, strict=strict)
    assert _worker_args is not None
    signatures = _worker_args[2]
    for rel in chunk:
        _worker.load(rel)  # the chunk's continuations tell which answers to keep
    out = []
    for rel in chunk:
        done = _worker.local(rel)
        checks = [(c.name, c.status, c.detail) for c in done.checks]
        signed = None if signatures is None else signatures.check(rel)
        out.append((rel, done.data, done.problems, checks, done.continues, name_order(rel), signed))
    return out


def _worker_signals() -> None:
    """In a worker: Ctrl-C is the parent's to handle (it stops the pool), and the pool's
    own SIGTERM ends the worker quietly, not through a handler inherited by the fork."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)


def default_jobs(receipts: int) -> int:
    """Worker processes for ``receipts``: 1 (none) unless there are many and a fork is safe."""
    if receipts < POOL_MIN_RECEIPTS:
        return 1  # and multiprocessing is not even imported
    import multiprocessing
    import threading

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if (
        (cpus or 1) < 2
        or not sys.platform.startswith("linux")  # fork is only safe to rely on there
        or "fork" not in multiprocessing.get_all_start_methods()
        or threading.active_count() > 1  # forking a threaded process can deadlock
    ):
        return 1
    return min(cpus or 1, 4)


def _parallel(
    v: Verifier, strict: bool, receipts: list[str], jobs: int, signatures: SignatureChecks | None
) -> list[_Local]:
    """The local checks of ``receipts`` in ``jobs`` worker processes, each result indexed in
    ``v`` as it arrives (while the workers go on)."""
    import multiprocessing

    global _worker_args
    chunks = [receipts[i : i + _CHUNK] for i in range(0, len(receipts), _CHUNK)]
    _worker_args = (v.root, strict, signatures)
    done: list[_Local] = []
    try:
        with multiprocessing.get_context("fork").Pool(jobs, initializer=_worker_signals) as pool:
            for part in pool.imap(_work, chunks):
                for rel, data, problems, checks, continues, order, signed in part:
                    if signatures is not None and signed is not None:
                        signatures.adopt(rel, *signed)
                    checked = [_OK_BY_VALUE.get(c) or CheckResult(*c) for c in checks]
                    d = _Local(rel, data, problems, checked, continues)
                    v.adopt(d, order)
                    done.append(d)
        return done
    finally:
        _worker_args = None


def verify(
    paths: Sequence[str],
    *,
    root: Path,
    strict: bool = False,
    jobs: int | None = None,
    default_folder: str = DEFAULT_FOLDER,
    signatures: SignatureChecks | None = None,
) -> VerifyReport:
    """Verify the receipts named by ``paths`` (receipts, answers or folders, searched
    recursively; none: ``default_folder``, whose absence means no receipts). Raises
    :class:`InputError` for a PATH that does not exist; every problem found in a receipt is
    in the report, never raised.

    ``jobs``: worker processes (None: :func:`default_jobs`, which uses up to 4 for runs of
    thousands of receipts on a machine with several cores, 1 otherwise). The workers run the
    checks that need one receipt; the chain check, which needs them all, runs here.
    ``signatures``: the ``signature`` check, added to every report it has something to say
    about (:mod:`.signature_checks`).
    """
    found = discover(root, paths, default_folder)
    receipts = found.receipts
    # Tens of thousands of small objects stay alive for the whole run and make no cycles
    # worth collecting: the cyclic collector would only walk them again and again.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        v = Verifier(root, strict=strict)
        if signatures is not None:
            signatures.know_listing(found.listed, found.signed)
        jobs = default_jobs(len(receipts)) if jobs is None else max(1, jobs)
        if jobs > 1 and len(receipts) > 1:
            done = _parallel(v, strict, receipts, jobs, signatures)
        else:
            v.index(receipts, set())
            done = [v.local(rel) for rel in receipts]
        v.mark_scanned(found.scanned)
        reports = sorted((v.finish(d) for d in done), key=lambda r: v.chain_order(r.receipt_path))
        if signatures is not None:
            signatures.share_files(v.files)
            reports = [signatures.apply(r) for r in reports]
    finally:
        if gc_was_enabled:
            gc.enable()
    return VerifyReport(
        root=str(root),
        strict=strict,
        receipts=reports,
        searched=found.shown,
        orphans=found.orphans,
    )
