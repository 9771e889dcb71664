"""verify's fast paths agree with the reference implementations they stand in for.

- The plain-Python quick yes for the tool's own receipt forms never accepts what jsonschema
  (the one validator, which also words the errors) rejects: on valid receipts and many
  single-field mutations the verdict is jsonschema's.
- The prompt check hashes the rebuilt request without serialising every file text again; it
  must give the hash of ``request.rebuild_body``'s bytes.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from deepseek_review import verification as V
from deepseek_review.records import receipt as R
from deepseek_review.records.canonical import sha256_tag
from deepseek_review.records.rebuild import Rebuilder, escaped_utf8, rebuild_body, repo_reader
from deepseek_review.records.receipt import validator
from deepseek_review.verification import files as VF
from tests.support.schema import (
    OURS,
    UNTOUCHED,
    H,
    load,
    mutations,
    valid_corpus,
)


def jsonschema_valid(data: Any) -> bool:
    return validator().is_valid(data)


@pytest.mark.parametrize("receipt", valid_corpus(), ids=lambda r: str(r.get("answer_path")))
def test_fast_validator_accepts_every_valid_receipt(receipt: dict[str, Any]) -> None:
    assert jsonschema_valid(receipt)
    assert R.fast_valid(receipt)
    assert R.schema_problems(receipt) == []


def test_mutation_corpus_is_mostly_invalid() -> None:
    cases = mutations()
    invalid = [name for name, data in cases if not jsonschema_valid(data)]
    assert len(cases) > 300 and len(invalid) > 0.9 * len(cases)


def _disagreements(name: str, data: Any) -> list[str]:
    """Where the quick yes or the worded problems part from jsonschema's verdict on ``data``."""
    valid = jsonschema_valid(copy.deepcopy(data))
    out = []
    if R.fast_valid(data) != valid:
        out.append(f"{name}: the quick yes says {not valid}, jsonschema {valid}")
    problems = R.schema_problems(data)
    if (problems == []) != valid:
        out.append(f"{name}: problems {problems} but jsonschema says valid={valid}")
    elif not all(p.startswith("$") for p in problems):
        out.append(f"{name}: a problem that names no $ path: {problems}")
    return out


def _kind(name: str) -> str:
    return next((k for k in ("primary", "continuation") if name.startswith(k + " ")), "other")


@pytest.mark.parametrize("kind", ["primary", "continuation", "other"])
def test_verdict_on_every_single_field_mutation_is_jsonschemas(kind: str) -> None:
    """Every mutation of a receipt of this kind (or every non-receipt value, for other),
    checked in one test: the message lists each mutation judged otherwise."""
    cases = [(name, data) for name, data in mutations() if _kind(name) == kind]
    assert cases
    failing = ["; ".join(found) for name, data in cases if (found := _disagreements(name, data))]
    assert not failing, f"{len(failing)} of {len(cases)} mutations:\n" + "\n".join(failing)


def test_trailing_newline_in_a_hash_is_judged_as_jsonschema_judges_it() -> None:
    # Python's "$" matches before a final newline (jsonschema accepts); the quick yes does
    # not, and refers the receipt to jsonschema, which decides.
    receipt = {**load(OURS[0]), "answer_sha256": H + "\n"}
    assert jsonschema_valid(receipt) and R.fast_valid(receipt)
    assert R.schema_problems(receipt) == []


# --------------------------------------------------------------------------- the prompt


def records(root: Path) -> list[dict[str, Any]]:
    return [load(p) for p in sorted(root.rglob("*.request.json"))]


def test_fast_prompt_hash_is_the_hash_of_rebuild_body() -> None:
    v = Rebuilder(repo_reader(UNTOUCHED))
    for record in records(UNTOUCHED):
        rebuilt = rebuild_body(record["body"], repo_reader(UNTOUCHED))
        assert rebuilt.body_bytes is not None
        assert v.digest(record["body"]) == sha256_tag(rebuilt.body_bytes)
        assert sha256_tag(rebuilt.body_bytes) == record["prompt_sha256"]


