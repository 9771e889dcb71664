"""Batch with ``findings = true``: each entry's findings file, and its counts in the report."""

from __future__ import annotations

import json

from tests.test_batch import batch, manifest


def test_the_batch_report_carries_each_entrys_finding_counts(repo, cli, make_simulator):
    sim = make_simulator(answer_words=60)
    manifest(
        repo,
        ["a", "b", "plain"],
        defaults={"template": "code-review", "findings": True, "max_tokens": 40},
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
