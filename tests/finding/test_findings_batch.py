"""Batch with ``findings = true``: each entry's findings file, and its counts in the report."""

from __future__ import annotations

import json

from tests.support.batch import batch, manifest


def test_the_batch_report_carries_each_entrys_finding_counts(repo, cli, make_simulator):
    sim = make_simulator(answer_words=60)
    manifest(
        repo,
        ["a", "b", "plain"],
        defaults={
            "template": "code-review",
            "findings": True,
            "findings_from": "block",
            "max_tokens": 40,
        },
        per_entry={"plain": {"template": "default"}},
    )
    got = batch(cli, sim)
    assert got.code == 0, got.err
    entries = {e["topic"]: e for e in got.json()["entries"]}
    for topic in ("a", "b"):
        counts = entries[topic]["findings"]
        assert sorted(counts) == ["critical", "major", "minor", "nit"]
        assert sum(counts.values()) == 1  # the simulator's one finding
        last = entries[topic]["answer_paths"][-1]
        written = json.loads((repo / last.replace(".md", ".findings.json")).read_text("utf-8"))
        assert written["counts"] == counts
        assert len(entries[topic]["answer_paths"]) > 1  # the block came after a seam
    assert entries["plain"]["findings"] is None
    assert "plain" in got.err and "no findings" in got.err


def test_a_batch_extracts_each_entrys_findings_and_reports_their_counts(repo, cli, make_simulator):
    sim = make_simulator(answer_words=60)
    manifest(repo, ["a", "b"], defaults={"template": "code-review", "findings": True})
    got = batch(cli, sim)
    assert got.code == 0, got.err
    for entry in got.json()["entries"]:
        assert sum(entry["findings"].values()) == 1
    extracted = sorted((repo / "reviews").glob("*-findings_*.findings.json"))
    assert [json.loads(p.read_text("utf-8"))["findings_from"] for p in extracted] == [
        "structured",
        "structured",
    ]
    assert cli("verify", "--strict").code == 0


def test_a_batch_without_findings_reports_none_and_never_loads_the_findings_modules(
    repo, make_simulator
):
    import subprocess
    import sys

    sim = make_simulator(answer_words=20)
    manifest(repo, ["a", "b"])
    code = (
        "import sys; from deepseek_review.batch.run import BatchOptions, run_batch; "
        "r = run_batch(BatchOptions(manifest='reviews.toml', "
        f"overrides={{'endpoint': {sim.base_url!r}}})); "
        "print([e.status for e in r.entries], [e.findings for e in r.entries], "
        "'deepseek_review.finding' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=repo, capture_output=True, text=True, check=True
    )
    assert out.stdout.strip() == "['ok', 'ok'] [None, None] False"


def test_a_batch_counts_the_extraction_and_self_check_in_its_tokens(repo, cli, make_simulator):
    sim = make_simulator(answer_words=60)
    manifest(repo, ["a", "b"], defaults={"template": "code-review", "findings": True,
                                         "self_check": True})  # fmt: skip
    got = batch(cli, sim, "--jobs", "1")
    assert got.code == 0, got.err
    used: dict[str, int] = {}
    for path in (repo / "reviews").glob("*.receipt.json"):
        topic = path.name.split("_", 1)[0]  # a, a-findings, a-self-check, ...
        tokens = json.loads(path.read_text("utf-8"))["usage"]["total_tokens"]
        used[topic] = used.get(topic, 0) + tokens
    assert sorted(used) == ["a", "a-findings", "a-self-check", "b", "b-findings", "b-self-check"]
    assert got.json()["total_tokens"] == sum(used.values())
    for entry in got.json()["entries"]:
        mine = sum(n for topic, n in used.items() if topic.split("-")[0] == entry["topic"])
        assert entry["usage"]["total_tokens"] == mine
