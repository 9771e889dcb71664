"""``deepseek-review findings``: from stored reviews to exports a CI can act on."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.support.findings import (
    PROSE_END,
    answer_of,
    assert_valid_rdjsonl,
    assert_valid_sarif,
    block,
    item,
    review_answering,
)


def test_a_block_cut_by_a_continuation_seam_exports_whole(repo, cli, make_stub):
    text = PROSE_END + block(item())
    cut = text.index('"severity"')
    run = review_answering(cli, make_stub, [text[:cut], text[cut:]])
    assert run.code == 0, run.err
    first = run.json()["segments"][0]["answer_path"]
    got = cli("findings", first, "--format", "json")
    assert got.code == 0, got.err
    assert [f["severity"] for f in got.json()["findings"]] == ["major"]
    assert got.json()["findings"][0]["anchor"] == "line"


def test_sarif_written_with_output_validates(repo, cli, make_stub):
    run = review_answering(cli, make_stub, [PROSE_END + block(item())])
    got = cli("findings", answer_of(run), "--format", "sarif", "-o", "review.sarif")
    assert (got.code, got.out) == (0, "")
    assert_valid_sarif(json.loads((repo / "review.sarif").read_text(encoding="utf-8")))


def test_rdjsonl_to_stdout_validates(repo, cli, make_stub):
    run = review_answering(cli, make_stub, [PROSE_END + block(item(suggestion="    pass\n"))])
    got = cli("findings", answer_of(run), "--format", "rdjsonl")
    assert got.code == 0
    assert_valid_rdjsonl(got.out)


@pytest.mark.parametrize(
    ("fail_on", "code", "listed"),
    [("critical", 0, ""), ("major", 13, "1 major"), ("minor", 13, "1 major, 1 minor"),
     ("nit", 13, "1 major, 1 minor")],
)  # fmt: skip
def test_fail_on_gates_at_each_level(repo, cli, make_stub, fail_on, code, listed):
    findings = block(item(), item(severity="minor", start_line=1, end_line=1))
    run = review_answering(cli, make_stub, [PROSE_END + findings])
    got = cli("findings", answer_of(run), "--format", "github", "--fail-on", fail_on)
    assert got.code == code
    assert got.out.startswith("::error file=src/pkg/mean.py,line=2,endLine=2,")
    if code:
        assert f"error: findings at or above {fail_on}: {listed}\n" in got.err
    else:
        assert "error" not in got.err


def test_fail_on_counts_only_the_severities_at_or_above(repo, cli, make_stub):
    findings = block(item(severity="minor"), item(severity="nit", start_line=1, end_line=1))
    run = review_answering(cli, make_stub, [PROSE_END + findings])
    got = cli("findings", answer_of(run), "--fail-on", "minor")
    assert got.code == 13
    assert "error: findings at or above minor: 1 minor" in got.err


def test_an_unknown_fail_on_severity_is_a_config_error(repo, cli, make_stub):
    run = review_answering(cli, make_stub, [PROSE_END + block(item())])
    got = cli("findings", answer_of(run), "--fail-on", "blocker")
    assert got.code == 2
    assert "findings severity 'blocker': choose from critical, major, minor, nit" in got.err


def test_a_review_without_a_valid_block_is_an_input_error_naming_it(repo, cli, make_stub):
    bad = PROSE_END + block(item(severity="blocker"))
    run = review_answering(cli, make_stub, [bad])
    got = cli("findings", answer_of(run))
    assert got.code == 3
    assert f"error: {answer_of(run)}: no findings: the block at line" in got.err
    assert "'blocker' is not one of" in got.err
    assert got.out == ""


def test_a_folder_merges_chains_deduplicated_by_fingerprint(repo, cli, make_stub):
    first = review_answering(cli, make_stub, [PROSE_END + block(item())])
    # The same finding again (other words), and a new one.
    again = item(title="Empty input divides by zero", message="Guard it.")
    second = review_answering(
        cli, make_stub, [PROSE_END + block(again, item(start_line=1, end_line=1))]
    )
    bad = review_answering(cli, make_stub, [PROSE_END])
    assert {first.code, second.code, bad.code} == {0}
    got = cli("findings", "reviews", "--format", "json")
    assert got.code == 0
    assert [f["start_line"] for f in got.json()["findings"]] == [2, 1]
    assert f"{answer_of(bad)}: no findings: the answer has no ```json block" in got.err
    assert got.json()["problems"][0]["path"] == answer_of(bad)


def test_a_file_changed_since_the_review_demotes_its_findings(repo, cli, make_stub):
    run = review_answering(cli, make_stub, [PROSE_END + block(item())])
    (repo / "src" / "pkg" / "mean.py").write_text("# moved on\n", encoding="utf-8")
    got = cli("findings", answer_of(run))
    (f,) = got.json()["findings"]
    assert (f["anchor"], f["unanchored_reason"]) == (
        "file",
        "src/pkg/mean.py is no longer as reviewed (neither the working tree nor HEAD holds "
        "the recorded sha256)",
    )


def test_the_reviewed_version_is_read_from_head_when_the_tree_moved_on(repo, cli, make_stub):
    from tests.support.git import git

    git(repo, "add", "-A")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    run = review_answering(cli, make_stub, [PROSE_END + block(item())])
    (repo / "src" / "pkg" / "mean.py").write_text("# moved on\n", encoding="utf-8")
    got = cli("findings", answer_of(run))
    assert got.json()["findings"][0]["anchor"] == "line"


def test_simulator_reviews_with_the_code_review_template_export_sarif(repo, cli, make_simulator):
    sim = make_simulator(answer_words=80)
    args = ["run", "--template", "code-review", "-c", "src", "-p", "Review.", "--endpoint"]
    run = cli(*args, sim.base_url, "--max-tokens", "40", "--retry-wait", "0.01")
    assert run.code == 0, run.err
    got = cli("findings", "reviews", "--format", "sarif")
    assert got.code == 0, got.err
    log = json.loads(got.out)
    assert_valid_sarif(log)
    (result,) = log["runs"][0]["results"]
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": 1, "endLine": 1}
    assert len(log["runs"][0]["properties"]["receipts"]) > 1  # a chain of several segments


def test_the_library_call_returns_the_export_and_leaves_the_gate_to_the_caller(
    repo, cli, make_stub
):
    from deepseek_review import findings
    from deepseek_review.errors import FindingsGate

    run = review_answering(cli, make_stub, [PROSE_END + block(item())])
    result = findings([answer_of(run)], format="rdjsonl", fail_on="major", repo_root=repo)
    assert_valid_rdjsonl(result.text)
    assert [a.finding.severity for a in result.gate] == ["major"]
    with pytest.raises(FindingsGate) as exc:
        result.raise_for_gate()
    assert (exc.value.exit_code, exc.value.message) == (13, "findings at or above major: 1 major")


def test_a_folder_of_many_chains_glances_at_each_receipt_once(repo, cli, make_stub, monkeypatch):
    """One chain index for the whole folder: finding every chain stays linear."""
    import deepseek_review.records.chain as chain_module

    for _ in range(6):
        review_answering(cli, make_stub, [PROSE_END + block(item())])
    glanced: list[str] = []
    real = chain_module._glance

    def counting(root: Any, rel: str) -> Any:
        glanced.append(rel)
        return real(root, rel)

    monkeypatch.setattr(chain_module, "_glance", counting)
    got = cli("findings", "reviews")
    assert got.code == 0
    assert len(got.json()["receipts"]) == 6
    assert len(glanced) == len(set(glanced)) <= 6  # (was 6 per chain)


# ------------------------------------------------------ no reviews, reviews that ask for none


@pytest.mark.parametrize("command", ["verify", "stats", "findings"])
def test_no_reviews_folder_yet_is_no_reviews_and_exits_0_for_every_reader(repo, cli, command):
    r = cli(command)
    assert r.code == 0, r.err
    assert "no such file" not in r.err


def test_findings_with_no_reviews_yet_says_zero_reviews(repo, cli):
    r = cli("findings", "--fail-on", "major")
    assert r.code == 0, r.err
    assert "0 finding(s) from 0 review(s)" in r.err


def test_reviews_made_with_the_default_template_are_summed_up_in_one_line(repo, cli, simulator):
    for topic in ("one", "two", "three"):
        r = cli("run", "-c", "docs/spec.md", "-p", "x", "--topic", topic,
                "--endpoint", simulator.base_url)  # fmt: skip
        assert r.code == 0, r.err
    r = cli("findings")
    assert r.code == 0, r.err
    assert "no findings: the answer has no" not in r.err
    assert (
        "deepseek-review: 3 reviews made with the default template, which asks for no "
        "findings: not read"
    ) in r.err
