"""The library calls that read reviews back: ``verify``, ``stats``, ``findings``, ``sign``
and ``attest`` (see :mod:`.api`). None of them sends anything.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # api_run at run time would load logging, which nothing here uses
    from deepseek_review.api.run import PathArg
    from deepseek_review.signing.segments import SigningKey
    from deepseek_review.trust.findings import FindingsExport
    from deepseek_review.trust.sign import SignReport
    from deepseek_review.usage.summary import Stats
    from deepseek_review.verification import VerifyReport
    from deepseek_review.verification.split_checks import SplitReport


def _default_folder(root: Path, paths: Sequence[str], env: Mapping[str, str] | None) -> str:
    """Where ``run`` writes (the configured ``output_dir``) when no path is given."""
    from deepseek_review.options.config import resolve
    from deepseek_review.verification import DEFAULT_FOLDER

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
    from deepseek_review.git.runner import find_repo_root

    repo = find_repo_root(root)
    allowed = None if allowed_signers is None else os.fspath(allowed_signers)
    from deepseek_review.verification import verify as _verify
    from deepseek_review.verification.signature_checks import SignatureChecks

    default = _default_folder(repo, paths, env)
    checks = SignatureChecks.configured(repo, allowed, require_signature, env)
    return _verify(
        list(paths),
        root=repo,
        strict=strict,
        jobs=jobs,
        default_folder=default,
        signatures=checks,
    )


def verify_splits(
    paths: Sequence[str] = (),
    *,
    root: PathArg | None = None,
    strict: bool = False,
    env: Mapping[str, str] | None = None,
) -> list[SplitReport]:
    """Check the split records (``<stem>.split.json``, ``run --split``) that ``paths`` name or
    hold (none: the configured output folder) against the receipts: each report's
    ``problems`` is empty when it checks out (:mod:`deepseek_review.verification.split_checks`)."""
    from deepseek_review.git.runner import find_repo_root
    from deepseek_review.verification.split_checks import check_split_record, split_records

    repo = find_repo_root(root)
    where = list(paths) or [_default_folder(repo, paths, env)]
    where = [p for p in where if p in paths or (repo / p).is_dir()]
    return [check_split_record(repo, rel, strict=strict) for rel in split_records(repo, where)]


def stats(
    paths: Sequence[str] = (),
    *,
    repo_root: PathArg | None = None,
    env: Mapping[str, str] | None = None,
) -> Stats:
    """Reviews, segments and tokens per model and month, from the receipts under ``paths``
    (none: the configured output folder) (``deepseek-review stats``)."""
    from deepseek_review.git.runner import find_repo_root
    from deepseek_review.ollama.pricing import parse
    from deepseek_review.options.config import resolve
    from deepseek_review.usage.summary import collect_stats

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
    trusted_rev: str | None = None,
    allowed_signers: PathArg | None = None,
    baseline: PathArg | None = None,
    only_new: bool = False,
    min_severity: str | None = None,
    max_findings: int | None = None,
) -> FindingsExport:
    """The findings of the reviews under ``paths`` (none: the configured output folder) in
    ``format`` (json, sarif, rdjson, rdjsonl, github, markdown), written to ``output`` when
    given (``deepseek-review findings``). ``fail_on``: a severity; call
    ``raise_for_gate()`` on the result to raise :class:`~.errors.FindingsGate` (exit 13).
    ``baseline``: an earlier SARIF log or findings JSON file, or a folder of reviews (relative
    to the root), each finding then marked new, unchanged or absent; ``only_new``: keep (and
    gate) the new ones alone. ``min_severity`` and ``max_findings`` leave findings out of the
    export (below that severity; all but the most severe N), counted in ``left_out``; the gate
    still counts them.
    Only reviews the trust rule admits are read (:mod:`deepseek_review.trust.rule`: ``trusted_rev``,
    ``allowed_signers``, else their ``DEEPSEEK_REVIEW_*`` variables and ``CI``)."""
    from deepseek_review.git.runner import find_repo_root
    from deepseek_review.trust.findings import export
    from deepseek_review.trust.rule import TrustPolicy

    root = find_repo_root(repo_root)
    default = _default_folder(root, (), env)
    # No reviews folder yet: no reviews, as verify and stats say, not a missing PATH.
    where = list(paths) or ([default] if (root / default).exists() else [])
    out = None if output is None else Path(output)
    policy = TrustPolicy.configured(trusted_rev, _fspath(allowed_signers), env)
    base = None if baseline is None else os.fspath(baseline)
    return export(
        root, where, format, out, fail_on, policy, base, only_new, min_severity, max_findings
    )


def _fspath(path: PathArg | None) -> str | None:
    return None if path is None else os.fspath(path)


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
    from deepseek_review.git.runner import find_repo_root
    from deepseek_review.signing.keys import configured_key

    return configured_key(sign, signing_key, find_repo_root(repo_root), env)


def signed_with(key: SigningKey | None) -> contextlib.AbstractContextManager[None]:
    """Inside, every segment written is signed with ``key`` right after its receipt."""
    from deepseek_review.signing.hook import signing as _signing

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
    from deepseek_review.git.runner import find_repo_root
    from deepseek_review.signing.keys import configured_key
    from deepseek_review.trust.sign import sign_existing

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
    trusted_rev: str | None = None,
    allowed_signers: PathArg | None = None,
) -> dict[str, Any]:
    """The predicate of a GitHub artifact attestation over the segments under ``paths``
    (none: the configured output folder), all of which must verify (``deepseek-review
    attest``); its type is ``signing.attest.ATTEST_PREDICATE_TYPE``. Only segments the trust
    rule admits (:mod:`trust.rule`) are attested; the others are listed in ``left_out``."""
    from deepseek_review.git.runner import find_repo_root
    from deepseek_review.trust.attest import attest_predicate
    from deepseek_review.trust.rule import TrustPolicy

    repo = find_repo_root(root)
    policy = TrustPolicy.configured(trusted_rev, _fspath(allowed_signers), env)
    return attest_predicate(
        repo, list(paths), default_folder=_default_folder(repo, paths, env), policy=policy, env=env
    )
