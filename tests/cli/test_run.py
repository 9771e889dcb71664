"""``deepseek-review run`` end to end: what is written, what is printed, what never leaks.

Receipts are validated here with jsonschema directly (Draft 2020-12, format checking on),
against the top-level ``schemas/`` file, independently of the tool's own validator.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from deepseek_review.records import storage
from tests.support.builders import sha
from tests.support.chat import error_json, expected_answer, sse
from tests.support.cli import files_under, use_key
from tests.support.secrets import PRIVATE_KEY
from tests.support.stubs import Reply

Cli = Callable[..., Any]
ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "schemas" / "deepseek-review-receipt.schema.json").read_text())
VALIDATOR = Draft202012Validator(SCHEMA, format_checker=Draft202012Validator.FORMAT_CHECKER)
KEY = "sk-planted-7d1e0c9a4b2f48e6a3c5d7f9b1e3a5c7"
STAMP_RE = r"\d{8}T\d{6}Z"


def run(
    cli: Cli,
    endpoint: str,
    *args: str,
    context: tuple[str, ...] = ("docs/spec.md",),
    verbose: bool = False,
) -> Any:
    ctx = [a for c in context for a in ("-c", c)]
    return cli(
        *(["--verbose"] if verbose else []),
        "run",
        *ctx,
        "-p",
        "Check the mean.",
        "--endpoint",
        endpoint,
        "--retry-wait",
        "0.01",
        *args,
    )


def receipt_errors(receipt: Any) -> list[str]:
    return [e.message for e in VALIDATOR.iter_errors(receipt)]


def no_temp_files(root: Path) -> bool:
    return not list(root.rglob(f"{storage.TEMP_PREFIX}*"))


# --------------------------------------------------------------------------- one review


def test_validator_really_checks_formats():
    """The schema's date-time and uri formats are enforced, so a pass below means something."""
    checker = Draft202012Validator.FORMAT_CHECKER
    assert not checker.conforms("2026-05-12 03:35:51", "date-time")
    assert checker.conforms("2026-05-12T03:35:51+00:00", "date-time")
    assert not checker.conforms("not a uri", "uri")
    assert checker.conforms("http://127.0.0.1:1/v1/chat/completions", "uri")


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_run_writes_answer_receipt_and_record(repo, simulator, cli, stream):
    r = run(cli, simulator.base_url, stream, "--topic", "spec_check")
    assert r.code == 0, r.err
    names = files_under(repo / "reviews")
    assert len(names) == 3
    stem = names[0].removesuffix(".md")
    assert re.fullmatch(rf"spec_check_deepseek_deepseek-v4-flash_{STAMP_RE}", stem), stem
    assert names == [f"{stem}.md", f"{stem}.receipt.json", f"{stem}.request.json"]


def test_receipt_validates_against_the_schema_with_format_checking(repo, simulator, cli):
    r = run(cli, simulator.base_url, "--json")
    receipt = json.loads((repo / r.json()["segments"][0]["receipt_path"]).read_text())
    assert receipt_errors(receipt) == []
    assert receipt["schema"] == "ollama_deepseek_review_receipt_v1"
    assert receipt["context_files"] == ["docs/spec.md"]
    assert receipt["model"] == "deepseek-v4-flash"
    assert datetime.fromisoformat(receipt["created_at"]).utcoffset() == timedelta(0)


def test_receipt_answer_sha256_matches_the_answer_file(repo, simulator, cli):
    r = run(cli, simulator.base_url, "--json")
    seg = r.json()["segments"][0]
    receipt = json.loads((repo / seg["receipt_path"]).read_text())
    assert receipt["answer_path"] == seg["answer_path"]
    assert receipt["answer_sha256"] == sha((repo / receipt["answer_path"]).read_bytes())
    assert seg["answer_sha256"] == receipt["answer_sha256"]


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_answer_file_holds_exactly_the_models_content(repo, make_simulator, cli, stream):
    sim = make_simulator(reasoning_words=8)
    r = run(cli, sim.base_url, stream, "--json")
    answer = (repo / r.json()["segments"][0]["answer_path"]).read_text(encoding="utf-8")
    assert answer == expected_answer(sim, sim.chat_requests()[0].body)["content"]