def test_placeholder_look_alike_in_a_record_is_still_rebuilt_exactly(
    cli: Any, tmp_path: Path
) -> None:
    root = tmp_path / "root"
    shutil.copytree(UNTOUCHED, root)
    record_path = next(
        p for p in sorted(root.rglob("*.request.json")) if "continuation" not in p.name
    )
    record = load(record_path)
    # In the body's frame, where the placeholders go: inside a text, and a whole value.
    record["body"]["messages"][0]["content"] += "\x00deepseek-review-content-0\x00 \\u0000"
    digest = sha256_tag(rebuild_body(record["body"], repo_reader(root)).body_bytes or b"")
    assert Rebuilder(repo_reader(root)).digest(record["body"]) == digest
    record["body"]["x-extra"] = "\x00deepseek-review-content-0\x00"
    digest = sha256_tag(rebuild_body(record["body"], repo_reader(root)).body_bytes or b"")
    assert Rebuilder(repo_reader(root)).digest(record["body"]) is None
    record["prompt_sha256"] = digest
    record_path.write_text(json.dumps(record, indent=2), encoding="utf-8")
    receipt_path = record_path.with_name(record_path.name.replace(".request.json", ".receipt.json"))
    receipt = load(receipt_path)
    receipt["prompt_sha256"] = digest
    receipt_path.write_text(json.dumps(receipt, indent=2), encoding="utf-8")
    result = cli("verify", "--repo-root", str(root), "--json", str(receipt_path))
    assert result.code == 0, result.err
    assert result.json()["receipts"][0]["status"] == "ok"


@pytest.mark.parametrize(
    "text",
    ["", "plain", 'q"uote', "back\\slash", "\n\r\t", "\x00\x01\x1f\x7f", "\b\f", "é中😀",
     "\u2028\u2029", 'mixed "a\\b"\n\tend\x1b[0m', "x" * 10_000 + "\n"],
)  # fmt: skip
def test_escaping_bytes_matches_json_escaping(text: str) -> None:
    assert escaped_utf8(text.encode("utf-8")) == json.dumps(text, ensure_ascii=False)[1:-1].encode(
        "utf-8"
    )


def test_escaping_refuses_what_is_not_utf8() -> None:
    assert escaped_utf8(b"\xff\xfe") is None


def test_default_folder_is_where_run_writes() -> None:
    from deepseek_review.reviewing.pipeline import DEFAULT_OUTPUT_DIR

    assert V.DEFAULT_FOLDER == DEFAULT_OUTPUT_DIR


@pytest.mark.parametrize(
    "rel",
    ["a", "a/b.md", "a/.b", "a/...", "..a/b", "", "/a", "a//b", "a/", "./a", "a/./b", "a/../b",
     "..", ".", "a/b/.", "a\x00b", "a/..", "../a", "a/b/..", "x/./", "a/../", ".../a", "a/..b"],
)  # fmt: skip
def test_clean_paths_are_exactly_those_resolve_inside_keeps_as_named(
    rel: str, tmp_path: Path
) -> None:
    from deepseek_review.errors import InputError
    from deepseek_review.git.runner import resolve_inside

    try:
        kept = resolve_inside(tmp_path, rel)[1] == rel
    except InputError:
        kept = False
    assert VF._clean(rel) == (kept and not {".", ".."} & set(rel.split("/")))


def _name_order_by_regex(path: str) -> tuple[str, str, int, str]:
    """What :func:`name_order` gave when it was a regex: the reference it must keep to."""
    import re

    from deepseek_review.records.naming import _BY_LENGTH

    suffixes = "|".join(re.escape(f.suffix) for f in _BY_LENGTH)
    pattern = r"(?P<base>.*?)(?:-(?P<n>[1-9][0-9]*))?(?P<suffix>" + suffixes + ")"
    folder, _, name = path.rpartition("/")
    m = re.fullmatch(pattern, name)
    if m is None:
        return folder, name, 0, ""
    return folder, m["base"], int(m["n"] or 1), m["suffix"]


