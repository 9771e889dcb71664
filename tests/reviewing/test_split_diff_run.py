"""``run --split`` of a change (``--diff``, ``--staged``) end to end, on a real git repository
whose change is larger than the model's window, against the simulator, which refuses any
request over its window: parts cut at file, then hunk boundaries, never inside a hunk."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from deepseek_review.records.split_record import split_schema_path
from deepseek_review.testing.simulator.answer import prompt_token_estimate
from deepseek_review.testing.simulator.server import Simulator
from tests.support.cli import CliResult, files_under, verify_tampered_split
from tests.support.git import commit, git

WINDOW = 4096
MAX_TOKENS = 512
#: Long words: the simulator counts fewer tokens than 4 bytes a token, so what it reports does
#: not make a re-run plan other parts (a re-plan after calibration reuses no finished part).
_WORDS = "extraordinary considerations notwithstanding, implementations accommodate"


def _lines(
    tag: str, n: int, changed: frozenset[int] | set[int] = frozenset(), mark: str = "old"
) -> str:
    return "".join(f"{_WORDS} {tag} {mark if i in changed else 'old'} line {i}\n" for i in range(n))


def _before() -> dict[str, str | bytes | None]:
    files: dict[str, str | bytes | None] = {
        f"src/pkg{p}/mod{m}.py": _lines(f"p{p}m{m}", 60) for p in range(3) for m in range(3)
    }
    files["tests/test_mod0.py"] = _lines("t0", 60)
    files["docs/big.md"] = _lines("big", 900)
    files["docs/huge.md"] = _lines("huge", 10)
    return files


def _after() -> dict[str, str | bytes | None]:
    """Nine small changes in three folders and a test, a file whose change has 90 hunks
    (larger than a part), and one hunk of ~7,000 tokens (larger than a part alone)."""
    files: dict[str, str | bytes | None] = {
        f"src/pkg{p}/mod{m}.py": _lines(f"p{p}m{m}", 60, {5, 30, 55}, "new")
        for p in range(3)
        for m in range(3)
    }
    files["tests/test_mod0.py"] = _lines("t0", 60, {10, 40}, "new")
    files["docs/big.md"] = _lines("big", 900, set(range(3, 900, 10)), "new")
    extra = "".join(f"{_WORDS} brand new line {i}\n" for i in range(400))
    files["docs/huge.md"] = _lines("huge", 10) + extra
    return files


@pytest.fixture
def change(repo: Path) -> tuple[str, str]:
    """The repository with a large change committed: (base, head)."""
    a = commit(repo, "base", _before())
    b = commit(repo, "change", _after())
    return a, b


@pytest.fixture
def sim(make_simulator: Callable[..., Simulator]) -> Simulator:
    """A server whose window is 4,096 tokens, refusing (400) any request over it."""
    return make_simulator(context_window=WINDOW, context_overflow="refuse", answer_words=40)


def _run(cli: Callable[..., CliResult], sim: Simulator, *how: str) -> CliResult:
    return cli(
        "run", "--split", *how, "-p", "Review the change.", "--endpoint", sim.base_url,
        "--max-tokens", str(MAX_TOKENS), "--context-window", str(WINDOW),
    )  # fmt: skip


def _diff(change: tuple[str, str]) -> tuple[str, str]:
    return ("--diff", f"{change[0]}..{change[1]}")


def _record(root: Path) -> dict[str, Any]:
    (path,) = sorted((root / "reviews").glob("*.split.json"))
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _sent_hunks(sim: Simulator) -> list[str]:
    """Every hunk of every request's change, as the model read it."""
    out = []
    for req in sim.chat_requests():
        text = json.loads(req.body)["messages"][-1]["content"]
        out += re.findall(r"^@@ [^\n]*\n(?:[ +\-\\][^\n]*\n)*", text, flags=re.MULTILINE)
    return out


def test_no_request_of_a_split_change_is_over_the_window(change, repo, cli, sim):
    r = _run(cli, sim, *_diff(change))
    assert r.code == 0, r.err
    for req in sim.chat_requests():  # by the server's own count, the answer's cap included
        assert req.status == 200
        body = json.loads(req.body)
        assert prompt_token_estimate(body["messages"]) + body["max_tokens"] <= WINDOW
    parts = _record(repo)["parts"]
    assert len(parts) >= 2
    assert len(sim.chat_requests()) >= len(parts) + 1  # and the synthesis


