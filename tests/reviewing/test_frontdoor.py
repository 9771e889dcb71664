"""One front door: each library call honours a config file and the environment exactly as its
command does (the command calls it): the same folders, the same request bytes, the same report.

Every test here sets a repository config file and a ``DEEPSEEK_REVIEW_*`` variable as a user
would, runs the command and the library call against the same simulator, and compares what
each sent and wrote.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from deepseek_review import api
from deepseek_review.errors import ConfigError
from deepseek_review.reviewing.plan import ReviewPlan
from deepseek_review.testing.simulator import Simulator
from tests.support.cli import review

ENTRY = '[[review]]\ntopic = "spec"\nprompt = "Check."\ncontext = "docs/spec.md"\n'


def bodies(sim: Simulator) -> list[dict[str, Any]]:
    return [json.loads(r.body) for r in sim.chat_requests()]


def test_plan_review_plans_what_run_dry_run_shows(configured, simulator, cli):
    r = cli("run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", simulator.base_url,
            "--dry-run", "--json")  # fmt: skip
    assert r.code == 0, r.err
    plan = api.plan_review(context="docs/spec.md", prompt="Check.", endpoint=simulator.base_url)
    assert isinstance(plan, ReviewPlan)
    shown = r.json()
    assert (plan.prepared.prompt_sha256, plan.options.model, plan.endpoint.url) == (
        shown["prompt_sha256"],
        "m-from-env",
        shown["endpoint"],
    )
    assert plan.options.output_dir == "custom" and plan.options.max_tokens == 7777
    assert simulator.chat_requests() == []


def test_continue_review_sends_what_continue_sends(configured, make_simulator, cli):
    sim = make_simulator(answer_words=80)
    chains = []
    for folder in ("a", "b"):  # two identical reviews cut off after their primary
        r = review(cli, sim, "--max-tokens", "20", "--max-continuations", "0",
                       "--output-dir", folder)  # fmt: skip
        assert r.code == 4, r.err
        chains.append(r.json()["segments"][0]["answer_path"])
    r = cli("continue", chains[0], "--endpoint", sim.base_url, "--json")
    outcome = api.continue_review(chains[1], endpoint=sim.base_url)
    by_cli, by_library = bodies(sim)[2:]
    assert by_library == by_cli
    assert by_library["max_tokens"] == 33  # the config file's continuation_max_tokens
    assert len(r.json()["segments"]) == len(outcome.result.segments) == 2  # the variable's 1
    assert outcome.result.segments[-1].answer_path.startswith("b/")


def test_show_reads_what_show_prints(configured, simulator, cli):
    """``show`` has no setting: the library reads the same chain, byte for byte."""
    r = cli("run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", simulator.base_url,
            "--json")  # fmt: skip
    answer = r.json()["segments"][0]["answer_path"]
    assert answer.startswith("custom/")
    shown = cli("show", answer)
    assert api.show(answer).text == shown.out
    assert not api.show(answer).cut_off


def test_verify_searches_the_configured_folder_as_verify_does(configured, simulator, cli):
    review(cli, simulator)
    r = cli("verify", "--json")
    report = api.verify()
    assert r.code == 0, r.err
    assert report.to_json() == r.json()
    assert report.searched == ["custom"] and len(report.receipts) == 1


def test_stats_counts_the_configured_folder_as_stats_does(configured, simulator, cli):
    review(cli, simulator)
    r = cli("stats", "--json")
    assert r.code == 0, r.err
    assert api.stats().to_json() == r.json()
    assert r.json()["total"]["reviews"] == 1


def test_configuration_is_what_config_shows(configured, cli):
    r = cli("config", "--json")
    found = api.configuration()
    data = found.settings.as_dict()
    data["endpoint"]["resolved"] = found.endpoint
    data["api_key_env"]["effective"] = "OLLAMA_API_KEY"
    assert r.json() == {"repo_root": str(found.root), "settings": data, "refused": []}
    assert data["model"] == {"value": "m-from-env", "source": "env DEEPSEEK_REVIEW_MODEL"}


def test_run_batch_sends_and_writes_what_batch_does(configured, simulator, cli):
    (configured / "m.toml").write_text(ENTRY)
    r = cli("batch", "m.toml", "--endpoint", simulator.base_url, "--no-resume", "--json")
    assert r.code == 0, r.err
    report = api.run_batch("m.toml", endpoint=simulator.base_url, resume=False)
    by_cli, by_library = bodies(simulator)
    assert by_library == by_cli
    assert (by_library["model"], by_library["max_tokens"]) == ("m-from-env", 7777)
    (entry,) = report.entries
    assert entry.receipt_paths[0].startswith("custom/")
    assert r.json()["entries"][0]["receipt_paths"][0].startswith("custom/")


def test_plan_batch_plans_what_batch_dry_run_shows(configured, simulator, cli):
    (configured / "m.toml").write_text(ENTRY)
    r = cli("batch", "m.toml", "--endpoint", simulator.base_url, "--dry-run", "--json")
    assert r.code == 0, r.err
    plan = api.plan_batch("m.toml", endpoint=simulator.base_url)
    (shown,) = r.json()["entries"]
    (work,) = plan.prepared.work
    assert (work.planned.plan.prepared.prompt_sha256, work.planned.plan.options.output_dir) == (
        shown["prompt_sha256"],
        shown["output_dir"],
    )
    assert shown["model"] == "m-from-env"
    assert simulator.chat_requests() == []


def test_a_bad_config_file_stops_every_call_as_it_stops_every_command(repo, cli):
    (repo / ".deepseek-review.toml").write_text("max_tokens = 0\n")
    message = ".deepseek-review.toml max_tokens must be positive, got 0"
    for command, call in (
        (("run", "-c", "docs/spec.md", "-p", "x", "--dry-run"),
         lambda: api.plan_review(context="docs/spec.md", prompt="x")),
        (("verify",), api.verify),
        (("stats",), api.stats),
    ):  # fmt: skip
        r = cli(*command)
        assert (r.code, r.err.strip()) == (2, f"deepseek-review: error: {message}"), command
        with pytest.raises(ConfigError) as info:
            call()
        assert str(info.value) == message
