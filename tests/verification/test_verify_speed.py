"""What keeps `verify` quick without checking less: its imports, and the fast paths of the
receipt schema's format checks, held to the validators they stand in front of."""

from __future__ import annotations

import json
import os
import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rfc3339_validator import validate_rfc3339  # type: ignore[import-untyped]
from rfc3986_validator import validate_rfc3986  # type: ignore[import-untyped]

from deepseek_review.records.naming import unreceipted_answers
from deepseek_review.records.receipt_fast import (
    _PLAIN_URI,
    is_date_time,
    is_uri,
    plain_date_time,
)
from tests.support.cli import review
from tests.support.sshkeys import allowed_signers, make_key, needs_openssh

URIS = [
    "http://127.0.0.1:11434/v1/chat/completions",
    "https://ollama.com/api/chat",
    "http://localhost:8000/",
    "http://[::1]:8000/v1",
    "http://a:/",
    "http://./",
    "http://-/x//y",
    "http://h/p?q=1#f",
    "http://h/%41",
    "http://h/%4",
    "http://h/a b",
    "http://h:80x/",
    "http:/h",
    "http://",
    "https://user@host/",
    "ftp://host/",
    "HTTP://HOST/",
    "http://h/\n",
    "http://h/é",
    "mailto:a@b",
    "",
]
DATE_TIMES = [
    "2026-05-12T03:35:51+00:00",
    "2026-05-12t03:35:51z",
    "2026-05-12T03:35:51.123456Z",
    "2024-02-29T00:00:00Z",
    "2026-02-29T00:00:00Z",
    "2026-04-31T00:00:00Z",
    "0000-01-01T00:00:00Z",
    "2026-13-01T00:00:00Z",
    "2026-05-12T24:00:00Z",
    "2026-05-12T23:60:00Z",
    "2026-05-12T23:59:60Z",
    "2026-05-12T03:35:51+24:00",
    "2026-05-12T03:35:51+23:60",
    "2026-05-12T03:35:51",
    "2026-05-12 03:35:51Z",
    "2026-05-12T03:35:51Z\n",
    "\uff12026-05-12T03:35:51Z",  # a full-width digit
    "",
]