def test_a_file_whose_change_is_larger_than_a_part_is_cut_between_its_hunks(change, repo, cli, sim):
    assert _run(cli, sim, *_diff(change)).code == 0
    runs = [
        (p["number"], f["hunks"])
        for p in _record(repo)["parts"]
        for f in p["files"]
        if f["path"] == "docs/big.md"
    ]
    assert len({n for n, _ in runs}) >= 2
    assert runs[0][1][0] == 1 and runs[-1][1][1] == 90
    assert all(b[1][0] == a[1][1] + 1 for a, b in pairwise(runs))


def test_no_hunk_is_cut(change, repo, cli, sim):
    assert _run(cli, sim, *_diff(change)).code == 0
    whole = git(repo, "diff", "-U3", "--no-color", *change, "--", "docs/big.md")
    hunks = re.findall(r"^@@ [^\n]*\n(?:[ +\-\\][^\n]*\n)*", whole, flags=re.MULTILINE)
    sent = _sent_hunks(sim)
    assert len(hunks) == 90
    assert all(h in sent for h in hunks)  # each hunk as git made it, whole, in some part


def test_a_hunk_larger_than_a_part_is_listed_as_not_reviewed_with_why(change, repo, cli, sim):
    assert _run(cli, sim, *_diff(change)).code == 0
    (left,) = [n for n in _record(repo)["not_reviewed"] if n["path"] == "docs/huge.md"]
    assert left["hunks"] == [1, 1]
    assert "hunk 1 of 1" in left["reason"] and "over a part's room" in left["reason"]
    assert not any("brand new line 399" in json.loads(r.body)["messages"][-1]["content"]
                   for r in sim.chat_requests())  # fmt: skip


def test_each_part_of_a_change_says_which_part_it_is_and_what_the_others_cover(
    change, repo, cli, sim
):
    assert _run(cli, sim, *_diff(change)).code == 0
    n = len(_record(repo)["parts"])
    first = json.loads(sim.chat_requests()[0].body)["messages"][-1]["content"]
    assert f"This is part 1 of {n}" in first
    assert "docs/big.md (hunks 16-" in first or "- part 2: docs/big.md (hunks" in first
    assert "Of docs/big.md only hunks 1-" in first


def test_the_split_record_of_a_change_is_version_2_by_its_schema(change, repo, cli, sim):
    assert _run(cli, sim, *_diff(change)).code == 0
    record = _record(repo)
    assert record["schema"] == "deepseek_review_split_v2"
    schema = json.loads(split_schema_path(record["schema"]).read_text(encoding="utf-8"))
    jsonschema.validate(record, schema)
    assert record["change"]["base"] == change[0] and record["change"]["head"] == change[1]
    shown = [f["path"] for f in record["change"]["files"]]
    assert "docs/big.md" in shown and "tests/test_mod0.py" in shown


def test_verify_strict_passes_on_a_split_change(change, repo, cli, sim):
    assert _run(cli, sim, *_diff(change)).code == 0
    r = cli("verify", "--strict", "reviews")
    assert r.code == 0, r.err
    assert "the change" in r.err or "OK" in r.err
    assert ".split.json" in r.err


def _tamper_overlap_runs(d: dict[str, Any]) -> None:
    first, second = [f for p in d["parts"] for f in p["files"] if "hunks" in f][:2]
    second["hunks"][0] = first["hunks"][0]


def _tamper_shift_run(d: dict[str, Any]) -> None:
    ranged = next(f for p in d["parts"] for f in p["files"] if "hunks" in f)
    ranged["hunks"][1] += 1


def _tamper_hide_a_change(d: dict[str, Any]) -> None:
    d["not_reviewed"].append({"path": "src/pkg0/mod0.py", "reason": "binary"})


def _tamper_change_head(d: dict[str, Any]) -> None:
    d["change"]["head"] = d["change"]["base"]


def _tamper_forget_a_file_not_reviewed(d: dict[str, Any]) -> None:
    d["change"]["files"] = [f for f in d["change"]["files"] if f["path"] != "docs/huge.md"]
    d["not_reviewed"] = [n for n in d["not_reviewed"] if n["path"] != "docs/huge.md"]


@pytest.mark.parametrize(
    "tamper",
    [
        _tamper_overlap_runs,
        _tamper_shift_run,
        _tamper_hide_a_change,
        _tamper_change_head,
        _tamper_forget_a_file_not_reviewed,
    ],
)
def test_a_tampered_split_record_of_a_change_fails_verify(change, repo, cli, sim, tamper):
    assert _run(cli, sim, *_diff(change)).code == 0
    r, name = verify_tampered_split(cli, repo, tamper)
    assert r.code == 9
    assert "Traceback" not in r.err
    assert f"FAIL reviews/{name}: " in r.err