def test_receipt_lists_context_files_in_the_order_given(repo, simulator, cli):
    r = run(cli, simulator.base_url, "--json", context=("src/pkg/mean.py", "docs", "src"))
    receipt = json.loads((repo / r.json()["segments"][0]["receipt_path"]).read_text())
    assert receipt["context_files"] == ["src/pkg/mean.py", "docs/spec.md", "src/pkg/__init__.py"]


def test_stdout_lists_the_written_paths_and_status_goes_to_stderr(repo, simulator, cli):
    r = run(cli, simulator.base_url)
    assert r.code == 0, r.err
    lines = r.out.splitlines()
    assert len(lines) == 3
    assert lines[0].endswith(".md") and lines[1].endswith(".receipt.json")
    assert lines[2].endswith(".request.json")
    assert all((repo / line).is_file() for line in lines)
    assert "sending 1 context file (" in r.err


def test_json_output_is_one_object_with_paths_hashes_usage_and_finish_reason(repo, simulator, cli):
    r = run(cli, simulator.base_url, "--json")
    data = r.json()
    seg = data["segments"][0]
    assert data["status"] == "ok"
    assert data["finish_reason"] == "stop"
    assert data["endpoint"] == simulator.chat_url
    assert data["context_files"] == ["docs/spec.md"]
    assert data["usage_reported"] is True
    assert set(data["usage"]) == {"prompt_tokens", "completion_tokens", "total_tokens"}
    for key in ("answer_path", "receipt_path", "record_path", "answer_sha256", "prompt_sha256"):
        assert seg[key], key
    assert seg["prompt_sha256"] == sha(simulator.chat_requests()[0].body)


def test_output_dir_option_is_created_and_used(repo, simulator, cli):
    r = run(cli, simulator.base_url, "--output-dir", "out/deep", "--json")
    assert r.code == 0, r.err
    assert r.json()["segments"][0]["answer_path"].startswith("out/deep/")
    assert len(files_under(repo / "out" / "deep")) == 3
    assert files_under(repo / "reviews") == []


def test_run_from_a_subfolder_writes_under_the_repository_root(repo, simulator, cli, monkeypatch):
    monkeypatch.chdir(repo / "src")
    r = run(cli, simulator.base_url, "--json", context=("../docs/spec.md",))
    assert r.code == 0, r.err
    assert len(files_under(repo / "reviews")) == 3
    assert not (repo / "src" / "reviews").exists()


# --------------------------------------------------------------------------- never overwrite


class _FrozenClock(datetime):
    @classmethod
    def now(cls, tz: Any = None) -> _FrozenClock:
        return cls(2026, 5, 12, 3, 35, 51, tzinfo=UTC)


def test_two_runs_in_the_same_second_get_distinct_names(repo, simulator, cli, monkeypatch):
    monkeypatch.setattr("deepseek_review.reviewing.pipeline.datetime", _FrozenClock)
    first = run(cli, simulator.base_url, "--json").json()["segments"][0]
    first_bytes = {
        k: (repo / first[k]).read_bytes() for k in ("answer_path", "receipt_path", "record_path")
    }
    (repo / "docs" / "spec.md").write_text("A different spec.\n")
    second = run(cli, simulator.base_url, "--json").json()["segments"][0]
    stem = "review_deepseek_deepseek-v4-flash_20260512T033551Z"
    assert first["answer_path"] == f"reviews/{stem}.md"
    assert second["answer_path"] == f"reviews/{stem}-2.md"
    assert second["receipt_path"] == f"reviews/{stem}-2.receipt.json"
    for k, data in first_bytes.items():
        assert (repo / first[k]).read_bytes() == data
    for seg in (first, second):
        receipt = json.loads((repo / seg["receipt_path"]).read_text())
        assert receipt_errors(receipt) == []
        assert receipt["answer_sha256"] == sha((repo / seg["answer_path"]).read_bytes())
    assert len(files_under(repo / "reviews")) == 6


