"""`stats`: tokens and reviews per model and per month, from receipts only."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

FIXTURE = Path(__file__).parents[1] / "fixtures" / "research-stack"


def test_stats_counts_the_seed_receipts_per_model_and_month(tmp_path, cli):
    root = tmp_path / "seed"
    shutil.copytree(FIXTURE, root)
    r = cli("stats", "--repo-root", str(root), "shared-data", "--json")
    assert r.code == 0, r.err
    data = r.json()
    assert (
        data["total"].items()
        >= {
            "reviews": 1,
            "segments": 2,
            "segments_without_usage": 0,
            "prompt_tokens": 5008 + 372,
            "completion_tokens": 5000 + 440,
            "total_tokens": 10008 + 812,
        }.items()
    )
    assert data["by_model"]["deepseek-v3.2"]["reviews"] == 1
    assert data["by_model"]["deepseek-v4-flash"]["reviews"] == 0
    assert list(data["by_month"]) == ["2026-05"]


def test_stats_sums_a_chain_written_by_run(repo, make_simulator, cli):
    sim = make_simulator(answer_words=50)
    run = cli(
        "run",
        "-c",
        "docs/spec.md",
        "-p",
        "x",
        "--endpoint",
        sim.base_url,
        "--max-tokens",
        "20",
        "--json",
    )
    assert run.code == 0, run.err
    expected = run.json()["usage"]
    data = cli("stats", "--json").json()
    assert data["total"]["reviews"] == 1
    assert data["total"]["segments"] == len(run.json()["segments"])
    assert data["total"]["total_tokens"] == expected["total_tokens"]


def test_stats_does_not_count_a_receipt_that_does_not_validate(repo, simulator, cli):
    cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", simulator.base_url)
    receipt = next((repo / "reviews").glob("*.receipt.json"))
    data = json.loads(receipt.read_text())
    data["usage"]["total_tokens"] = -1
    receipt.write_text(json.dumps(data))
    r = cli("stats", "--json")
    assert r.code == 0
    assert r.json()["total"]["segments"] == 0
    assert r.json()["invalid"] == [receipt.relative_to(repo).as_posix()]
    assert "do not validate" in r.err


def test_stats_prints_a_table_with_a_total_line(repo, simulator, cli):
    cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", simulator.base_url)
    r = cli("stats")
    lines = r.out.splitlines()
    assert lines[0].split()[:3] == ["model", "month", "reviews"]
    assert lines[1].startswith("deepseek-v4-flash")
    assert lines[-1].startswith("total")


def test_stats_of_a_missing_path_is_bad_input(repo, cli):
    r = cli("stats", "nowhere")
    assert r.code == 3
    assert "nowhere" in r.err
