"""Findings of a diff review: anchored inside a hunk of the diff (where GitHub accepts a
review comment), demoted with the reason elsewhere, never moved; the same after the working
tree moved on, since the change is read from the request record."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.findings import (
    CHANGED,
    FROM_BLOCK,
    LONG,
    PROSE_END,
    assert_valid_rdjson,
    assert_valid_sarif,
    at,
    block,
    chat_reply,
    diff_review,
    findings_of,
    two_commits,
)
from tests.support.git import commit


def test_a_finding_inside_a_hunk_is_anchored_with_the_new_sides_lines(repo, cli, make_stub):
    run = diff_review(cli, make_stub, two_commits(repo), at(2, 3))
    (f,) = findings_of(cli, run).json()["findings"]
    assert (f["anchor"], f["start_line"], f["end_line"]) == ("line", 2, 3)
    assert f.get("unanchored_reason") is None


def test_a_finding_outside_every_hunk_is_demoted_to_the_file_not_moved(repo, cli, make_stub):
    run = diff_review(cli, make_stub, two_commits(repo), at(15))
    (f,) = findings_of(cli, run).json()["findings"]
    assert (f["anchor"], f["start_line"]) == ("file", 15)
    assert f["unanchored_reason"] == (
        "lines 15-15 of src/pkg/long.py are not inside one hunk of the diff"
    )


def test_a_finding_spanning_two_hunks_is_demoted(repo, cli, make_stub):
    run = diff_review(cli, make_stub, two_commits(repo), at(4, 29))
    (f,) = findings_of(cli, run).json()["findings"]
    assert f["anchor"] == "file"


def test_a_finding_on_a_deleted_file_is_demoted_saying_so(repo, cli, make_stub):
    a = commit(repo, "long", {"src/pkg/long.py": LONG})
    b = commit(repo, "delete", {"src/pkg/long.py": None, "src/pkg/mean.py": CHANGED})
    run = diff_review(cli, make_stub, f"{a}..{b}", at(2))
    (f,) = findings_of(cli, run).json()["findings"]
    assert f["anchor"] == "file"
    assert f["unanchored_reason"] == (
        "src/pkg/long.py is deleted by the change: it has no new lines"
    )


def test_a_renamed_file_is_anchored_under_its_new_path(repo, cli, make_stub):
    a = commit(repo, "long", {"src/pkg/long.py": LONG})
    b = commit(repo, "move", {"src/pkg/long.py": None, "src/pkg/moved.py": CHANGED})
    new, old = at(2, path="src/pkg/moved.py"), at(2, path="src/pkg/long.py")
    run = diff_review(cli, make_stub, f"{a}..{b}", new, old)
    got = {f["path"]: f for f in findings_of(cli, run).json()["findings"]}
    assert got["src/pkg/moved.py"]["anchor"] == "line"
    assert got["src/pkg/long.py"]["anchor"] == "review"
    assert got["src/pkg/long.py"]["unanchored_reason"] == (
        "src/pkg/long.py is renamed by the change to src/pkg/moved.py: it has no new lines"
    )


def test_anchors_hold_after_the_working_tree_was_changed_and_committed_over(repo, cli, make_stub):
    run = diff_review(cli, make_stub, two_commits(repo), at(2), at(15), at(31))
    before = findings_of(cli, run).out
    commit(repo, "rewrite", {"src/pkg/long.py": "gone = True\n"})
    after = findings_of(cli, run).out
    assert after == before
    assert [f["anchor"] for f in json.loads(after)["findings"]] == ["line", "file", "line"]


def test_an_added_line_that_looks_like_a_diff_header_stays_a_line_of_its_hunk(repo, cli, make_stub):
    a = commit(repo, "long", {"src/pkg/long.py": LONG})
    b = commit(repo, "odd", {"src/pkg/long.py": LONG + "++ b/x\n@@ -1 +1 @@\nx32 = 32\n"})
    run = diff_review(cli, make_stub, f"{a}..{b}", at(31, 33))
    (f,) = findings_of(cli, run).json()["findings"]
    assert f["anchor"] == "line"


def test_sarif_of_a_diff_review_carries_the_anchored_lines(repo, cli, make_stub):
    run = diff_review(cli, make_stub, two_commits(repo), at(2, 3), at(15))
    log = json.loads(findings_of(cli, run, "sarif").out)
    assert_valid_sarif(log)
    regions = [
        r["locations"][0]["physicalLocation"].get("region") for r in log["runs"][0]["results"]
    ]
    assert {"startLine": 2, "endLine": 3} in [
        {k: v for k, v in (r or {}).items() if k in ("startLine", "endLine")} for r in regions
    ]
    assert None in regions  # the demoted one names the file only


def test_rdjson_of_a_diff_review_carries_the_anchored_lines(repo, cli, make_stub):
    run = diff_review(cli, make_stub, two_commits(repo), at(2, 3))
    doc = json.loads(findings_of(cli, run, "rdjson").out)
    assert_valid_rdjson(doc)
    (d,) = doc["diagnostics"]
    assert d["location"]["range"]["start"]["line"] == 2
    assert d["location"]["range"]["end"]["line"] == 3


def test_github_annotations_of_a_diff_review_carry_the_anchored_lines(repo, cli, make_stub):
    run = diff_review(cli, make_stub, two_commits(repo), at(2, 3), at(15))
    out = findings_of(cli, run, "github").out
    assert "::error file=src/pkg/long.py,line=2,endLine=3," in out
    assert "(unanchored: lines 15-15 of src/pkg/long.py are not inside one hunk" in out


def test_run_findings_writes_the_diff_anchors_and_verify_rederives_them(repo, cli, make_stub):
    stub = make_stub([chat_reply(PROSE_END + block(at(2), at(15)))])
    run = cli(
        "run", "--template", "diff-review", "--diff", two_commits(repo), "-p", "Review.",
        "--endpoint", stub.base_url, "--retry-wait", "0.01", "--json", *FROM_BLOCK,
    )  # fmt: skip
    assert run.code == 0, run.err
    answer = Path(run.json()["segments"][-1]["answer_path"])
    sidecar = json.loads(answer.with_suffix(".findings.json").read_text(encoding="utf-8"))
    assert [f["anchor"] for f in sidecar["findings"]] == ["line", "file"]
    checked = cli("verify", "--strict", str(answer.parent))
    assert checked.code == 0, checked.out + checked.err