def _fuzz(seed: int, alphabet: str, starts: list[str], n: int = 3000) -> list[str]:
    """Strings near the samples: each a sample with a few characters changed, cut or added."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        s = list(rng.choice(starts))
        for _ in range(rng.randint(1, 3)):
            at = rng.randint(0, len(s))
            op = rng.randint(0, 2)
            if op == 0 and s:
                del s[min(at, len(s) - 1)]
            elif op == 1 and s:
                s[min(at, len(s) - 1)] = rng.choice(alphabet)
            else:
                s.insert(at, rng.choice(alphabet))
        out.append("".join(s))
    return out


def test_plain_uri_fast_path_only_accepts_what_the_rfc3986_validator_accepts() -> None:
    alphabet = "ab:/.-_~?#%@[]0129 é\n"
    values = URIS + _fuzz(17, alphabet, URIS[:8])
    fast = [v for v in values if _PLAIN_URI.fullmatch(v)]
    assert len(fast) > 100  # the fast path is really taken
    assert [v for v in fast if not validate_rfc3986(v, rule="URI")] == []
    assert [v for v in values if is_uri(v) != bool(validate_rfc3986(v, rule="URI"))] == []


def test_plain_date_time_fast_path_only_accepts_what_the_rfc3339_validator_accepts() -> None:
    alphabet = "0123456789-:T.Z+tz "
    values = DATE_TIMES + _fuzz(19, alphabet, DATE_TIMES[:4])
    fast = [v for v in values if plain_date_time(v.upper())]
    assert len(fast) > 100
    assert [v for v in fast if not validate_rfc3339(v.upper())] == []
    assert [v for v in values if is_date_time(v) != bool(validate_rfc3339(v.upper()))] == []


def test_unreceipted_answers_lists_only_answers_without_their_receipt() -> None:
    names = {
        "a_deepseek_m_20260512T033551Z.md",
        "a_deepseek_m_20260512T033551Z.receipt.json",
        "b_deepseek_m_20260512T033551Z.md",
        "b_deepseek_m_20260512T033551Z.reasoning.md",
        "c_deepseek_m_20260512T033551Z.reasoning.md",
        "c_deepseek_m_20260512T033551Z.reasoning.receipt.json",
        "d_deepseek_m_20260512T033551Z-2.md",
        "notes.md",
        ".md",
    }
    assert unreceipted_answers(names) == [
        "b_deepseek_m_20260512T033551Z.md",
        "d_deepseek_m_20260512T033551Z-2.md",
    ]


# --------------------------------------------------------------------------- signatures


def test_discovery_lists_the_statements_and_signatures_of_the_folders_it_walked(
    repo: Path,
) -> None:
    from deepseek_review.verification.discovery import discover

    (repo / "reviews" / "sub").mkdir(parents=True)
    for name in ("a.receipt.json", "a.intoto.json", "sub/b.receipt.json", "sub/b.intoto.json.sig"):
        (repo / "reviews" / name).write_text("{}", encoding="utf-8")
    found = discover(repo, ["reviews"])
    assert found.listed == {"reviews", "reviews/sub"}
    assert found.signed == {"reviews/a.intoto.json", "reviews/sub/b.intoto.json.sig"}


@needs_openssh
@pytest.mark.parametrize("named", ["reviews", "receipt"])
def test_a_statement_left_without_its_signature_is_still_found(
    repo: Path, cli: Any, simulator: Any, tmp_path: Path, named: str
) -> None:
    key = make_key(tmp_path / "keys", "ed25519", "alice@example.com")
    r = review(cli, simulator, "--sign", "--signing-key", str(key.private))
    assert r.code == 0, r.err
    receipt = r.json()["segments"][0]["receipt_path"]
    (repo / receipt.replace(".receipt.json", ".intoto.json.sig")).unlink()
    signers = allowed_signers(tmp_path / "a", key.allowed_line())
    v = cli(
        "verify", "--allowed-signers", str(signers), "--json", named.replace("receipt", receipt)
    )
    assert v.code == 0, v.err
    checks = {c["name"]: c for c in v.json()["receipts"][0]["checks"]}
    assert checks["signature"]["status"] == "warn"
    assert checks["signature"]["detail"].startswith("a statement without its signature")


# --------------------------------------------------------------------------- plain receipts


def test_plain_receipt_check_never_accepts_what_jsonschema_rejects() -> None:
    from deepseek_review.records.receipt import validator
    from deepseek_review.records.receipt_fast import plainly_valid
    from tests.support.schema import mutations, valid_corpus

    cases = [("valid", r) for r in valid_corpus()] + mutations()
    plain = [(name, data) for name, data in cases if isinstance(data, dict) and plainly_valid(data)]
    assert len(plain) > 20  # the tool's own receipts take the quick road
    assert [name for name, data in plain if not validator().is_valid(data)] == []


def test_valid_receipts_of_other_forms_are_still_valid() -> None:
    """Forms the tool does not write (a float count, Python's "$" before a final newline)
    are not decided by the plain check; the validators behind it accept them."""
    from deepseek_review.records.receipt import schema_problems
    from deepseek_review.records.receipt_fast import plainly_valid
    from tests.support.schema import valid_corpus

    primary = next(r for r in valid_corpus() if "context_files" in r)
    for odd in (
        {**primary, "usage": {"prompt_tokens": 1.0, "completion_tokens": 0, "total_tokens": 1}},
        {**primary, "answer_sha256": primary["answer_sha256"] + "\n"},
    ):
        assert not plainly_valid(odd)
        assert schema_problems(odd) == []


# --------------------------------------------------------------------------- worker processes

_COMPARE = """
import json, sys
from pathlib import Path
from deepseek_review import verification as V
V._CHUNK = 1  # one receipt per chunk: every chain split across the workers
out = {}
for case in sorted(p for p in Path(sys.argv[1]).iterdir() if p.is_dir()):
    for strict in (False, True):
        one, three = (V.verify([], root=case, jobs=j, strict=strict).to_json() for j in (1, 3))
        out[f"{case.name} {strict}"] = [one == three, sorted(one["failed_checks"])]
print(json.dumps(out))
"""


def test_workers_given_small_chunks_give_the_report_of_one_process() -> None:
    """Every tampered case, plain and strict (a failure of every check, chains split across
    workers): the report, its order included, is the one a single process makes."""
    cases = Path(__file__).parents[1] / "fixtures" / "tampered"
    out = subprocess.run(
        [sys.executable, "-c", _COMPARE, str(cases)], capture_output=True, text=True, check=True
    )
    got = json.loads(out.stdout)
    assert len(got) > 40
    assert [case for case, (same, _) in got.items() if not same] == []
    failed = {check for _, checks in got.values() for check in checks}
    assert failed >= {"schema", "answer", "chain", "context", "prompt"}


@pytest.mark.parametrize("fault", ["dies", "fails"])
@pytest.mark.parametrize("case", ["untouched", "record-prompt_sha256"])
def test_receipts_a_worker_could_not_check_are_checked_here_with_the_same_report(
    monkeypatch: pytest.MonkeyPatch, fault: str, case: str
) -> None:
    """A worker killed, or failing on its chunks: the report is the one a single process
    makes, nothing raised, no receipt missing."""
    from deepseek_review import verification as V

    root = Path(__file__).parents[1] / "fixtures" / "tampered" / case
    alone = V.verify([], root=root, jobs=1, strict=True).to_json()
    parent = os.getpid()
    real = V._local_checks

    def faulty(*args: Any) -> Any:
        work = real(*args)

        def in_worker(chunk: list[str]) -> Any:
            if os.getpid() != parent:
                if fault == "dies":
                    os.kill(os.getpid(), signal.SIGKILL)
                raise OSError("the worker's disk went away")
            return work(chunk)

        return in_worker

    monkeypatch.setattr(V, "_CHUNK", 1)
    monkeypatch.setattr(V, "_local_checks", faulty)
    assert V.verify([], root=root, jobs=2, strict=True).to_json() == alone
