"""``run --split`` end to end: a repository larger than the model's window, reviewed in parts
against the simulator, which refuses any request over its window, then one synthesis."""

from __future__ import annotations

import json
from collections.abc import Callable
from itertools import pairwise
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from deepseek_review.testing.simulator.answer import prompt_token_estimate
from deepseek_review.testing.simulator.server import Simulator
from deepseek_review.util.resources import resource_dir
from tests.support.cli import CliResult, files_under, verify_tampered_split
from tests.support.findings import FROM_BLOCK
from tests.support.split import words, write_texts

WINDOW = 8192


def _build(root: Path) -> list[str]:
    """~40 text files in folders, tests beside what they test, one file of ~12,000 tokens:
    ~60,000 tokens in all. Returns their paths."""
    made = []
    for p in range(4):
        for m in range(5):
            made.append(f"src/pkg{p}/mod{m}.py")
            made.append(f"tests/test_mod{p}{m}.py" if m else f"tests/pkg{p}/test_mod{m}.py")
    made += [f"docs/chapter{i}.md" for i in range(6)]
    paths = sorted(set(made))[:39]
    write_texts(root, paths, 4600)
    (root / "docs" / "big.md").write_text(words(99, 48_000), encoding="utf-8")
    return sorted([*paths, "docs/big.md"])


@pytest.fixture
def big_repo(repo: Path) -> Path:
    for rel in ("docs/spec.md", "src/pkg/mean.py", "src/pkg/__init__.py"):
        (repo / rel).unlink()
    _build(repo)
    return repo


@pytest.fixture
def sim(make_simulator: Callable[..., Simulator]) -> Simulator:
    """A server whose window is 8,192 tokens, refusing (400) any request over it."""
    return make_simulator(context_window=WINDOW, context_overflow="refuse", answer_words=60)


def _run(
    cli: Callable[..., CliResult], sim: Simulator, *extra: str, max_tokens: int = 1024
) -> CliResult:
    return cli(
        "run",
        "--split",
        "-c",
        ".",
        "-p",
        "Review the text.",
        "--endpoint",
        sim.base_url,
        "--max-tokens",
        str(max_tokens),
        "--context-window",
        str(WINDOW),
        *extra,
    )


def _record(root: Path) -> dict[str, Any]:
    (path,) = sorted((root / "reviews").glob("*.split.json"))
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def _records(root: Path) -> list[Path]:
    return sorted((root / "reviews").glob("*.split.json"))


def _schema() -> dict[str, Any]:
    path = resource_dir("schemas") / "deepseek-review-split-v1.schema.json"
    data: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    return data


def test_no_request_is_over_the_window_and_there_are_at_least_five_parts(big_repo, cli, sim):
    r = _run(cli, sim)
    assert r.code == 0, r.err
    assert all(req.status == 200 for req in sim.chat_requests())
    for req in sim.chat_requests():  # by the server's own count, the answer's cap included
        body = json.loads(req.body)
        assert prompt_token_estimate(body["messages"]) + body["max_tokens"] <= WINDOW
    parts = _record(big_repo)["parts"]
    assert len(parts) >= 5
    assert len(sim.chat_requests()) == len(parts) + 1  # and the synthesis


