"""The calibration cache: what a server reported for earlier prompts, remembered per endpoint
and model in the user's cache folder, makes the next plan's estimate (and never fails a run)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.chat.tokens import Counter, Sample
from deepseek_review.reviewing import calibration
from deepseek_review.reviewing.calibration import MAX_ENTRIES, MAX_SAMPLES, cache_file, remember
from deepseek_review.reviewing.request import message_sizes
from tests.support.cli import use_key

URL = "http://127.0.0.1:11434/v1/chat/completions"
#: A spec long enough that its prompt is a sample worth keeping (over 256 tokens).
LONG_SPEC = "# Spec\n\n" + "".join(
    f"Rule {i}: the mean of the values in list {i} is their sum divided by their count.\n"
    for i in range(60)
)


@pytest.fixture
def long_spec(repo: Path) -> Path:
    (repo / "docs" / "long.md").write_text(LONG_SPEC, encoding="utf-8")
    return repo


def run(cli: Any, url: str, *more: str) -> Any:
    return cli("run", "-c", "docs/long.md", "-p", "Check the rules.", "--endpoint", url,
               "--no-stream", *more)  # fmt: skip


def dry(cli: Any, url: str, *more: str) -> dict[str, Any]:
    r = run(cli, url, "--dry-run", "--json", *more)
    assert r.code == 0, r.err
    info: dict[str, Any] = r.json()
    return info


def reported_prompt_tokens(repo: Path) -> list[int]:
    receipts = sorted((repo / "reviews").glob("*.receipt.json"))
    return [json.loads(p.read_text())["usage"]["prompt_tokens"] for p in receipts]


def planned_sizes(repo: Path, url: str) -> list[int]:
    from deepseek_review import api
    from deepseek_review.reviewing.plan import ReviewPlan

    plan = api.plan_review(
        context=["docs/long.md"], prompt="Check the rules.", endpoint=url, repo_root=repo
    )
    assert isinstance(plan, ReviewPlan)
    return message_sizes(plan.framed)


# --------------------------------------------------------------------------- runs


def test_a_second_run_estimates_from_the_prompt_tokens_the_first_run_reported(
    long_spec: Path, simulator: Any, cli: Any
) -> None:
    assert dry(cli, simulator.base_url)["token_count_how"] == "estimate"
    first = run(cli, simulator.base_url)
    assert first.code == 0, first.err
    sizes = planned_sizes(long_spec, simulator.base_url)
    (reported,) = reported_prompt_tokens(long_spec)
    expected = Counter.calibrated([Sample(sum(sizes), len(sizes), reported)]).estimate(sizes)
    info = dry(cli, simulator.base_url)
    assert (info["token_count"], info["token_count_how"]) == (expected.tokens, expected.how)
    assert expected.how == "calibrated estimate (1 sample)"
    assert info["token_count"] >= reported  # errs high, never under what the server counted


def test_the_dry_run_text_says_the_estimate_is_calibrated(
    long_spec: Path, simulator: Any, cli: Any
) -> None:
    assert run(cli, simulator.base_url).code == 0
    r = run(cli, simulator.base_url, "--dry-run")
    assert "tokens (calibrated estimate (1 sample))" in r.out


def test_samples_are_kept_per_endpoint_and_model(long_spec: Path, simulator: Any, cli: Any) -> None:
    assert run(cli, simulator.base_url).code == 0
    assert dry(cli, simulator.base_url, "--model", "another-model")["token_count_how"] == (
        "estimate"
    )


def test_a_prompt_the_server_clipped_is_not_calibrated_from(
    long_spec: Path, make_simulator: Any, cli: Any
) -> None:
    sim = make_simulator(context_window=300)  # Ollama's silent clip at 300 tokens
    r = run(cli, sim.base_url, "--allow-truncated-prompt", "--server", "llama.cpp")
    assert r.code == 0, r.err
    assert reported_prompt_tokens(long_spec) == [300]
    assert not cache_file().exists()


def test_the_cache_is_in_xdg_cache_home_when_it_is_set(
    long_spec: Path, simulator: Any, cli: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert run(cli, simulator.base_url).code == 0
    assert (tmp_path / "xdg" / "deepseek-review" / "token-calibration.json").is_file()


def test_a_relative_xdg_cache_home_is_ignored_as_the_spec_says(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    assert (
        cache_file() == Path(os.environ["HOME"]) / ".cache/deepseek-review/token-calibration.json"
    )


# --------------------------------------------------------------------------- robustness


@pytest.mark.parametrize(
    "content",
    [b"{not json", b"[]", b'{"format": "something else"}', b"\xff\xfe", b'{"format": '
     b'"deepseek-review token calibration", "version": 99, "entries": []}'],
    ids=["broken", "array", "other-format", "not-utf8", "newer-version"],
)  # fmt: skip
def test_a_corrupt_cache_is_ignored_with_a_debug_line_and_replaced_by_the_next_sample(
    long_spec: Path, simulator: Any, cli: Any, content: bytes
) -> None:
    path = cache_file()
    path.parent.mkdir(parents=True)
    path.write_bytes(content)
    r = run(cli, simulator.base_url, "--dry-run", "-v")
    assert r.code == 0, r.err
    assert "token calibration cache" in r.err and "ignored" in r.err
    assert "tokens (estimate)" in r.out
    assert run(cli, simulator.base_url).code == 0
    assert len(calibration.load(simulator.chat_url, "deepseek-v4-flash")) == 1


def test_entries_and_samples_of_the_wrong_shape_are_dropped_and_the_rest_kept() -> None:
    path = cache_file()
    path.parent.mkdir(parents=True)
    good = {"endpoint": URL, "model": "m", "updated": 1, "samples": [[4000, 2, 1000], "x", [1]]}
    data = {"format": calibration.FORMAT, "version": 1, "entries": [good, 7, {"model": "m"}]}
    path.write_text(json.dumps(data))
    assert calibration.load(URL, "m") == [Sample(4000, 2, 1000)]


@pytest.mark.parametrize("kind", ["folder", "fifo"])
def test_a_cache_that_cannot_be_read_or_written_never_fails_a_run(
    long_spec: Path, simulator: Any, cli: Any, kind: str
) -> None:
    path = cache_file()
    path.parent.mkdir(parents=True)
    if kind == "folder":
        path.mkdir()
    else:
        os.mkfifo(path)
    r = run(cli, simulator.base_url)
    assert r.code == 0, r.err
    assert list((long_spec / "reviews").glob("*.receipt.json"))


def test_an_unwritable_cache_folder_never_fails_a_run(
    long_spec: Path, simulator: Any, cli: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("XDG_CACHE_HOME", str(blocker))  # a file where the folder would be
    r = run(cli, simulator.base_url)
    assert r.code == 0, r.err


def test_concurrent_writers_lose_no_sample_and_leave_a_valid_file(tmp_path: Path) -> None:
    script = (
        "import sys\n"
        "from deepseek_review.chat.tokens import Sample\n"
        "from deepseek_review.reviewing.calibration import remember\n"
        "for i in range(10):\n"
        "    remember(sys.argv[1], 'm', Sample(4000 + i, 2, 1000))\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", script, URL], env=os.environ.copy())
        for _ in range(4)
    ]
    assert [p.wait(timeout=120) for p in procs] == [0, 0, 0, 0]
    assert len(calibration.load(URL, "m")) == 40
    json.loads(cache_file().read_text())


# --------------------------------------------------------------------------- what it holds


def test_the_cache_holds_no_key_userinfo_or_query(
    long_spec: Path, make_simulator: Any, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-calibration-secret-0042"
    sim = make_simulator(api_key=key)
    use_key(monkeypatch, key, "SIM_KEY")
    assert run(cli, sim.base_url).code == 0
    remember("http://alice:hunter2@127.0.0.1:9/v1/chat/completions?key=qs-secret", "m",
             Sample(4000, 2, 1000))  # fmt: skip
    text = cache_file().read_text()
    for secret in (key, "alice", "hunter2", "qs-secret"):
        assert secret not in text
    assert calibration.load("http://127.0.0.1:9/v1/chat/completions", "m")


def test_the_cache_is_the_owners_only() -> None:
    remember(URL, "m", Sample(4000, 2, 1000))
    assert cache_file().stat().st_mode & 0o777 == 0o600
    assert cache_file().parent.stat().st_mode & 0o777 == 0o700


def test_the_cache_keeps_the_latest_samples_of_the_latest_endpoints() -> None:
    for i in range(MAX_SAMPLES + 5):
        remember(URL, "m", Sample(4000 + i, 2, 1000))
    kept = calibration.load(URL, "m")
    assert len(kept) == MAX_SAMPLES and kept[-1].text_bytes == 4000 + MAX_SAMPLES + 4
    for i in range(MAX_ENTRIES + 3):
        remember(f"http://127.0.0.1:{1000 + i}/v1/chat/completions", "m", Sample(4000, 2, 1000))
    entries = json.loads(cache_file().read_text())["entries"]
    assert len(entries) == MAX_ENTRIES
    assert calibration.load(URL, "m") == []  # the least recently updated went first


def test_both_chat_apis_of_one_server_share_its_samples() -> None:
    remember(URL, "m", Sample(4000, 2, 1000))
    assert calibration.load(URL.replace("/v1/chat/completions", "/api/chat"), "m")