def test_left_over_receipt_under_the_next_name_is_never_overwritten(
    repo, simulator, cli, monkeypatch
):
    monkeypatch.setattr("deepseek_review.reviewing.pipeline.datetime", _FrozenClock)
    stem = "review_deepseek_deepseek-v4-flash_20260512T033551Z"
    (repo / "reviews").mkdir()
    (repo / "reviews" / f"{stem}.receipt.json").write_text("left over")
    seg = run(cli, simulator.base_url, "--json").json()["segments"][0]
    assert seg["answer_path"] == f"reviews/{stem}-2.md"
    assert (repo / "reviews" / f"{stem}.receipt.json").read_text() == "left over"


def test_no_temp_files_are_left_after_success(repo, simulator, cli):
    assert run(cli, simulator.base_url).code == 0
    assert no_temp_files(repo)


def test_no_temp_files_are_left_when_a_write_fails(repo, simulator, cli, monkeypatch):
    import os

    real_link = os.link

    def failing_link(src: Any, dst: Any, *a: Any, **kw: Any) -> None:
        if str(dst).endswith(".request.json"):
            raise OSError(28, "No space left on device")
        real_link(src, dst, *a, **kw)

    monkeypatch.setattr(os, "link", failing_link)
    r = run(cli, simulator.base_url)
    assert r.code == 10
    assert "No space left on device" in r.err
    assert no_temp_files(repo)
    assert not [p for p in files_under(repo / "reviews") if p.endswith(".receipt.json")]


def test_nothing_is_written_when_the_server_fails(repo, make_simulator, cli):
    sim = make_simulator(fault_rate=1.0, fault_kinds=("500",))
    r = run(cli, sim.base_url, "--max-attempts", "2")
    assert r.code == 5
    assert "answered 500" in r.err
    assert files_under(repo / "reviews") == []
    assert no_temp_files(repo)


def test_output_folder_that_is_a_file_fails_with_exit_10(repo, simulator, cli):
    (repo / "reviews").write_text("in the way")
    r = run(cli, simulator.base_url)
    assert r.code == 10
    assert "reviews" in r.err
    assert (repo / "reviews").read_text() == "in the way"


@pytest.mark.parametrize("where", ["../elsewhere", "/tmp/deepseek-review-elsewhere"])
def test_output_dir_outside_the_root_is_refused_before_sending(repo, simulator, cli, where):
    r = run(cli, simulator.base_url, "--output-dir", where)
    assert r.code == 3
    assert where in r.err and "outside" in r.err
    assert simulator.chat_requests() == []
    assert not (repo.parent / "elsewhere").exists()
    assert not Path("/tmp/deepseek-review-elsewhere").exists()


def test_output_dir_symlinked_out_of_the_root_is_refused(repo, simulator, cli, tmp_path):
    (tmp_path / "outside").mkdir()
    (repo / "reviews").symlink_to(tmp_path / "outside", target_is_directory=True)
    r = run(cli, simulator.base_url)
    assert r.code == 3
    assert "symlink" in r.err
    assert list((tmp_path / "outside").iterdir()) == []
    assert simulator.chat_requests() == []


# --------------------------------------------------------------------------- dry run


def test_dry_run_lists_what_would_be_sent_and_sends_nothing(repo, simulator, cli):
    r = run(cli, simulator.base_url, "--dry-run", context=("docs/spec.md", "src"))
    assert r.code == 0, r.err
    size = (repo / "docs" / "spec.md").stat().st_size
    assert simulator.chat_url in r.out
    assert "deepseek-v4-flash" in r.out
    assert re.search(r"prompt_sha256\s+sha256:[0-9a-f]{64}", r.out)
    assert re.search(r"~\d+ tokens", r.out)
    assert re.search(rf"\b{size}\s+docs/spec\.md", r.out)
    assert "src/pkg/mean.py" in r.out
    assert simulator.chat_requests() == []
    assert files_under(repo / "reviews") == []
    assert not (repo / "reviews").exists()