def test_a_part_whose_request_record_shows_other_hunks_fails_verify(change, repo, cli, sim):
    assert _run(cli, sim, *_diff(change)).code == 0
    receipt = next(
        p["receipts"][0] for p in _record(repo)["parts"] if any("hunks" in f for f in p["files"])
    )
    path = repo / receipt.replace(".receipt.json", ".request.json")
    data = json.loads(path.read_text())
    assert data["record"] == "deepseek_review_request_record_v3"
    data["git"]["diff"]["hunks"][0]["hunks"][1] -= 1
    path.write_text(json.dumps(data, indent=2))
    r = cli("verify", receipt)
    assert r.code == 9
    assert "not the change" in r.err


def test_dry_run_of_a_split_change_prints_the_plan_and_writes_nothing(change, repo, cli, sim):
    r = _run(cli, sim, *_diff(change), "--dry-run")
    assert r.code == 0, r.err
    assert re.search(r"^part +1/", r.out, flags=re.MULTILINE)
    assert "docs/big.md (change, hunks 1-" in r.out
    assert "docs/huge.md (change, hunk 1)" in r.out  # not reviewed, with why
    assert files_under(repo / "reviews") == []
    assert sim.chat_requests() == []


def test_the_plan_of_a_change_is_the_same_bytes_for_the_same_input(change, repo, cli, sim):
    first = _run(cli, sim, *_diff(change), "--dry-run", "--json").out
    assert first == _run(cli, sim, *_diff(change), "--dry-run", "--json").out
    assert json.loads(first)["parts"]


def test_a_staged_change_is_split_and_verifies(repo, cli, sim):
    commit(repo, "base", _before())
    for rel, text in _after().items():
        assert isinstance(text, str)
        (repo / rel).write_text(text, encoding="utf-8")
    git(repo, "add", "-A")
    r = _run(cli, sim, "--staged")
    assert r.code == 0, r.err
    assert all(req.status == 200 for req in sim.chat_requests())
    record = _record(repo)
    assert len(record["parts"]) >= 2
    assert record["change"]["head"] == git(repo, "write-tree").strip()
    assert cli("verify", "--strict", "reviews").code == 0


def test_a_small_change_with_split_makes_one_ordinary_review(repo, cli, sim):
    a = commit(repo, "base", {"src/x.py": _lines("x", 20)})
    b = commit(repo, "fix", {"src/x.py": _lines("x", 20, {3}, "new")})
    r = _run(cli, sim, "--diff", f"{a}..{b}")
    assert r.code == 0, r.err
    assert len(sim.chat_requests()) == 1
    assert list((repo / "reviews").glob("*.split.json")) == []


def test_files_of_a_revision_are_split_and_verify_from_its_commit(repo, cli, sim):
    a = commit(repo, "base", _before())
    commit(repo, "later", _after())  # the working tree is no longer the revision reviewed
    r = _run(cli, sim, "--rev", a, "-c", "src", "-c", "docs")
    assert r.code == 0, r.err
    assert all(req.status == 200 for req in sim.chat_requests())
    record = _record(repo)
    assert record["schema"] == "deepseek_review_split_v1"
    assert any("lines" in f for p in record["parts"] for f in p["files"])  # docs/big.md cut
    r = cli("verify", "--strict", "reviews")
    assert r.code == 0, r.err
    assert f"from commit {a[:7]}" in r.err


def test_show_on_the_split_record_of_a_change_tells_which_hunks_each_part_covered(
    change, repo, cli, sim
):
    assert _run(cli, sim, *_diff(change)).code == 0
    (path,) = sorted((repo / "reviews").glob("*.split.json"))
    r = cli("show", f"reviews/{path.name}")
    assert r.code == 0, r.err
    assert "  docs/big.md (change, hunks 1-" in r.out
    assert "  src/pkg0/mod0.py (change)" in r.out
    assert "  docs/huge.md (change, hunk 1): hunk 1 of 1 of its change alone" in r.out


def test_a_rerun_of_a_finished_split_change_sends_nothing(change, repo, cli, sim):
    assert _run(cli, sim, *_diff(change)).code == 0
    sim.reset()
    assert _run(cli, sim, *_diff(change)).code == 0
    assert sim.chat_requests() == []


