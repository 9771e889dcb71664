"""``batch --dry-run`` over several servers: the whole pool (every server and how many
requests it gets at once) and how the entries are expected to spread (affinity groups)."""

from __future__ import annotations

from tests.support.batch import manifest
from tests.support.pool import endpoint_flags, start_servers

CODE = {"context": "src/pkg/mean.py"}


def _dry_run(cli, servers, *args: str):
    return cli("batch", "reviews.toml", *endpoint_flags(servers), "--dry-run", *args)


def test_a_dry_run_lists_every_server_of_the_pool_with_its_concurrency(repo, make_simulator, cli):
    servers = start_servers(make_simulator, 3)
    manifest(repo, ["a", "b"])
    r = _dry_run(cli, servers, "--jobs", "6")
    assert r.code == 0, r.err
    assert "pool: 3 servers, 6 requests at a time" in r.out
    for s in servers:
        assert f"  {s.chat_url}: 2 at once, " in r.out
    assert [len(s.chat_requests()) for s in servers] == [0, 0, 0]


def test_a_dry_run_shows_each_affinity_group_and_the_server_it_is_expected_on(
    repo, make_simulator, cli
):
    a, b = start_servers(make_simulator, 2)
    manifest(repo, ["s1", "c1", "s2", "c2", "s3"], per_entry={"c1": CODE, "c2": CODE})
    r = _dry_run(cli, [a, b], "--jobs", "6", "--jobs-per-endpoint", "3", "--json")
    assert r.code == 0, r.err
    pool = r.json()["pool"]
    assert [(s["endpoint"], s["concurrency"], s["expected_entries"]) for s in pool["servers"]] == [
        (a.chat_url, 3, ["s1", "s2", "s3"]),
        (b.chat_url, 3, ["c1", "c2"]),
    ]
    groups = [(g["group"], g["entries"], g["expected_endpoints"]) for g in pool["groups"]]
    assert groups == [(1, ["s1", "s2", "s3"], [a.chat_url]), (2, ["c1", "c2"], [b.chat_url])]
    entries = {e["topic"]: (e["group"], e["expected_endpoint"]) for e in r.json()["entries"]}
    assert entries["c2"] == (2, b.chat_url)


def test_a_group_larger_than_its_servers_slots_is_expected_on_the_next_server(
    repo, make_simulator, cli
):
    a, b = start_servers(make_simulator, 2)
    manifest(repo, ["s1", "s2", "s3"])
    r = _dry_run(cli, [a, b], "--jobs", "4")
    assert r.code == 0, r.err
    assert "group 1: 3 entries (s1, s2, s3), deepseek-v4-flash, 1 file: expected on " in r.out
    assert f"expected on {a.chat_url}, {b.chat_url}\n" in r.out


def test_an_entry_naming_its_own_endpoint_is_left_out_of_the_pool(repo, make_simulator, cli):
    a, b = start_servers(make_simulator, 2)
    manifest(repo, ["own", "pooled"], per_entry={"own": {"endpoint": "http://127.0.0.1:9"}})
    r = _dry_run(cli, [a, b], "--json")
    assert r.code == 0, r.err
    entries = {e["topic"]: e for e in r.json()["entries"]}
    assert entries["own"]["expected_endpoint"] is None
    assert entries["own"]["endpoint"] == "http://127.0.0.1:9/v1/chat/completions"
    assert entries["pooled"]["expected_endpoint"] in {a.chat_url, b.chat_url}
    assert [g["entries"] for g in r.json()["pool"]["groups"]] == [["pooled"]]


def test_a_dry_run_with_one_server_has_no_pool(repo, simulator, cli):
    manifest(repo, ["a"])
    r = cli("batch", "reviews.toml", "--endpoint", simulator.base_url, "--dry-run", "--json")
    assert r.code == 0, r.err
    assert r.json()["pool"] is None
    assert r.json()["entries"][0]["expected_endpoint"] is None