@pytest.mark.parametrize(
    "path",
    ["r/t_deepseek_m_20260512T033551Z.receipt.json", "r/t_deepseek_m_continuation_1Z-2.md",
     "t-10.request.json", "t-0.md", "t-05.md", "t-.md", "-3.reasoning.md", ".md", "md", "a",
     "t-2.reasoning.md", "t.reasoning-2.md", "a-1-2.intoto.json.sig", "a--7.intoto.json",
     "a-\u0661.md", "a\nb-2.md", "a-2\n.md", "a/b-3.findings.json", "x-99999999999.md",
     "t-2.md.bak", "t.receipt.json.md", "a-1.receipt.json", "a-+1.md", "a- 1.md"],
)  # fmt: skip
def test_name_order_keeps_to_the_naming_regex(path: str) -> None:
    from deepseek_review.records.naming import name_order

    assert name_order.__wrapped__(path) == _name_order_by_regex(path)


# --------------------------------------------------------- the quick yes's format checks

_ENDPOINTS = [
    "localhost",
    "127.0.0.1:8080",
    "http://[::1]:11434",
    "https://ollama.com",
    "https://api.deepseek.com/v1",
    "http://gpu-box.lan:8000/proxy/v1/chat/completions",
    "http://10.0.0.7:11434/v1/chat/completions?api-version=2024-01",
]
_URLS = [
    "http://h",
    "http://h:",
    "http://h/a b",
    "http://h/%zz",
    "http://h/%41",
    "http://h/#frag",
    "http://h/a?b=c&d=e;f:g@h/i?",
    "http://h:99999999/x",
    "http://a_b~c.-d/e!$&'()*+,;=:@f",
    "http://h/\u00e9",
    "http://user@h/",
    "https://",
    "ftp://h/",
    "http://h/../x",
    "http://h//x",
]


def test_every_endpoint_url_the_tool_builds_is_plainly_a_uri() -> None:
    """The receipt's endpoint is checked without the full RFC 3986 validator for these."""
    from deepseek_review.chat.endpoint import chat_url
    from deepseek_review.records.receipt_fast import plainly_uri

    built = [chat_url(e) for e in _ENDPOINTS if "[" not in e]
    assert [u for u in built if not plainly_uri(u)] == []


def test_a_url_taken_as_plainly_a_uri_is_one_by_the_full_rfc_3986_check() -> None:
    from rfc3986_validator import validate_rfc3986  # type: ignore[import-untyped]

    from deepseek_review.chat.endpoint import chat_url
    from deepseek_review.records.receipt_fast import plainly_uri

    urls = [*_URLS, *(chat_url(e) for e in _ENDPOINTS)]
    taken = [u for u in urls if plainly_uri(u)]
    assert len(taken) >= 8
    assert [u for u in taken if not validate_rfc3986(u, rule="URI")] == []


def test_a_timestamp_taken_as_written_is_rfc_3339_by_the_full_check() -> None:
    from datetime import UTC, datetime

    from rfc3339_validator import validate_rfc3339  # type: ignore[import-untyped]

    from deepseek_review.records.receipt import as_written, created_at

    stamps = [
        created_at(datetime.now(UTC)),
        created_at(datetime(1, 1, 1, tzinfo=UTC)),
        "2024-02-29T23:59:59+00:00",
        "2023-02-29T00:00:00+00:00",
        "2026-12-01T03:01:38",
        "2026-12-01T03:01:38.250+00:00",
        "2026-12-01T24:00:00+00:00",
        "2026-12-01 03:01:38+00:00",
    ]
    taken = [s for s in stamps if as_written(s)]
    assert taken == stamps[:3]
    assert all(validate_rfc3339(s) for s in taken)
