"""``batch`` over several servers: ``--endpoint`` given more than once (a pool)."""

from __future__ import annotations

import re

from tests.support.batch import manifest, statuses
from tests.support.pool import endpoint_flags, served_by, start_servers


def pool_batch(cli, servers, *args: str):
    return cli(
        "batch", "reviews.toml", *endpoint_flags(servers), "--retry-wait", "0.01", "--json", *args
    )  # fmt: skip


def test_a_batch_over_two_servers_has_both_serve_and_each_receipt_names_its_server(
    repo, make_simulator, cli
):
    servers = start_servers(make_simulator, 2, answer_words=20, latency=0.05, capacity=2)
    manifest(repo, [f"r{i:02d}" for i in range(8)])
    r = pool_batch(cli, servers, "--jobs", "4")
    assert r.code == 0, r.err
    assert "8 to run, 0 to continue, 0 already done; 4 at a time over 2 servers" in r.err
    served = served_by(repo, r.json())
    assert set(served) == {s.chat_url for s in servers}
    for s in servers:
        assert served[s.chat_url] == len(s.chat_requests())
    assert cli("verify", "reviews").code == 0


def test_a_rerun_over_another_pool_sends_nothing(repo, make_simulator, cli):
    manifest(repo, [f"r{i}" for i in range(6)])
    first = start_servers(make_simulator, 2, answer_words=20, capacity=1)
    assert pool_batch(cli, first, "--jobs", "2").code == 0
    others = start_servers(make_simulator, 3, answer_words=20)
    r = pool_batch(cli, others, "--jobs", "3")
    assert r.code == 0, r.err
    assert set(statuses(r).values()) == {"skipped"}
    assert [len(s.chat_requests()) for s in others] == [0, 0, 0]


def test_a_server_that_dies_mid_batch_is_drained_and_every_entry_finishes_on_the_other(
    repo, make_simulator, cli
):
    manifest(repo, [f"r{i}" for i in range(10)])
    dying, living = start_servers(make_simulator, 2, answer_words=20, latency=0.05, capacity=2)
    dying.config.die_after = 2
    r = pool_batch(cli, [dying, living], "--jobs", "4", "--max-attempts", "2")
    assert r.code == 0, r.err
    assert set(statuses(r).values()) == {"ok"}
    drained = [line for line in r.err.splitlines() if "stopped answering" in line]
    assert len(drained) == 1 and dying.base_url in drained[0]
    served = served_by(repo, r.json())
    assert set(served) == {dying.chat_url, living.chat_url}
    assert served[dying.chat_url] <= 2 and sum(served.values()) == 10


def test_a_server_that_answers_503_gets_fewer_requests_at_once(repo, make_simulator, cli):
    manifest(repo, [f"r{i}" for i in range(8)])
    servers = start_servers(make_simulator, 2, answer_words=20, latency=0.05, capacity=1)
    for s in servers:
        s.config.max_queue = 0  # beyond one at a time: Ollama's 503
    r = pool_batch(cli, servers, "--jobs", "6", "--jobs-per-endpoint", "3")
    assert r.code == 0, r.err
    assert set(statuses(r).values()) == {"ok"}
    assert "busy (429/503): 2 request(s) at once there now" in r.err


def test_the_environment_names_the_servers_of_a_pool(repo, make_simulator, cli, monkeypatch):
    manifest(repo, [f"r{i}" for i in range(6)])
    servers = start_servers(make_simulator, 2, answer_words=20, latency=0.05, capacity=1)
    monkeypatch.setenv("DEEPSEEK_REVIEW_ENDPOINTS", ", ".join(s.base_url for s in servers))
    r = cli("batch", "reviews.toml", "--jobs", "2", "--json")
    assert r.code == 0, r.err
    assert set(served_by(repo, r.json())) == {s.chat_url for s in servers}


def test_a_manifest_cannot_name_a_pool(repo, make_simulator, cli):
    servers = start_servers(make_simulator, 2)
    manifest(repo, ["r0"], per_entry={"r0": {"endpoint": [s.base_url for s in servers]}})
    r = cli("batch", "reviews.toml", "--json")
    assert r.code == 3
    assert "endpoint" in r.err
    assert [len(s.chat_requests()) for s in servers] == [0, 0]


def test_continue_given_two_endpoints_is_refused_naming_the_flag(repo, make_simulator, cli):
    a, b = start_servers(make_simulator, 2)
    r = cli("continue", "reviews/x.receipt.json", *endpoint_flags([a, b]))
    assert r.code == 2
    assert "--endpoint was given more than once" in r.err


def test_the_library_takes_the_servers_of_a_pool_as_a_list(repo, make_simulator):
    from deepseek_review import run_batch

    manifest(repo, [f"r{i}" for i in range(6)])
    servers = start_servers(make_simulator, 2, answer_words=20, latency=0.05, capacity=1)
    report = run_batch("reviews.toml", endpoint=[s.base_url for s in servers], jobs=2)
    assert report.complete
    assert all(s.chat_requests() for s in servers)


def test_entries_that_share_their_context_run_back_to_back(repo, simulator, cli):
    code = {"context": "src/pkg/mean.py"}
    manifest(repo, ["s1", "c1", "s2", "c2", "s3"], per_entry={"c1": code, "c2": code})
    r = cli("batch", "reviews.toml", "--endpoint", simulator.base_url, "--jobs", "1")
    assert r.code == 0, r.err
    asked = [re.search(r"Check (\w+)\.", q.body.decode()) for q in simulator.chat_requests()]
    assert [m.group(1) for m in asked if m] == ["s1", "s2", "s3", "c1", "c2"]