def test_a_failed_part_of_a_change_is_sent_again_alone_on_a_rerun(change, repo, cli, sim):
    sim.script_faults([None, "500"])
    assert _run(cli, sim, *_diff(change), "--max-attempts", "1").code == 5
    assert [p["status"] for p in _record(repo)["parts"]][1] == "failed"
    sim.reset()
    r = _run(cli, sim, *_diff(change))
    assert r.code == 0, r.err
    sent = [json.loads(req.body)["messages"][-1]["content"] for req in sim.chat_requests()]
    assert "This is part 2 of " in sent[0]
    assert not any("This is part 1 of " in text for text in sent)
    assert cli("verify", "--strict", "reviews").code == 0


def test_a_file_whose_change_looks_like_a_secret_is_not_sent_to_a_remote_endpoint(
    change, repo, cli
):
    from tests.support.secrets import PRIVATE_KEY

    b = commit(repo, "leak", {"src/pkg1/leak.md": PRIVATE_KEY})
    r = cli("run", "--split", "--dry-run", "--json", "--diff", f"{change[0]}..{b}",
            "-p", "Review.", "--endpoint", "https://example.invalid",
            "--context-window", str(WINDOW), "--max-tokens", str(MAX_TOKENS))  # fmt: skip
    assert r.code == 0, r.err
    plan = r.json()
    left = {n["path"]: n["reason"] for n in plan["not_reviewed"]}
    assert left["src/pkg1/leak.md"].startswith("looks like it holds a secret (line ")
    assert all(f["path"] != "src/pkg1/leak.md" for p in plan["parts"] for f in p["files"])


# --------------------------------------------------------------------------- since the last review


def _parts_records(root: Path) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in sorted((root / "reviews").glob("*.split.json"))]


def test_since_last_review_splits_only_what_changed_since_the_first_review(change, repo, cli, sim):
    assert _run(cli, sim, *_diff(change)).code == 0  # the first review, itself split
    later = _after()
    later |= {f"src/pkg1/mod{m}.py": _lines(f"p1m{m}", 60, {20, 45}, "later") for m in range(3)}
    later["docs/big.md"] = _lines("big", 900, set(range(5, 900, 10)), "later")
    head = commit(repo, "more", later)
    sim.reset()
    r = _run(cli, sim, "--diff", f"{change[0]}..{head}", "--since-last-review")
    assert r.code == 0, r.err
    (second,) = [d for d in _parts_records(repo) if d["change"]["head"] == head]
    assert second["change"]["base"] == change[1]  # the first review's head
    shown = {f["path"] for f in second["change"]["files"]}
    assert shown == {"docs/big.md", "src/pkg1/mod0.py", "src/pkg1/mod1.py", "src/pkg1/mod2.py"}
    assert len(second["parts"]) >= 2
    assert all(req.status == 200 for req in sim.chat_requests())
    sent = "".join(json.loads(q.body)["messages"][-1]["content"] for q in sim.chat_requests())
    assert "src/pkg0/mod0.py" not in sent  # changed before the first review only
    v = cli("verify", "--strict", "reviews")
    assert v.code == 0, v.err


def test_a_split_review_with_a_failed_part_does_not_count_as_the_last_review(
    change, repo, cli, sim
):
    sim.script_faults([None, "500"])
    assert _run(cli, sim, *_diff(change), "--max-attempts", "1").code == 5
    head = commit(repo, "more", {"src/pkg1/mod0.py": _lines("p1m0", 60, {20}, "later")})
    r = _run(cli, sim, "--diff", f"{change[0]}..{head}", "--since-last-review", "--dry-run",
             "--json")  # fmt: skip
    assert r.code == 0, r.err
    shown = {f["path"] for p in r.json()["parts"] for f in p["files"]}
    assert "docs/big.md" in shown  # the whole range again: the first review is not complete


def test_a_whole_file_beside_a_change_larger_than_a_part_is_cut_into_line_ranges(repo, cli, sim):
    a = commit(repo, "base", {"src/x.py": _lines("x", 20), "docs/guide.md": _lines("guide", 300)})
    b = commit(repo, "fix", {"src/x.py": _lines("x", 20, {3}, "new")})
    r = _run(cli, sim, "--diff", f"{a}..{b}", "-c", "docs/guide.md")
    assert r.code == 0, r.err
    record = _record(repo)
    ranges = [f["lines"] for p in record["parts"] for f in p["files"] if "lines" in f]
    assert len(ranges) >= 2 and ranges[0][0] == 1 and ranges[-1][1] == 300
    assert all(q[0] == p[1] + 1 for p, q in pairwise(ranges))  # every line, once
    assert record["not_reviewed"] == []
    assert all(req.status == 200 for req in sim.chat_requests())
    v = cli("verify", "--strict", "reviews")
    assert v.code == 0, v.err