def test_dry_run_json_has_files_sizes_estimate_endpoint_model_and_hash(repo, simulator, cli):
    r = run(cli, simulator.base_url, "--dry-run", "--json", "--model", "deepseek-v3.2")
    data = r.json()
    assert data["dry_run"] is True
    assert data["endpoint"] == simulator.chat_url
    assert data["model"] == "deepseek-v3.2"
    assert data["token_estimate"] > 0
    size = (repo / "docs" / "spec.md").stat().st_size
    assert data["context_files"] == [
        {"path": "docs/spec.md", "bytes": size, "sha256": sha((repo / "docs/spec.md").read_bytes())}
    ]
    assert simulator.chat_requests() == []


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_dry_run_prompt_sha256_is_the_one_a_real_run_sends(repo, simulator, cli, stream):
    dry = run(cli, simulator.base_url, stream, "--dry-run", "--json").json()
    real = run(cli, simulator.base_url, stream, "--json").json()
    assert dry["prompt_sha256"] == real["segments"][0]["prompt_sha256"]
    assert dry["prompt_sha256"] == sha(simulator.chat_requests()[0].body)


# --------------------------------------------------------------------------- the API key


def assert_key_nowhere(r: Any, repo: Path) -> None:
    assert KEY not in r.out
    assert KEY not in r.err
    for path in repo.rglob("*"):
        if path.is_file():
            assert KEY.encode() not in path.read_bytes(), path


def test_key_never_appears_after_a_successful_verbose_run(repo, make_simulator, cli, monkeypatch):
    sim = make_simulator(api_key=KEY)
    use_key(monkeypatch, KEY)
    r = run(cli, sim.base_url, "--json", "--keep-reasoning", verbose=True)
    assert r.code == 0, r.err
    assert sim.chat_requests()[0].headers["authorization"] == f"Bearer {KEY}"
    assert_key_nowhere(r, repo)


def test_key_never_appears_when_the_server_refuses_it(repo, make_simulator, cli, monkeypatch):
    sim = make_simulator(api_key="a-different-key")
    use_key(monkeypatch, KEY)
    r = run(cli, sim.base_url, verbose=True)
    assert r.code == 5
    assert "answered 401" in r.err
    assert_key_nowhere(r, repo)


@pytest.mark.parametrize("status", [400, 500])
def test_key_never_appears_when_an_error_body_echoes_the_headers(
    repo, make_stub, cli, monkeypatch, status
):
    stub = make_stub(
        [Reply(status, error_json({"message": "bad request, you sent {headers}"}))],
        echo_headers=True,
    )
    use_key(monkeypatch, KEY)
    r = run(cli, stub.base_url, "--max-attempts", "2", verbose=True)
    assert r.code == 5
    assert "Bearer" in r.err  # the echo did reach the message...
    assert_key_nowhere(r, repo)  # ...with the key taken out


@pytest.mark.parametrize("pad", [250, 268, 275])
def test_no_part_of_the_key_appears_when_an_echo_is_cut_short(
    repo, make_stub, cli, monkeypatch, pad
):
    """Messages are shortened for the terminal; the key is taken out before, never after."""
    stub = make_stub([Reply(400, error_json("P" * pad + " {headers}"))], echo_headers=True)
    use_key(monkeypatch, KEY)
    r = run(cli, stub.base_url, verbose=True)
    assert r.code == 5
    assert "sk-planted" not in r.err
    assert_key_nowhere(r, repo)