def test_every_file_is_in_one_part_or_listed_as_not_reviewed_with_a_reason(big_repo, cli, sim):
    (big_repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    assert _run(cli, sim).code == 0
    record = _record(big_repo)
    files = [f for p in record["parts"] for f in p["files"]]
    whole = [f["path"] for f in files if "lines" not in f]
    ranged = {f["path"] for f in files if "lines" in f}
    left = {n["path"]: n["reason"] for n in record["not_reviewed"]}
    expected = sorted(
        p.relative_to(big_repo).as_posix()
        for p in big_repo.rglob("*")
        if p.is_file() and ".git" not in p.parts and "reviews" not in p.parts
    )
    assert sorted([*whole, *ranged, *left]) == expected
    assert len(whole) == len(set(whole)) and not ranged & set(whole)
    assert left == {"logo.png": "binary (NUL bytes)"} or "binary" in left["logo.png"]


def test_a_file_larger_than_a_part_is_cut_into_ranges_covering_it_once(big_repo, cli, sim):
    assert _run(cli, sim).code == 0
    spans = [
        (n, f["lines"])
        for p in _record(big_repo)["parts"]
        for f in p["files"]
        if f["path"] == "docs/big.md"
        for n in [p["number"]]
    ]
    assert len({n for n, _ in spans}) >= 2  # in several parts
    lines = [span for _, span in spans]
    total = (big_repo / "docs" / "big.md").read_text().count("\n")
    assert lines[0][0] == 1 and lines[-1][1] == total
    assert all(b[0] == a[1] + 1 for a, b in pairwise(lines))


def test_the_synthesis_context_is_exactly_the_parts_answers(big_repo, cli, sim):
    assert _run(cli, sim).code == 0
    record = _record(big_repo)
    answers = [a for p in record["parts"] for a in p["answers"]]
    assert record["synthesis"]["context_files"] == answers
    receipt = json.loads((big_repo / record["synthesis"]["receipts"][0]).read_text())
    assert receipt["context_files"] == answers
    assert "-synthesis_deepseek_" in receipt["answer_path"]


def test_each_part_says_which_part_it_is_and_what_the_others_cover(big_repo, cli, sim):
    assert _run(cli, sim).code == 0
    n = len(_record(big_repo)["parts"])
    first = json.loads(sim.chat_requests()[0].body)
    user = first["messages"][-1]["content"]
    assert f"This is part 1 of {n}" in user
    assert f"- part {n}: " in user


def test_each_part_is_named_for_the_run_topic(big_repo, cli, sim):
    assert _run(cli, sim, "--topic", "audit").code == 0
    record = _record(big_repo)
    n = len(record["parts"])
    assert [p["topic"] for p in record["parts"]] == [
        f"audit-part-{i:02d}-of-{n:02d}" for i in range(1, n + 1)
    ]
    assert record["synthesis"]["topic"] == "audit-synthesis"
    assert _records(big_repo)[0].name.startswith("audit_deepseek_")


def test_the_split_record_is_valid_by_its_published_schema(big_repo, cli, sim):
    assert _run(cli, sim).code == 0
    jsonschema.validate(_record(big_repo), _schema())


def test_verify_strict_passes_on_a_split_review(big_repo, cli, sim):
    assert _run(cli, sim).code == 0
    r = cli("verify", "--strict", "reviews")
    assert r.code == 0, r.err
    assert "OK   reviews/review_deepseek_" in r.err and ".split.json" in r.err


def _tamper_hash(d: dict[str, Any]) -> None:
    d["parts"][0]["files"][0]["sha256"] = "sha256:" + "0" * 64


def _tamper_drop_file(d: dict[str, Any]) -> None:
    d["parts"][1]["files"].pop()


def _tamper_move_file(d: dict[str, Any]) -> None:
    d["parts"][1]["files"].append(d["parts"][0]["files"][0])


def _tamper_synthesis_context(d: dict[str, Any]) -> None:
    d["synthesis"]["context_files"].reverse()


def _tamper_receipt(d: dict[str, Any]) -> None:
    d["parts"][2]["receipts"] = d["parts"][1]["receipts"]


def _tamper_hide_a_file(d: dict[str, Any]) -> None:
    d["not_reviewed"].append({"path": d["parts"][0]["files"][0]["path"], "reason": "binary"})


def _tamper_range(d: dict[str, Any]) -> None:
    ranged = next(f for p in d["parts"] for f in p["files"] if "lines" in f)
    ranged["lines"][0] += 1


def _tamper_drop_last_part(d: dict[str, Any]) -> None:
    d["parts"].pop()


@pytest.mark.parametrize(
    "tamper",
    [
        _tamper_drop_last_part,
        _tamper_range,
        _tamper_hash,
        _tamper_drop_file,
        _tamper_move_file,
        _tamper_synthesis_context,
        _tamper_receipt,
        _tamper_hide_a_file,
    ],
)
def test_a_tampered_split_record_fails_verify(big_repo, cli, sim, tamper):
    assert _run(cli, sim).code == 0
    r, name = verify_tampered_split(cli, big_repo, tamper)
    assert r.code == 9
    assert "Traceback" not in r.err
    assert f"FAIL reviews/{name}: " in r.err


@pytest.mark.parametrize("text", ["{not json", "[]", '{"schema": "deepseek_review_split_v1"}'])
def test_a_malformed_split_record_is_a_one_line_error(big_repo, cli, sim, text):
    assert _run(cli, sim).code == 0
    (path,) = _records(big_repo)
    path.write_text(text)
    r = cli("verify", f"reviews/{path.name}")
    assert r.code == 9
    fail, error = r.err.splitlines()
    assert fail.startswith(f"FAIL reviews/{path.name}: not ")
    assert error.startswith(f"deepseek-review: error: reviews/{path.name}: not ")


def test_dry_run_prints_the_plan_and_writes_and_sends_nothing(big_repo, cli, sim):
    r = _run(cli, sim, "--dry-run")
    assert r.code == 0, r.err
    assert "part  1/" in r.out and "synthesis" in r.out and "total" in r.out
    assert "docs/big.md#L1-L" in r.out  # larger than a part: cut into ranges
    assert files_under(big_repo / "reviews") == []
    assert sim.chat_requests() == []


def test_a_plan_over_max_total_tokens_is_refused_before_any_request(big_repo, cli, sim):
    r = _run(cli, sim, "--max-total-tokens", "20000")
    assert r.code == 2
    assert "--max-total-tokens 20000" in r.err and "nothing was sent" in r.err
    assert sim.chat_requests() == []
    assert files_under(big_repo / "reviews") == []


def test_the_plan_is_the_same_bytes_for_the_same_input(big_repo, cli, sim):
    first = _run(cli, sim, "--dry-run", "--json").out
    second = _run(cli, sim, "--dry-run", "--json").out
    assert first == second
    assert json.loads(first)["parts"]


def test_a_failed_part_is_reported_while_the_others_finish(big_repo, cli, sim):
    sim.script_faults([None, "500"])
    r = _run(cli, sim, "--max-attempts", "1")
    assert r.code == 5
    record = _record(big_repo)
    statuses = [p["status"] for p in record["parts"]]
    assert statuses[1] == "failed" and statuses.count("done") == len(statuses) - 1
    assert record["synthesis"]["status"] == "not run"
    assert "error" in record["parts"][1]


def test_a_rerun_sends_only_the_missing_part_and_the_synthesis(big_repo, cli, sim):
    sim.script_faults([None, "500"])
    assert _run(cli, sim, "--max-attempts", "1").code == 5
    n = len(_record(big_repo)["parts"])
    sim.reset()
    r = _run(cli, sim)
    assert r.code == 0, r.err
    sent = [json.loads(req.body)["messages"][-1]["content"] for req in sim.chat_requests()]
    assert len(sent) == 2
    assert f"This is part 2 of {n}" in sent[0]
    newest = json.loads((big_repo / r.out.splitlines()[-1]).read_text())
    assert [p["status"] for p in newest["parts"]] == ["done"] * n
    assert newest["synthesis"]["status"] == "done"
    assert cli("verify", "--strict", "reviews").code == 0


def test_a_rerun_of_a_finished_split_review_sends_nothing(big_repo, cli, sim):
    assert _run(cli, sim).code == 0
    sim.reset()
    assert _run(cli, sim).code == 0
    assert sim.chat_requests() == []
    assert len(_records(big_repo)) == 1


def test_without_a_known_window_split_is_refused_naming_context_window(big_repo, cli, sim):
    r = cli("run", "--split", "-c", ".", "-p", "Review.", "--endpoint", sim.base_url)
    assert r.code == 2
    assert "--context-window" in r.err
    assert sim.chat_requests() == []


def test_the_window_is_learned_from_an_ollama_server_that_says_it(big_repo, cli, make_simulator):
    sim = make_simulator(context_window=WINDOW, preloaded=True)
    endpoint = sim.base_url
    r = cli(
        "run",
        "--split",
        "--dry-run",
        "-c",
        ".",
        "-p",
        "R.",
        "--endpoint",
        endpoint,
        "--max-tokens",
        "1024",
    )
    assert r.code == 0, r.err
    assert f"context window of {WINDOW} tokens" in r.out


def test_when_the_whole_context_fits_split_makes_one_ordinary_review(repo, cli, sim):
    r = _run(cli, sim)
    assert r.code == 0, r.err
    assert len(sim.chat_requests()) == 1
    assert _records(repo) == []
    assert "_part-" not in r.out


def test_show_on_the_split_record_tells_what_each_part_covered(big_repo, cli, sim):
    (big_repo / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00")
    assert _run(cli, sim).code == 0
    (path,) = _records(big_repo)
    r = cli("show", f"reviews/{path.name}")
    assert r.code == 0, r.err
    assert "part 1 (review-part-01-of-" in r.out
    assert "  docs/big.md#L1-L" in r.out
    assert "  logo.png: binary" in r.out


def test_show_on_the_synthesis_adds_the_story_on_stderr(big_repo, cli, sim):
    assert _run(cli, sim).code == 0
    synthesis = _record(big_repo)["synthesis"]["answers"][0]
    r = cli("show", synthesis)
    assert r.code == 0, r.err
    assert r.out == (big_repo / synthesis).read_text(encoding="utf-8")
    assert "part 1 (review-part-01-of-" in r.err


def test_parts_sent_in_parallel_are_all_reviewed_and_verify(big_repo, cli, sim):
    r = _run(cli, sim, "--jobs", "3")
    assert r.code == 0, r.err
    record = _record(big_repo)
    assert [p["status"] for p in record["parts"]] == ["done"] * len(record["parts"])
    assert len(sim.chat_requests()) == len(record["parts"]) + 1
    assert cli("verify", "--strict", "reviews").code == 0


def test_split_set_in_the_config_file_splits_a_run(big_repo, cli, sim):
    (big_repo / "pyproject.toml").write_text(
        "[tool.deepseek-review]\nsplit = true\ncontext_window = 8192\nmax_tokens = 1024\n"
    )
    r = cli("run", "-c", "src", "-c", "tests", "-p", "Review.", "--endpoint", sim.base_url)
    assert r.code == 0, r.err
    assert len(_record(big_repo)["parts"]) >= 2


@pytest.fixture
def wordy(make_simulator: Callable[..., Simulator]) -> Simulator:
    """The same window, with answers so long that the parts' do not fit one synthesis."""
    return make_simulator(context_window=WINDOW, context_overflow="refuse", answer_words=400)


def test_answers_too_long_for_one_synthesis_are_merged_in_rounds_first(big_repo, cli, wordy):
    r = _run(cli, wordy)
    assert r.code == 0, r.err
    assert all(req.status == 200 for req in wordy.chat_requests())
    record = _record(big_repo)
    merges = record["merges"]
    assert merges and all(m["round"] == 1 and m["status"] == "done" for m in merges)
    parts_answers = [a for p in record["parts"] for a in p["answers"]]
    assert [a for m in merges for a in m["context_files"]] == parts_answers
    assert record["synthesis"]["context_files"] == [a for m in merges for a in m["answers"]]
    assert cli("verify", "--strict", "reviews").code == 0


def test_a_merge_whose_context_was_tampered_with_fails_verify(big_repo, cli, wordy):
    assert _run(cli, wordy).code == 0
    (path,) = _records(big_repo)
    data = json.loads(path.read_text())
    data["merges"][0]["context_files"].reverse()
    path.write_text(json.dumps(data))
    r = cli("verify", "reviews")
    assert r.code == 9
    assert "round 1 of merges" in r.err


def test_verify_of_a_split_record_that_is_not_there_exits_3(big_repo, cli):
    r = cli("verify", "reviews/none.split.json")
    assert r.code == 3
    assert "reviews/none.split.json: no such file or folder" in r.err


def _commit(root: Path) -> str:
    from tests.support.git import git

    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "reviews")
    return git(root, "rev-parse", "HEAD").strip()


def test_in_ci_committed_parts_nothing_vouches_for_are_sent_again(big_repo, cli, sim, monkeypatch):
    assert _run(cli, sim).code == 0
    n = len(_record(big_repo)["parts"])
    _commit(big_repo)  # as a pull request could bring them: no trusted revision has them
    sim.reset()
    monkeypatch.setenv("CI", "true")
    assert _run(cli, sim).code == 0
    assert len(sim.chat_requests()) == n + 1


def test_in_ci_parts_committed_in_the_trusted_revision_are_not_sent_again(
    big_repo, cli, sim, monkeypatch
):
    sim.script_faults([None, "500"])
    assert _run(cli, sim, "--max-attempts", "1").code == 5
    rev = _commit(big_repo)
    sim.reset()
    monkeypatch.setenv("CI", "true")
    r = _run(cli, sim, "--trusted-rev", rev)
    assert r.code == 0, r.err
    assert len(sim.chat_requests()) == 2  # the failed part and the synthesis


def test_with_findings_each_part_writes_its_findings_beside_its_chain(big_repo, cli, sim):
    r = _run(cli, sim, *FROM_BLOCK, "--template", "code-review")
    assert r.code == 0, r.err
    record = _record(big_repo)
    for p in record["parts"]:
        findings = big_repo / p["answers"][-1].replace(".md", ".findings.json")
        assert findings.is_file()
        assert findings.relative_to(big_repo).as_posix() in r.out
    assert cli("findings", "reviews").code == 0


def test_continued_answers_keep_every_request_within_the_window(big_repo, cli, make_simulator):
    for i, path in enumerate(sorted(big_repo.glob("*/**/*.*"))):
        if path.name != "big.md" and ".git" not in path.parts:
            # Three-letter words: the simulator counts a token every 4 bytes, as we estimate.
            path.write_text(" ".join(["abc", "def", "ghi", f"{i % 900 + 100}"] * 280) + "\n")
    sim = make_simulator(context_window=WINDOW, context_overflow="refuse", answer_words=2000)
    r = _run(cli, sim, max_tokens=600)  # answers cut off: continuations where they fit
    assert r.code in (0, 4), r.err
    requests = sim.chat_requests()
    continued = [q for q in requests if json.loads(q.body)["messages"][-1]["role"] == "assistant"]
    assert continued  # some parts had room to continue
    assert all(q.status == 200 for q in requests)
    for q in requests:
        body = json.loads(q.body)
        assert prompt_token_estimate(body["messages"]) + body["max_tokens"] <= WINDOW
    statuses = {p["status"] for p in _record(big_repo)["parts"]}
    assert statuses <= {"done", "truncated"}


def test_signed_parts_and_synthesis_verify_with_the_allowed_signers(
    big_repo, cli, sim, tmp_path, monkeypatch
):
    from tests.support.sshkeys import allowed_signers, make_key

    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)
    key = make_key(tmp_path / "keys", "ed25519", "alice@example.com")
    assert _run(cli, sim, "--sign", "--signing-key", str(key.private)).code == 0
    record = _record(big_repo)
    receipts = [r for p in record["parts"] for r in p["receipts"]]
    receipts += record["synthesis"]["receipts"]
    for rel in receipts:
        assert (big_repo / rel.replace(".receipt.json", ".intoto.json.sig")).is_file()
    signers = allowed_signers(tmp_path / "allowed", key.allowed_line())
    r = cli("verify", "--strict", "--require-signature", "--allowed-signers", str(signers))
    assert r.code == 0, r.err


