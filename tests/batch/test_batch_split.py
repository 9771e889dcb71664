"""Batch entries with ``split = true``: reviewed in parts and a synthesis as ``run --split``
reviews them, one entry of the report, resumed by a re-run, failing alone."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.testing.simulator.server import Simulator
from tests.support.batch import batch, manifest, statuses
from tests.support.cli import CliResult
from tests.support.pool import endpoint_flags, served_by, start_servers
from tests.support.split import split_records, write_texts

WINDOW = 8192
SPLIT = {"split": True, "context": "big", "context_window": WINDOW, "max_tokens": 1024}


@pytest.fixture
def sim(make_simulator: Callable[..., Simulator]) -> Simulator:
    """A server whose window is 8,192 tokens, refusing (400) any request over it."""
    return make_simulator(context_window=WINDOW, context_overflow="refuse", answer_words=60)


@pytest.fixture
def big(repo: Path) -> Path:
    """Twelve files of ~4,600 bytes in ``big/``: more than one request of an 8k window."""
    write_texts(repo, [f"big/{d}/mod{i}.py" for d in ("a", "b", "c") for i in range(4)], 4600)
    return repo


def _manifest(repo: Path, **defaults: Any) -> Path:
    """A small ordinary entry first, then the split one."""
    return manifest(repo, ["small", "large"], defaults=defaults, per_entry={"large": SPLIT})


def _entry(result: CliResult, topic: str) -> dict[str, Any]:
    entry: dict[str, Any] = next(e for e in result.json()["entries"] if e["topic"] == topic)
    return entry


def test_a_split_entry_is_reviewed_in_parts_then_a_synthesis_and_verifies_strictly(big, cli, sim):
    _manifest(big)
    r = batch(cli, sim, "--jobs", "2")
    assert r.code == 0, r.err
    assert statuses(r) == {"small": "ok", "large": "ok"}
    (record,) = split_records(big / "reviews")
    large = _entry(r, "large")
    parts = len(record["parts"])
    assert parts >= 2
    assert large["split"]["parts"] == parts and large["split"]["synthesis"] == "done"
    assert large["receipt_paths"] == [
        *(rc for p in record["parts"] for rc in p["receipts"]),
        *record["synthesis"]["receipts"],
    ]
    assert len(sim.chat_requests()) == parts + 2  # the parts, the synthesis, the small entry
    assert all(req.status == 200 for req in sim.chat_requests())
    assert r.json()["counts"]["ok"] == 2
    v = cli("verify", "--strict", "reviews")
    assert v.code == 0, v.err


def test_every_request_of_a_split_entry_counts_as_the_entrys(big, cli, sim):
    _manifest(big)
    r = batch(cli, sim, "--jobs", "2")
    large = _entry(r, "large")
    assert large["attempts"] == large["split"]["parts"] + 1
    assert large["new_segments"] == len(large["receipt_paths"])
    assert large["usage"]["total_tokens"] > 0


def test_a_rerun_of_a_finished_batch_sends_no_part_again(big, cli, sim):
    _manifest(big)
    assert batch(cli, sim).code == 0
    sim.reset()
    r = batch(cli, sim)
    assert r.code == 0, r.err
    assert sim.chat_requests() == []
    assert statuses(r) == {"small": "skipped", "large": "skipped"}
    split = _entry(r, "large")["split"]
    assert split["parts_resumed"] == split["parts"] and split["record"] is None


def test_a_failing_part_fails_its_entry_in_one_line_while_the_others_finish(big, cli, sim):
    _manifest(big)
    sim.script_faults([None, "500"])  # the small entry's answer, then the first part's
    r = batch(cli, sim, "--jobs", "1", "--max-attempts", "1")
    assert r.code == 11
    assert statuses(r) == {"small": "ok", "large": "failed"}
    large = _entry(r, "large")
    assert large["error"].startswith("part 1 of ") and "\n" not in large["error"]
    (record,) = split_records(big / "reviews")
    assert [p["status"] for p in record["parts"]][:2] == ["failed", "done"]
    assert record["synthesis"]["status"] == "not run"
    assert large["split"]["parts_done"] == len(record["parts"]) - 1


def test_a_resumed_batch_sends_only_the_failed_part_and_the_synthesis(big, cli, sim):
    _manifest(big)
    sim.script_faults([None, "500"])
    assert batch(cli, sim, "--jobs", "1", "--max-attempts", "1").code == 11
    sim.reset()
    r = batch(cli, sim)
    assert r.code == 0, r.err
    assert len(sim.chat_requests()) == 2
    split = _entry(r, "large")["split"]
    assert split["parts_resumed"] == split["parts"] - 1 and split["synthesis"] == "done"
    assert cli("verify", "--strict", "reviews").code == 0


def test_split_in_defaults_leaves_an_entry_that_fits_one_ordinary_review(big, cli, sim):
    manifest(big, ["small"], defaults={"split": True, "context_window": WINDOW, "max_tokens": 1024})
    r = batch(cli, sim)
    assert r.code == 0, r.err
    assert _entry(r, "small")["split"] is None
    assert len(sim.chat_requests()) == 1
    assert split_records(big / "reviews") == []


def test_split_in_the_config_file_splits_the_batchs_entries(big, cli, sim):
    (big / ".deepseek-review.toml").write_text(f"split = true\ncontext_window = {WINDOW}\n")
    manifest(big, ["large"], per_entry={"large": {"context": "big", "max_tokens": 1024}})
    r = batch(cli, sim)
    assert r.code == 0, r.err
    assert _entry(r, "large")["split"]["parts"] >= 2


def test_a_split_entry_without_a_known_window_is_a_manifest_problem_at_its_line(big, cli, sim):
    manifest(big, ["large"], per_entry={"large": {"split": True, "context": "big"}})
    r = batch(cli, sim)
    assert r.code == 3
    assert "reviews.toml:" in r.err and "context_window" in r.err
    assert sim.chat_requests() == []


def test_the_dry_run_shows_a_split_entrys_parts(big, cli, sim):
    _manifest(big)
    r = batch(cli, sim, "--dry-run")
    assert r.code == 0, r.err
    rows = {e["topic"]: e for e in json.loads(r.out)["entries"]}
    assert rows["large"]["parts"] >= 2 and rows["small"]["parts"] is None
    assert rows["large"]["context_files"] == 12
    assert sim.chat_requests() == []


def test_a_budget_reached_stops_starting_parts_and_leaves_the_entry_pending(big, cli, sim):
    manifest(big, ["large"], per_entry={"large": SPLIT})
    r = batch(cli, sim, "--jobs", "1", "--max-total-tokens", "1")
    assert r.code == 11
    large = _entry(r, "large")
    assert large["status"] == "pending"
    assert large["error"].startswith("not started: ") and "1 of " in large["error"]
    assert len(sim.chat_requests()) == 1
    (record,) = split_records(big / "reviews")
    assert [p["status"] for p in record["parts"]][:2] == ["done", "not run"]


def test_the_progress_line_of_a_split_entry_says_its_parts(big, cli, sim):
    _manifest(big)
    r = cli("batch", "reviews.toml", "--endpoint", sim.base_url)
    assert r.code == 0, r.err
    (line,) = [x for x in r.err.splitlines() if "ok large (" in x]
    assert " parts and a synthesis, " in line


def test_batch_split_flag_splits_every_entry_that_does_not_fit(big, cli, sim):
    defaults = {"context_window": WINDOW, "max_tokens": 1024}
    manifest(big, ["small", "large"], defaults=defaults, per_entry={"large": {"context": "big"}})
    r = batch(cli, sim, "--split")
    assert r.code == 0, r.err
    assert _entry(r, "small")["split"] is None
    assert _entry(r, "large")["split"]["parts"] >= 2


def test_no_resume_sends_every_part_again(big, cli, sim):
    _manifest(big)
    first = batch(cli, sim)
    sim.reset()
    r = batch(cli, sim, "--no-resume")
    assert r.code == 0, r.err
    assert len(sim.chat_requests()) == len(_entry(first, "large")["receipt_paths"]) + 1
    assert _entry(r, "large")["split"]["parts_resumed"] == 0


# --------------------------------------------------------------------------- over a pool


def _pool(make_simulator: Callable[..., Simulator]) -> list[Simulator]:
    return start_servers(make_simulator, 2, context_window=WINDOW, context_overflow="refuse",
                         answer_words=60, latency=0.05)  # fmt: skip


def _pool_batch(cli: Callable[..., CliResult], servers: list[Simulator], *args: str) -> CliResult:
    return cli("batch", "reviews.toml", *endpoint_flags(servers), "--retry-wait", "0.01",
               "--json", "--jobs", "4", *args)  # fmt: skip


def test_the_parts_of_a_split_entry_are_spread_over_the_servers_of_a_pool(big, cli, make_simulator):
    servers = _pool(make_simulator)
    _manifest(big)
    r = _pool_batch(cli, servers)
    assert r.code == 0, r.err
    served = served_by(big, {"entries": [_entry(r, "large")]})
    assert set(served) == {s.chat_url for s in servers}  # each server reviewed parts
    assert all(q.status == 200 for s in servers for q in s.chat_requests())
    v = cli("verify", "--strict", "reviews")
    assert v.code == 0, v.err


def test_a_drained_servers_parts_of_a_split_entry_go_to_the_others(big, cli, make_simulator):
    dying, living = _pool(make_simulator)
    dying.config.die_after = 1
    _manifest(big)
    r = _pool_batch(cli, [dying, living], "--max-attempts", "2")
    assert r.code == 0, r.err
    assert statuses(r) == {"small": "ok", "large": "ok"}
    drained = [line for line in r.err.splitlines() if "stopped answering" in line]
    assert len(drained) == 1 and dying.base_url in drained[0]
    (record,) = split_records(big / "reviews")
    assert all(p["status"] == "done" for p in record["parts"])
    served = served_by(big, r.json())
    assert served[dying.chat_url] <= 1 and served[living.chat_url] >= len(record["parts"])
    assert cli("verify", "--strict", "reviews").code == 0
