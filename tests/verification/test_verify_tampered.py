"""verify on tests/fixtures/tampered/: each case changes one thing and fails by its check name.

The cases and what verify must say about each receipt are in ``tampered/cases.json``, written
with the fixtures by ``tests/fixtures/make_tampered.py`` (the review itself was written by the
tool's own pipeline). Every case is a repository root of its own; these tests only read it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

TAMPERED = Path(__file__).parents[1] / "fixtures" / "tampered"
MANIFEST = json.loads((TAMPERED / "cases.json").read_text(encoding="utf-8"))
RECEIPTS: dict[str, str] = MANIFEST["receipts"]
CASES: dict[str, Any] = MANIFEST["cases"]


def report(cli: Any, case: str, *flags: str) -> tuple[int, dict[str, dict[str, Any]]]:
    result = cli("verify", "--repo-root", str(TAMPERED / case), "--json", *flags)
    by_path = {r["receipt_path"]: r for r in result.json()["receipts"]}
    return result.code, {name: by_path[path] for name, path in RECEIPTS.items()}


def test_every_case_changes_exactly_what_it_says() -> None:
    untouched = TAMPERED / "untouched"
    want = {p.relative_to(untouched) for p in untouched.rglob("*") if p.is_file()}
    for case in CASES:
        root = TAMPERED / case
        have = {p.relative_to(root) for p in root.rglob("*") if p.is_file()}
        changed = {
            rel
            for rel in have & want
            if (root / rel).read_bytes() != (untouched / rel).read_bytes()
        }
        removed = want - have
        assert not have - want, case
        assert len(changed) + len(removed) == (0 if case == "untouched" else 1), case
        for rel in changed:
            a, b = (untouched / rel).read_bytes(), (root / rel).read_bytes()
            assert len(a) == len(b) and sum(x != y for x, y in zip(a, b, strict=True)) == 1, case


@pytest.mark.parametrize("case", sorted(CASES))
def test_tampered_case_fails_by_its_check_names(cli: Any, case: str) -> None:
    code, receipts = report(cli, case)
    expected = CASES[case]
    for name, r in receipts.items():
        assert r["failed"] == expected["failed"].get(name, []), (case, name, r["checks"])
        assert r["warnings"] == expected["warned"].get(name, []), (case, name, r["checks"])
    assert code == (9 if expected["failed"] else 0)


@pytest.mark.parametrize("case", sorted(CASES))
def test_tampered_case_under_strict_fails_by_its_check_names(cli: Any, case: str) -> None:
    code, receipts = report(cli, case, "--strict")
    expected = CASES[case]
    for name, r in receipts.items():
        assert r["failed"] == expected["strict_failed"].get(name, []), (case, name, r["checks"])
        assert r["warnings"] == []
    assert code == (9 if expected["strict_failed"] else 0)


def test_changed_context_file_is_named_in_every_prompt_warning(cli: Any) -> None:
    _, receipts = report(cli, "context-file-changed")
    for r in receipts.values():
        prompt = next(c for c in r["checks"] if c["name"] == "prompt")
        assert prompt["status"] == "warn"
        assert prompt["detail"] == "context file changed since the review: docs/spec.md"


def test_tampered_record_hash_is_told_apart_from_a_changed_file(cli: Any) -> None:
    _, receipts = report(cli, "record-file-hash")
    prompt = next(c for c in receipts["primary"]["checks"] if c["name"] == "prompt")
    assert "the record was altered" in prompt["detail"]
    assert "docs/spec.md" in prompt["detail"]


def test_stderr_names_failed_checks_on_one_line_per_receipt(cli: Any) -> None:
    result = cli("verify", "--repo-root", str(TAMPERED / "answer-removed"))
    lines = result.err.splitlines()
    receipt_lines = [ln for ln in lines if ln.startswith(("OK ", "FAIL "))]
    assert len(receipt_lines) == 3
    assert f"FAIL {RECEIPTS['c1']}: answer (" in result.err
    assert f"FAIL {RECEIPTS['c2']}: chain, prompt (" in result.err
    assert f"OK   {RECEIPTS['primary']}" in result.err
    assert lines[-1].startswith("deepseek-review: error: 2 of 3 receipts failed verification")
