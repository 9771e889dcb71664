"""The records layer: chains found from receipts by `show`, `continue`, batch resume and
`verify` through one index, with forks, loops and doubly claimed answers refused alike."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from tests.support.builders import continuation_receipt, write_receipt
from tests.support.cli import review


def chain_of_three(cli: Any, make_simulator: Any) -> list[dict[str, Any]]:
    """A review cut off twice: primary and two continuations (the ``--json`` segments)."""
    sim = make_simulator(answer_words=60)
    segs: list[dict[str, Any]] = review(cli, sim, "--max-tokens", "20").json()["segments"]
    assert len(segs) == 3
    return segs


def add_continuation(repo: Path, name: str, previous: str, text: bytes = b"a fork\n") -> str:
    """A hand-made continuation receipt (and its answer) going on from ``previous``."""
    answer = f"reviews/{name}.md"
    (repo / answer).write_bytes(text)
    write_receipt(
        repo, f"reviews/{name}.receipt.json", continuation_receipt(answer, text, previous)
    )
    return answer


# --------------------------------------------------------------------------- show


def test_show_refuses_a_chain_that_forks_naming_the_segment_continued_twice(
    repo, make_simulator, cli
):
    segs = chain_of_three(cli, make_simulator)
    add_continuation(repo, "fork", segs[0]["answer_path"])
    r = cli("show", segs[0]["answer_path"])
    assert r.code == 3
    assert r.out == ""
    assert f"{segs[0]['answer_path']}: continued more than once (" in r.err
    assert "reviews/fork.receipt.json" in r.err


def test_show_refuses_a_chain_that_loops_naming_the_receipt(repo, cli):
    (repo / "reviews").mkdir()
    add_continuation(repo, "a", "reviews/b.md", b"first\n")
    add_continuation(repo, "b", "reviews/a.md", b"second\n")
    r = cli("show", "reviews/a.md")
    assert r.code == 3
    assert "reviews/a.receipt.json: the chain loops back on itself" in r.err


def test_show_refuses_a_previous_answer_claimed_by_two_receipts(repo, make_simulator, cli):
    segs = chain_of_three(cli, make_simulator)
    first = segs[0]["receipt_path"]
    twin = first.replace(".receipt.json", "-twin.receipt.json")
    shutil.copy(repo / first, repo / twin)
    r = cli("show", segs[2]["answer_path"])
    assert r.code == 3
    both = ", ".join(sorted([first, twin]))
    assert f"{segs[0]['answer_path']}: claimed by more than one receipt ({both})" in r.err


def test_show_of_a_continuation_whose_previous_answer_has_no_receipt_names_both(repo, cli):
    (repo / "reviews").mkdir()
    add_continuation(repo, "c", "reviews/gone.md")
    r = cli("show", "reviews/c.md")
    assert r.code == 3
    assert "reviews/c.receipt.json: continues reviews/gone.md, which has no receipt" in r.err


# --------------------------------------------------------------------------- verify


def test_verify_names_where_a_looping_chain_loops(cli, repo):
    (repo / "reviews").mkdir()
    add_continuation(repo, "a", "reviews/b.md", b"first\n")
    add_continuation(repo, "b", "reviews/a.md", b"second\n")
    r = cli("verify", "--json")
    assert r.code == 9
    details = {
        x["receipt_path"]: next(c["detail"] for c in x["checks"] if c["name"] == "chain")
        for x in r.json()["receipts"]
    }
    assert details == {
        "reviews/a.receipt.json": "the chain loops back on itself at reviews/b.md",
        "reviews/b.receipt.json": "the chain loops back on itself at reviews/b.md",
    }


def test_verify_lists_a_forked_chain_from_its_primary_and_passes_both_branches(
    repo, make_simulator, cli
):
    segs = chain_of_three(cli, make_simulator)
    add_continuation(repo, "fork", segs[0]["answer_path"])
    r = cli("verify", "--json")
    listed = [x["receipt_path"] for x in r.json()["receipts"]]
    assert listed[0] == segs[0]["receipt_path"]
    assert sorted(listed[1:]) == sorted(
        [segs[1]["receipt_path"], segs[2]["receipt_path"], "reviews/fork.receipt.json"]
    )
    chain = {x["receipt_path"]: x["checks"][2]["status"] for x in r.json()["receipts"]}
    assert set(chain.values()) == {"ok"}


# --------------------------------------------------------------------------- batch resume


def _manifest(repo: Path, continuations: int) -> None:
    (repo / "reviews.toml").write_text(
        "[defaults]\nmax_tokens = 20\n"
        f"max_continuations = {continuations}\n\n"
        '[[review]]\ntopic = "long"\nprompt = "Check long."\ncontext = "docs/spec.md"\n',
        encoding="utf-8",
    )


def _batch(cli: Any, sim: Any) -> Any:
    return cli("batch", "reviews.toml", "--endpoint", sim.base_url, "--retry-wait", "0.01",
               "--json")  # fmt: skip


def test_batch_does_not_resume_a_chain_that_forks(repo, make_simulator, cli):
    sim = make_simulator(answer_words=60)
    _manifest(repo, 0)
    (entry,) = _batch(cli, sim).json()["entries"]
    assert entry["status"] == "truncated"
    primary = entry["answer_paths"][0]
    topic_stem = Path(primary).name.split("_deepseek_")[0]
    add_continuation(repo, f"{topic_stem}_deepseek_x_continuation_1", primary)
    add_continuation(repo, f"{topic_stem}_deepseek_x_continuation_2", primary)
    _manifest(repo, 5)
    r = _batch(cli, sim)
    assert "its chain forks or loops; not resuming from it" in r.err
    (entry,) = r.json()["entries"]
    assert entry["answer_paths"][0] != primary  # reviewed again from scratch


def test_batch_resumes_a_cut_off_chain_and_lists_its_segments_in_order(repo, make_simulator, cli):
    sim = make_simulator(answer_words=60)
    _manifest(repo, 1)
    (entry,) = _batch(cli, sim).json()["entries"]
    assert entry["status"] == "truncated" and len(entry["answer_paths"]) == 2
    _manifest(repo, 5)
    (again,) = _batch(cli, sim).json()["entries"]
    assert again["answer_paths"][:2] == entry["answer_paths"]
    assert again["new_segments"] == len(again["answer_paths"]) - 2 >= 1
    record = json.loads(
        (repo / again["answer_paths"][2].replace(".md", ".request.json")).read_text()
    )
    assert record["continuation"]["previous_answer_path"] == entry["answer_paths"][1]


# --------------------------------------------------------------------------- one receipt parser


def test_show_refuses_a_receipt_with_a_duplicate_key_as_verify_does(repo, make_simulator, cli):
    segs = chain_of_three(cli, make_simulator)
    receipt = repo / segs[0]["receipt_path"]
    text = receipt.read_text(encoding="utf-8")
    receipt.write_text(text.replace('"model":', '"model": "other",\n  "model":', 1))
    shown = cli("show", segs[0]["answer_path"])
    assert shown.code == 3
    problem = "not valid JSON: duplicate key 'model'"
    assert f"{segs[0]['receipt_path']}: {problem}" in shown.err
    checked = cli("verify", "--json", segs[0]["receipt_path"]).json()["receipts"][0]
    assert checked["checks"][0]["detail"] == problem