def test_a_file_that_looks_like_a_secret_is_not_sent_to_a_remote_endpoint(big_repo, cli):
    from tests.support.secrets import PRIVATE_KEY

    (big_repo / "docs" / "leak.md").write_text(PRIVATE_KEY)
    r = cli("run", "--split", "--dry-run", "--json", "-c", ".", "-p", "Review.",
            "--endpoint", "https://example.invalid", "--context-window", str(WINDOW),
            "--max-tokens", "1024")  # fmt: skip
    assert r.code == 0, r.err
    plan = r.json()
    left = {n["path"]: n["reason"] for n in plan["not_reviewed"]}
    assert left["docs/leak.md"].startswith("looks like it holds a secret (line 2: Private Key)")
    assert all(f["path"] != "docs/leak.md" for p in plan["parts"] for f in p["files"])


def test_parts_are_planned_with_what_the_server_counted_before(
    big_repo, cli, sim, tmp_path, monkeypatch
):
    from deepseek_review.chat.tokens import Sample
    from deepseek_review.reviewing.calibration import remember

    plain = _run(cli, sim, "--dry-run", "--json").json()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for _ in range(20):  # a server that counted a token every 2.5 bytes
        remember(sim.chat_url, "deepseek-v4-flash", Sample(25_000, 2, 10_000))
    r = _run(cli, sim, "--dry-run")
    assert "tokens         bytes/2.250 (calibrated from the server" in r.out
    calibrated = _run(cli, sim, "--dry-run", "--json").json()
    assert len(calibrated["parts"]) > len(plain["parts"])


def test_the_parts_prompts_carry_at_most_1_15_times_the_tokens_of_the_files_themselves(repo):
    """Issue 32's overhead: the template, each part's note (which part, what the others cover),
    the files' headings and fences, over 60 folders, with every part's prompt as sent."""
    from deepseek_review import api
    from deepseek_review.chat.tokens import estimate_tokens

    paths = [f"lib{a}/mod{b}/f{c}.py" for a in range(10) for b in range(6) for c in range(8)]
    write_texts(repo, paths, 2500)
    from deepseek_review.reviewing.split_plan import SplitReview

    folders = sorted({p.split("/")[0] for p in paths})
    review = api.plan_run(
        repo_root=repo,
        context=folders,
        prompt="Review.",
        context_window=WINDOW,
        max_tokens=1024,
        split=True,
    )
    assert isinstance(review, SplitReview)
    sent = sum(p.plan.token_estimate for p in review.parts)
    files = sum(estimate_tokens([(repo / p).read_text()]) for p in paths)
    assert len(review.parts) >= 50 and review.split.not_reviewed == ()
    assert sent <= 1.15 * files
