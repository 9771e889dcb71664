"""``run --split`` over several servers, and ``run`` refusing several without ``--split``."""

from __future__ import annotations

import json

from tests.support.pool import endpoint_flags, split_files, start_servers

WINDOW = 4096


def _split(cli, servers, *extra: str):
    return cli(
        "run", "--split", "-c", "docs", "-p", "Review the text.", *endpoint_flags(servers),
        "--max-tokens", "512", "--context-window", str(WINDOW), "--jobs", "4", *extra,
    )  # fmt: skip


def test_the_parts_of_a_split_review_are_spread_over_the_servers(repo, make_simulator, cli):
    split_files(repo, 6)
    servers = start_servers(make_simulator, 2, answer_words=40, latency=0.05)
    r = _split(cli, servers)
    assert r.code == 0, r.err
    receipts = [json.loads(p.read_text()) for p in (repo / "reviews").glob("*.receipt.json")]
    assert len(receipts) == sum(len(s.chat_requests()) for s in servers)
    assert {rc["endpoint"] for rc in receipts} == {s.chat_url for s in servers}


def test_a_split_review_finishes_on_one_server_when_the_other_dies(repo, make_simulator, cli):
    split_files(repo, 6)
    dying, living = start_servers(make_simulator, 2, answer_words=40, latency=0.05)
    dying.config.die_after = 1
    r = _split(cli, [dying, living], "--max-attempts", "2")
    assert r.code == 0, r.err
    assert "stopped answering" in r.err
    assert len(list((repo / "reviews").glob("*.split.json"))) == 1


def test_run_given_two_endpoints_without_split_is_refused_naming_the_flag(
    repo, make_simulator, cli
):
    servers = start_servers(make_simulator, 2)
    r = cli("run", "-c", "docs/spec.md", "-p", "x", *endpoint_flags(servers))
    assert r.code == 2
    assert r.err.count("\n") == 1
    assert "--endpoint was given more than once; it takes one value unless --split" in r.err
    assert [len(s.chat_requests()) for s in servers] == [0, 0]


def test_run_refuses_the_servers_of_the_environment_naming_the_variable(
    repo, make_simulator, cli, monkeypatch
):
    servers = start_servers(make_simulator, 2)
    monkeypatch.setenv("DEEPSEEK_REVIEW_ENDPOINTS", " ".join(s.base_url for s in servers))
    r = cli("run", "-c", "docs/spec.md", "-p", "x")
    assert r.code == 2
    assert "DEEPSEEK_REVIEW_ENDPOINTS names 2 servers; run takes one unless --split" in r.err
