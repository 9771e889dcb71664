"""`continue` extends an existing chain; `show` prints a chain after checking every segment."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from deepseek_review.testing.simulator import full_answer
from tests.support.cli import review

FIXTURE = Path(__file__).parents[1] / "fixtures" / "research-stack"
SEED_DIR = "shared-data/artifacts/deepseek_review"
SEED_PRIMARY = f"{SEED_DIR}/prime_gap_entropy_collapse_deepseek_deepseek-v3.2_20260512T033551Z.md"
SEED_CONT = (
    f"{SEED_DIR}/prime_gap_entropy_collapse_deepseek_deepseek-v4-flash_continuation"
    "_20260512T033849Z.md"
)


def read(root: Path, rel: str) -> str:
    return (root / rel).read_text(encoding="utf-8")


def answer_of(receipt: str) -> str:
    return receipt.removesuffix(".receipt.json") + ".md"


@pytest.fixture
def seed_root(tmp_path: Path) -> Path:
    """A writable copy of the seed repository's real receipts (its context files are absent)."""
    root = tmp_path / "seed"
    shutil.copytree(FIXTURE, root)
    return root


# --------------------------------------------------------------------------- continue


@pytest.mark.usefixtures("both_apis")  # continue sends the continuation over the API
def test_continue_extends_a_truncated_chain_from_its_last_segment(repo, make_simulator, cli):
    sim = make_simulator(answer_words=60)
    first = review(cli, sim, "--max-tokens", "20", "--max-continuations", "0")
    assert first.code == 4
    primary = first.json()["segments"][0]["answer_path"]
    r = cli("continue", primary, "--endpoint", sim.base_url, "--json")
    assert r.code == 0, r.err
    segs = r.json()["segments"]
    assert len(segs) == 3
    assert segs[0]["answer_path"] == primary
    text = "".join(read(repo, s["answer_path"]) for s in segs)
    primary_messages = json.loads(sim.chat_requests()[0].body)["messages"]
    assert text == full_answer(primary_messages, words=60)


@pytest.mark.usefixtures("both_apis")  # continue sends the continuation over the API
def test_continue_rebuilds_the_primary_messages_byte_for_byte(repo, make_simulator, cli):
    sim = make_simulator(answer_words=60)
    first = review(cli, sim, "--max-tokens", "20", "--max-continuations", "0")
    cli("continue", first.json()["segments"][0]["answer_path"], "--endpoint", sim.base_url)
    original, resumed = (json.loads(r.body) for r in sim.chat_requests()[:2])
    assert resumed["messages"][:-1] == original["messages"]
    assert resumed["max_tokens"] == original["max_tokens"] == 20


@pytest.mark.usefixtures("both_apis")  # continue sends the continuation over the API
def test_continue_from_a_middle_segment_starts_after_the_last_one(repo, make_simulator, cli):
    sim = make_simulator(answer_words=90)
    first = review(cli, sim, "--max-tokens", "20", "--max-continuations", "2")
    assert first.code == 4
    segs = first.json()["segments"]
    r = cli("continue", segs[0]["receipt_path"], "--endpoint", sim.base_url, "--json")
    assert r.code == 0, r.err
    resumed = r.json()["segments"]
    assert [s["answer_path"] for s in resumed[:3]] == [s["answer_path"] for s in segs]
    new_receipt = json.loads(read(repo, resumed[3]["receipt_path"]))
    assert new_receipt["previous_answer_path"] == segs[2]["answer_path"]


@pytest.mark.usefixtures("both_apis")  # continue sends the continuation over the API
def test_continue_refuses_when_a_context_file_changed_naming_it(repo, make_simulator, cli):
    sim = make_simulator(answer_words=60)
    first = review(cli, sim, "--max-tokens", "20", "--max-continuations", "0")
    (repo / "docs" / "spec.md").write_text("# Spec\n\nThe mean is 6.\n", encoding="utf-8")
    r = cli("continue", first.json()["segments"][0]["answer_path"], "--endpoint", sim.base_url)
    assert r.code == 3
    assert "docs/spec.md" in r.err
    assert "changed" in r.err
    assert len(sim.chat_requests()) == 1


@pytest.mark.usefixtures("both_apis")  # continue sends the continuation over the API
def test_continue_on_a_complete_chain_sends_nothing(repo, make_simulator, cli):
    sim = make_simulator(answer_words=30)
    first = review(cli, sim, "--max-tokens", "100")
    r = cli("continue", first.json()["segments"][0]["answer_path"], "--endpoint", sim.base_url)
    assert r.code == 0, r.err
    assert "nothing to continue" in r.err
    assert len(sim.chat_requests()) == 1