@pytest.mark.parametrize("stream", ["--stream", "--no-stream"])
def test_key_never_appears_when_a_200_answer_echoes_the_headers(
    repo, make_stub, cli, monkeypatch, stream
):
    if stream == "--stream":
        body = sse({"error": "upstream saw {headers}"})
        reply = Reply(200, body, content_type="text/event-stream")
    else:
        reply = Reply(200, error_json("upstream saw {headers}"))
    stub = make_stub([reply], echo_headers=True)
    use_key(monkeypatch, KEY)
    r = run(cli, stub.base_url, stream, "--max-attempts", "2", verbose=True)
    assert r.code == 6
    assert "Bearer" in r.err
    assert_key_nowhere(r, repo)


def test_key_never_appears_when_it_is_refused_over_plain_http(repo, cli, monkeypatch):
    use_key(monkeypatch, KEY)
    r = run(cli, "http://gpu-box.invalid:11434", verbose=True)
    assert r.code == 2
    assert "refusing to send OLLAMA_API_KEY over plain http to gpu-box.invalid" in r.err
    assert_key_nowhere(r, repo)


def test_key_never_appears_in_a_dry_run(repo, simulator, cli, monkeypatch):
    use_key(monkeypatch, KEY)
    r = run(cli, simulator.base_url, "--dry-run", "--json", verbose=True)
    assert r.code == 0, r.err
    assert_key_nowhere(r, repo)


# --------------------------------------------------------------------------- secret scan


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (PRIVATE_KEY, 2),
        ("# settings\nDEBUG=1\nDB_PASSWORD=hunter2hunter2\n", 3),
        ('config = {\n  "password": "s3cr3t-Pa55w0rd-value"\n}\n', 2),
    ],
    ids=["private-key", "env-password", "json-password"],
)
def test_secret_in_context_is_refused_for_a_remote_endpoint_naming_file_and_line(
    repo, cli, text, line
):
    (repo / "docs" / "leak.md").write_text(text)
    r = run(cli, "https://example.invalid", "--max-attempts", "1", context=("docs/leak.md",))
    assert r.code == 8, r.err
    assert f"docs/leak.md:{line}:" in r.err
    assert "hunter2hunter2" not in r.err and "MIIEpAIB" not in r.err
    assert "--allow-secrets" in r.err
    assert files_under(repo / "reviews") == []


def test_allow_secrets_lets_the_context_past_the_scan(repo, cli):
    (repo / "docs" / "leak.md").write_text(PRIVATE_KEY)
    r = run(
        cli,
        "https://example.invalid",
        "--allow-secrets",
        "--max-attempts",
        "1",
        context=("docs/leak.md",),
    )
    assert r.code == 5, r.err
    assert "example.invalid" in r.err


def test_loopback_endpoint_is_not_scanned(repo, simulator, cli):
    (repo / "docs" / "leak.md").write_text(PRIVATE_KEY)
    r = run(cli, simulator.base_url, context=("docs/leak.md",))
    assert r.code == 0, r.err
    assert len(simulator.chat_requests()) == 1


def test_placeholder_values_are_not_taken_for_secrets(repo, cli):
    (repo / "docs" / "example.env").write_text("DB_PASSWORD=changeme\nAPI_KEY=your-key-here\n")
    r = run(cli, "https://example.invalid", "--dry-run", context=("docs/example.env",))
    assert r.code == 0, r.err


def test_dry_run_to_a_remote_endpoint_also_refuses_secrets(repo, cli):
    (repo / "docs" / "leak.md").write_text(PRIVATE_KEY)
    r = run(cli, "https://example.invalid", "--dry-run", context=("docs/leak.md",))
    assert r.code == 8
    assert "docs/leak.md:2: looks like a secret (Private Key)" in r.err


# --------------------------------------------------------------------------- the library


def test_library_review_returns_the_written_segments(repo, simulator):
    from deepseek_review.reviewing.pipeline import ReviewOptions, review

    result = review(
        ReviewOptions(context=("docs/spec.md",), prompt="Check.", endpoint=simulator.base_url),
        env={},
    )
    (seg,) = result.segments
    assert (repo / seg.answer_path).read_text(encoding="utf-8") == result.text
    assert result.context_files == ("docs/spec.md",)
    assert not result.truncated
