"""The servers of a pool are the operator's: a manifest entry may name any of them as its
``endpoint`` without ``DEEPSEEK_REVIEW_ALLOWED_ENDPOINTS``; a server outside the pool still
needs it (the trust rule: a file under review names only what the operator chose)."""

from __future__ import annotations

from tests.support.batch import manifest

GPU1, GPU2, GPU3 = (f"http://gpu-{i}.example:8000" for i in (1, 2, 3))
POOL = ("--endpoint", GPU1, "--endpoint", GPU2)


def _dry_run(cli, *args: str):
    # vLLM: a dry run asks the server nothing (only Ollama's metadata is asked).
    return cli("batch", "reviews.toml", "--dry-run", "--json", "--server", "vllm", *args)


def test_an_entry_may_name_a_server_of_the_pool_given_by_flags(repo, cli):
    manifest(repo, ["own", "spread"], per_entry={"own": {"endpoint": GPU2}})
    r = _dry_run(cli, *POOL)
    assert r.code == 0, r.err
    entries = {e["topic"]: e for e in r.json()["entries"]}
    assert entries["own"]["endpoint"] == f"{GPU2}/v1/chat/completions"
    assert entries["own"]["expected_endpoint"] is None  # sent there, not spread


def test_an_entry_may_name_a_server_of_the_pool_the_environment_names(repo, cli, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_REVIEW_ENDPOINTS", f"{GPU1},{GPU2}")
    manifest(repo, ["own"], per_entry={"own": {"endpoint": GPU2}})
    r = _dry_run(cli)
    assert r.code == 0, r.err
    assert r.json()["entries"][0]["endpoint"] == f"{GPU2}/v1/chat/completions"


def test_an_entry_naming_a_server_outside_the_pool_is_refused(repo, cli):
    manifest(repo, ["own"], per_entry={"own": {"endpoint": GPU3}})
    r = _dry_run(cli, *POOL)
    assert r.code == 3
    assert "gpu-3.example:8000" in r.err
    assert "DEEPSEEK_REVIEW_ALLOWED_ENDPOINTS" in r.err


def test_a_server_outside_the_pool_is_named_once_the_operator_allows_it(repo, cli, monkeypatch):
    monkeypatch.setenv("DEEPSEEK_REVIEW_ALLOWED_ENDPOINTS", GPU3)
    manifest(repo, ["own"], per_entry={"own": {"endpoint": GPU3}})
    r = _dry_run(cli, *POOL)
    assert r.code == 0, r.err
