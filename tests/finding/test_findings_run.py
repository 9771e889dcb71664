"""``run --findings``: the findings file beside the segment that ends the chain, listed in
its request record before the receipt is written, and re-derived by ``verify``."""

from __future__ import annotations

import json

from tests.support.builders import sha
from tests.support.findings import (
    FROM_BLOCK,
    PROSE_END,
    assert_valid_findings_json,
    block,
    item,
    last_segment,
    review_answering,
)


def test_findings_are_written_beside_the_last_segment_and_listed_in_its_record(
    repo, cli, make_stub
):
    text = PROSE_END + block(item())
    cut = text.index('"severity"')
    run = review_answering(cli, make_stub, [text[:cut], text[cut:]], *FROM_BLOCK)
    assert run.code == 0, run.err
    first, last = run.json()["segments"]
    assert first["findings_path"] is None
    path = last["findings_path"]
    assert path == last["answer_path"][: -len(".md")] + ".findings.json"
    data = (repo / path).read_bytes()
    record = json.loads((repo / last["record_path"]).read_text(encoding="utf-8"))
    assert record["findings"] == {"path": path, "sha256": sha(data)}
    assert "findings" not in json.loads((repo / first["record_path"]).read_text("utf-8"))
    found = json.loads(data)
    assert_valid_findings_json(found)
    assert (found["counts"]["major"], found["findings"][0]["anchor"]) == (1, "line")


def test_an_answer_without_a_block_is_a_warning_and_writes_no_file(repo, cli, make_stub):
    run = review_answering(cli, make_stub, [PROSE_END + "No block.\n"], *FROM_BLOCK)
    assert run.code == 0
    assert 'no findings: the answer has no ```json block holding "findings"' in run.err
    assert last_segment(run)["findings_path"] is None
    assert not list((repo / "reviews").glob("*.findings.json"))


def test_without_the_option_no_findings_file_is_written(repo, cli, make_stub):
    run = review_answering(cli, make_stub, [PROSE_END + block(item())])
    assert last_segment(run)["findings_path"] is None
    assert not list((repo / "reviews").glob("*.findings.json"))


def test_verify_re_derives_the_findings_file(repo, cli, make_stub):
    review_answering(cli, make_stub, [PROSE_END + block(item())], *FROM_BLOCK)
    got = cli("verify", "--json")
    assert got.code == 0, got.err
    (receipt,) = got.json()["receipts"]
    answer = next(c for c in receipt["checks"] if c["name"] == "answer")
    assert answer["detail"] == (
        "hash matches; findings file (version 2) re-derived from the answer: identical"
    )


def test_verify_fails_a_findings_file_changed_after_the_review(repo, cli, make_stub):
    run = review_answering(cli, make_stub, [PROSE_END + block(item())], *FROM_BLOCK)
    path = repo / last_segment(run)["findings_path"]
    path.write_bytes(path.read_bytes().replace(b'"major"', b'"nit"'))
    got = cli("verify")
    assert got.code == 9
    assert (
        f"{last_segment(run)['findings_path']} does not match the record's sha256 "
        "(changed after the review)"
    ) in got.err


def test_verify_fails_a_forged_findings_file_even_with_its_hash_in_the_record(repo, cli, make_stub):
    run = review_answering(cli, make_stub, [PROSE_END + block(item())], *FROM_BLOCK)
    seg = last_segment(run)
    path = repo / seg["findings_path"]
    forged = path.read_bytes().replace(b'"major"', b'"nit"')
    path.write_bytes(forged)
    record_path = repo / seg["record_path"]
    record = json.loads(record_path.read_text(encoding="utf-8"))
    record["findings"]["sha256"] = sha(forged)
    record_path.write_text(json.dumps(record, indent=2, ensure_ascii=False) + "\n", "utf-8")
    got = cli("verify")
    assert got.code == 9
    assert f"{seg['findings_path']} is not what the answer gives" in got.err


def test_verify_fails_a_missing_findings_file(repo, cli, make_stub):
    run = review_answering(cli, make_stub, [PROSE_END + block(item())], *FROM_BLOCK)
    (repo / last_segment(run)["findings_path"]).unlink()
    got = cli("verify")
    assert got.code == 9
    assert f"{last_segment(run)['findings_path']}: findings file is missing" in got.err


def test_verify_warns_when_the_reviewed_file_moved_on(repo, cli, make_stub):
    review_answering(cli, make_stub, [PROSE_END + block(item())], *FROM_BLOCK)
    (repo / "src" / "pkg" / "mean.py").write_text("# changed\n", encoding="utf-8")
    got = cli("verify")
    assert got.code == 0
    assert "not re-derived: src/pkg/mean.py is no longer as reviewed" in got.err
