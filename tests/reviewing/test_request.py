"""The request: canonical JSON body, the fields Ollama needs, and a record that rebuilds it.

Bodies are read from what the simulator received, so ``prompt_sha256`` is checked against the
bytes that really crossed the wire.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.records.canonical import canonical_json
from deepseek_review.records.rebuild import rebuild_body, repo_reader
from deepseek_review.reviewing.request import BodyOptions, WireMessage, prepare
from deepseek_review.testing.simulator import Simulator
from tests.support.builders import sha
from tests.support.cli import files_under, review, use_key

Cli = Callable[..., Any]
KEY = "sk-planted-request-0123456789abcdef"


def review_sent(cli: Cli, simulator: Simulator, *args: str) -> tuple[dict[str, Any], bytes]:
    """Run one review of the spec and src/; return the ``--json`` result and the body the
    simulator received."""
    r = review(cli, simulator, *args, context=("docs/spec.md", "src"))
    assert r.code == 0, r.err
    (request,) = simulator.chat_requests()
    return r.json(), request.body


def body_of(cli: Cli, simulator: Simulator, *args: str) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(review_sent(cli, simulator, *args)[1])
    return body


def record_of(repo: Path, result: dict[str, Any]) -> dict[str, Any]:
    record: dict[str, Any] = json.loads((repo / result["segments"][0]["record_path"]).read_text())
    return record


# --------------------------------------------------------------------------- the body


def test_body_is_canonical_json_sorted_compact_utf8(repo, simulator, cli):
    (repo / "docs" / "spec.md").write_text('café ≤ 数学 "quoted" \\ tab\t\n', encoding="utf-8")
    _, raw = review_sent(cli, simulator)
    parsed = json.loads(raw)
    assert raw == json.dumps(
        parsed, sort_keys=True, separators=(",", ":"), ensure_ascii=False
    ).encode("utf-8")
    assert "café ≤ 数学".encode() in raw
    assert b"\\u" not in raw


def test_body_holds_exactly_the_core_fields_when_streaming(repo, simulator, cli):
    body = body_of(cli, simulator)
    assert sorted(body) == [
        "max_tokens",
        "messages",
        "model",
        "stream",
        "stream_options",
        "temperature",
    ]
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_body_has_no_stream_options_when_not_streaming(repo, simulator, cli):
    body = body_of(cli, simulator, "--no-stream")
    assert body["stream"] is False
    assert "stream_options" not in body


def test_temperature_is_sent_as_zero_by_default(repo, simulator, cli):
    body = body_of(cli, simulator)
    assert "temperature" in body
    assert body["temperature"] == 0


def test_temperature_option_is_sent(repo, simulator, cli):
    assert body_of(cli, simulator, "--temperature", "0.7")["temperature"] == 0.7


@pytest.mark.parametrize("value", ["-0.1", "2.5", "nan"])
def test_temperature_out_of_range_is_refused(repo, simulator, cli, value):
    r = cli(
        "run",
        "-c",
        "docs/spec.md",
        "-p",
        "x",
        "--endpoint",
        simulator.base_url,
        "--temperature",
        value,
    )
    assert r.code == 2
    assert "--temperature" in r.err
    assert simulator.chat_requests() == []


def test_max_tokens_is_sent_and_max_completion_tokens_never(repo, simulator, cli):
    body = body_of(cli, simulator, "--max-tokens", "1234")
    assert body["max_tokens"] == 1234
    assert "max_completion_tokens" not in body


def test_model_option_is_sent(repo, simulator, cli):
    assert body_of(cli, simulator, "--model", "deepseek-v3.1:671b")["model"] == "deepseek-v3.1:671b"


def test_extra_body_fields_are_merged(repo, simulator, cli):
    body = body_of(cli, simulator, "--extra-body", '{"reasoning_effort": "none", "seed": 7}')
    assert body["reasoning_effort"] == "none"
    assert body["seed"] == 7
    assert body["temperature"] == 0


@pytest.mark.parametrize("field", ["model", "messages", "temperature", "max_tokens", "stream"])
def test_extra_body_cannot_override_a_core_field(repo, simulator, cli, field):
    r = cli(
        "run",
        "-c",
        "docs/spec.md",
        "-p",
        "x",
        "--endpoint",
        simulator.base_url,
        "--extra-body",
        json.dumps({field: 1}),
    )
    assert r.code == 2
    assert repr(field) in r.err
    assert simulator.chat_requests() == []


def test_extra_body_max_completion_tokens_is_refused_pointing_to_max_tokens(repo, simulator, cli):
    r = cli(
        "run",
        "-c",
        "docs/spec.md",
        "-p",
        "x",
        "--endpoint",
        simulator.base_url,
        "--extra-body",
        '{"max_completion_tokens": 100}',
    )
    assert r.code == 2
    assert "max_completion_tokens" in r.err
    assert "--max-tokens" in r.err
    assert simulator.chat_requests() == []


def test_extra_body_stream_options_are_refused_when_not_streaming(repo, simulator, cli):
    r = cli(
        "run",
        "-c",
        "docs/spec.md",
        "-p",
        "x",
        "--endpoint",
        simulator.base_url,
        "--no-stream",
        "--extra-body",
        '{"stream_options": {"include_usage": true}}',
    )
    assert r.code == 2
    assert "stream_options" in r.err
    assert simulator.chat_requests() == []


@pytest.mark.parametrize("text", ["{not json", "[1, 2]", '"text"'])
def test_extra_body_that_is_not_a_json_object_is_refused(repo, cli, text):
    r = cli("run", "--dry-run", "-c", "docs/spec.md", "-p", "x", "--extra-body", text)
    assert r.code == 2
    assert "--extra-body" in r.err


# --------------------------------------------------------------------------- prompt_sha256


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_prompt_sha256_is_the_sha256_of_the_bytes_the_server_received(repo, simulator, cli, stream):
    result, raw = review_sent(cli, simulator, stream)
    seg = result["segments"][0]
    receipt = json.loads((repo / seg["receipt_path"]).read_text())
    assert seg["prompt_sha256"] == sha(raw)
    assert receipt["prompt_sha256"] == sha(raw)
    assert record_of(repo, result)["prompt_sha256"] == sha(raw)


def test_prepare_hashes_exactly_the_bytes_it_returns():
    prepared = prepare(
        BodyOptions(model="m", extra_body={"seed": 1}),
        [WireMessage("user", ("Zürich ✓",), "Zürich ✓")],
    )
    assert prepared.prompt_sha256 == sha(prepared.body_bytes)
    assert canonical_json(json.loads(prepared.body_bytes)) == prepared.body_bytes


# --------------------------------------------------------------------------- the record


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_request_record_rebuilds_exactly_the_bytes_sent(repo, simulator, cli, stream):
    result, raw = review_sent(cli, simulator, stream)
    record = record_of(repo, result)
    rebuilt = rebuild_body(record["body"], repo_reader(repo))
    assert rebuilt.changed == [] and rebuilt.missing == []
    assert rebuilt.body_bytes == raw
    assert sha(rebuilt.body_bytes) == record["prompt_sha256"]


def test_request_record_rebuild_works_from_another_checkout(repo, simulator, cli, tmp_path):
    result, raw = review_sent(cli, simulator)
    record = record_of(repo, result)
    copy = tmp_path / "copy"
    for rel in ("docs/spec.md", "src/pkg/__init__.py", "src/pkg/mean.py"):
        (copy / rel).parent.mkdir(parents=True, exist_ok=True)
        (copy / rel).write_bytes((repo / rel).read_bytes())
    assert rebuild_body(record["body"], repo_reader(copy)).body_bytes == raw


def test_request_record_rebuild_names_a_changed_context_file(repo, simulator, cli):
    result, _ = review_sent(cli, simulator)
    (repo / "src" / "pkg" / "mean.py").write_text("def mean(xs):\n    return 0\n")
    rebuilt = rebuild_body(record_of(repo, result)["body"], repo_reader(repo))
    assert rebuilt.body_bytes is None
    assert rebuilt.changed == ["src/pkg/mean.py"]
    assert rebuilt.missing == []


def test_request_record_rebuild_names_a_missing_context_file(repo, simulator, cli):
    result, _ = review_sent(cli, simulator)
    (repo / "docs" / "spec.md").unlink()
    rebuilt = rebuild_body(record_of(repo, result)["body"], repo_reader(repo))
    assert rebuilt.body_bytes is None
    assert rebuilt.missing == ["docs/spec.md"]


def test_request_record_reader_refuses_paths_outside_the_root(repo, tmp_path):
    (tmp_path / "outside.md").write_text("secret\n")
    body = {
        "model": "m",
        "messages": [
            {
                "role": "user",
                "content": {
                    "$parts": [
                        {
                            "$file": {
                                "path": "../outside.md",
                                "sha256": sha(b"secret\n"),
                                "bytes": 7,
                            }
                        },
                    ]
                },
            }
        ],
    }
    rebuilt = rebuild_body(body, repo_reader(repo))
    assert rebuilt.body_bytes is None
    assert rebuilt.missing == ["../outside.md"]


def test_request_record_names_each_context_file_by_path_hash_and_size(repo, simulator, cli):
    result, _ = review_sent(cli, simulator)
    record = record_of(repo, result)
    data = (repo / "docs" / "spec.md").read_bytes()
    assert {"path": "docs/spec.md", "sha256": sha(data), "bytes": len(data)} in record[
        "context_files"
    ]
    assert [f["path"] for f in record["context_files"]] == result["context_files"]


def test_request_record_holds_no_file_text(repo, simulator, cli):
    (repo / "docs" / "spec.md").write_text("UNIQUE-SPEC-SENTENCE-4711 is here.\n")
    (repo / "src" / "pkg" / "mean.py").write_text("UNIQUE_CODE_TOKEN_0815 = 1\n")
    result, raw = review_sent(cli, simulator)
    assert b"UNIQUE-SPEC-SENTENCE-4711" in raw
    text = (repo / result["segments"][0]["record_path"]).read_text()
    assert "UNIQUE-SPEC-SENTENCE-4711" not in text
    assert "UNIQUE_CODE_TOKEN_0815" not in text


def test_request_record_holds_no_api_key(repo, make_simulator, cli, monkeypatch):
    sim = make_simulator(api_key=KEY)
    use_key(monkeypatch, KEY)
    result, _ = review_sent(cli, sim)
    assert sim.chat_requests()[0].headers["authorization"] == f"Bearer {KEY}"
    for rel in files_under(repo / "reviews"):
        assert KEY.encode() not in (repo / "reviews" / rel).read_bytes(), rel
    assert KEY not in json.dumps(result)