@pytest.mark.usefixtures("both_apis")  # continue sends the continuation over the API
def test_continue_on_seed_receipts_continues_from_the_answer_alone(seed_root, make_simulator, cli):
    sim = make_simulator(answer_words=30)
    r = cli(
        "continue",
        SEED_PRIMARY,
        "--repo-root",
        str(seed_root),
        "--endpoint",
        sim.base_url,
        "--json",
    )
    assert r.code == 0, r.err
    assert "no request record" in r.err
    segs = r.json()["segments"]
    assert [s["answer_path"] for s in segs[:2]] == [SEED_PRIMARY, SEED_CONT]
    new = json.loads(read(seed_root, segs[2]["receipt_path"]))
    assert new["previous_answer_path"] == SEED_CONT
    assert new["model"] == "deepseek-v4-flash"  # the last segment's model
    body = json.loads(sim.chat_requests()[0].body)
    so_far = read(seed_root, SEED_PRIMARY) + read(seed_root, SEED_CONT)
    assert body["messages"][-1] == {"role": "assistant", "content": so_far}
    assert Path(segs[2]["answer_path"]).name.startswith(
        "prime_gap_entropy_collapse_deepseek_deepseek-v4-flash_continuation_"
    )


def test_continue_refuses_a_path_that_is_not_a_receipt_or_answer(repo, cli):
    (repo / "notes.txt").write_text("x", encoding="utf-8")
    r = cli("continue", "notes.txt")
    assert r.code == 3
    assert "notes.txt" in r.err


@pytest.mark.usefixtures("both_apis")  # continue sends the continuation over the API
def test_continue_refuses_a_chain_whose_segment_was_altered(repo, make_simulator, cli):
    sim = make_simulator(answer_words=60)
    first = review(cli, sim, "--max-tokens", "20", "--max-continuations", "0")
    answer = first.json()["segments"][0]["answer_path"]
    (repo / answer).write_text(read(repo, answer) + "tampered", encoding="utf-8")
    r = cli("continue", answer, "--endpoint", sim.base_url)
    assert r.code == 9
    assert answer in r.err
    assert len(sim.chat_requests()) == 1


# --------------------------------------------------------------------------- show


def test_show_prints_the_stitched_answer_of_a_chain(repo, reviewed, cli):
    r = cli("show", answer_of(reviewed[1]))
    assert r.code == 0, r.err
    assert r.out == "".join(read(repo, answer_of(receipt)) for receipt in reviewed)


def test_show_refuses_a_tampered_segment_naming_it(repo, reviewed, cli):
    middle = answer_of(reviewed[1])
    data = (repo / middle).read_bytes()
    (repo / middle).write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    r = cli("show", answer_of(reviewed[0]))
    assert r.code == 9
    assert middle in r.err
    assert r.out == ""


def test_show_prints_the_seed_repository_chain(seed_root, cli):
    r = cli("show", SEED_CONT, "--repo-root", str(seed_root))
    assert r.code == 0, r.err
    assert r.out == read(seed_root, SEED_PRIMARY) + read(seed_root, SEED_CONT)


def test_show_refuses_a_chain_with_a_missing_previous_receipt(seed_root, cli):
    (seed_root / SEED_PRIMARY.replace(".md", ".receipt.json")).unlink()
    r = cli("show", SEED_CONT, "--repo-root", str(seed_root))
    assert r.code == 3
    assert "has no receipt" in r.err


def test_show_refuses_a_chain_whose_continuation_receipt_is_not_valid(repo, reviewed, cli):
    receipt = repo / reviewed[1]
    data = json.loads(receipt.read_text(encoding="utf-8"))
    data["usage"]["total_tokens"] = -1
    receipt.write_text(json.dumps(data), encoding="utf-8")
    r = cli("show", answer_of(reviewed[0]))
    assert r.code == 3
    assert reviewed[1] in r.err
    assert r.out == ""


def test_show_finds_its_chain_among_unrelated_receipts(repo, reviewed, cli):
    folder = repo / "reviews"
    sample = (folder / Path(reviewed[0]).name).read_text(encoding="utf-8")
    for i in range(50):  # unrelated receipts (and one that is not JSON) in the same folder
        other = sample.replace("reviews/", f"reviews/other{i}_")
        (folder / f"other{i}.receipt.json").write_text(other, encoding="utf-8")
    (folder / "broken.receipt.json").write_text("{not json", encoding="utf-8")
    r = cli("show", answer_of(reviewed[0]))
    assert r.code == 0, r.err
    assert r.out == "".join(read(repo, answer_of(receipt)) for receipt in reviewed)
