"""A first end-to-end check; the detailed specifications live in the other test files."""

from __future__ import annotations

import json


def test_run_writes_answer_receipt_and_record(repo, simulator, cli):
    r = cli(
        "run",
        "-c",
        "docs/spec.md",
        "-p",
        "Check the mean.",
        "--endpoint",
        simulator.base_url,
        "--json",
    )
    assert r.code == 0, r.err
    data = r.json()
    seg = data["segments"][0]
    assert (repo / seg["answer_path"]).is_file()
    receipt = json.loads((repo / seg["receipt_path"]).read_text())
    assert receipt["context_files"] == ["docs/spec.md"]
