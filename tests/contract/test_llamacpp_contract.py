"""The contract with a real OpenAI-compatible server: llama-cpp-python's, serving a tiny model
that answers one fixed 27-token sentence (``tinymodel.ANSWER``) at any temperature.

Every review runs the real command line (``python -m deepseek_review run ... --server
llama.cpp``) against the real server; each chain is run once per module and several tests read
it. Caps 1..30 go around the answer's length: 1, 3, 9 and 27 divide it, so the chain's last
request continues an answer that is already complete.

What the real server does that our simulator did not (the contract these tests pin):
- every stream opens with a role-only chunk, ``{"delta": {"role": "assistant"}}``;
- an answer that is already complete (a prefill of the whole sentence) streams as that
  role-only chunk, then ``{"delta": {}, "finish_reason": "stop"}``, then ``[DONE]``: no content
  key at all;
- an answer cut exactly at the cap ends with ``finish_reason: "length"`` even though the next
  token would have ended it, so an exact multiple of the cap always takes one more, empty,
  continuation;
- a prefill (trailing assistant message) is continued with no body field at all;
- it answers any model name with the model it serves, and echoes the name asked for;
- a prompt over its context: without streaming a 400 in OpenAI's words ("maximum context
  length"); streaming, a 200 whose stream closes with no data (the reason only in its log);
- a stream never carries usage: ``stream_options: {"include_usage": true}`` (which we send) is
  ignored, so a streamed segment's usage is unreported (estimated); without streaming, usage is
  exact (``prompt_tokens`` counts BOS and the prefill).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.contract import tinymodel
from tests.contract.conftest import MODEL, LlamaServer, quiet_environ

# One worker runs the suite under xdist, so the llama.cpp server (a session fixture) starts once.
pytestmark = [pytest.mark.contract, pytest.mark.xdist_group("llama-server")]

TOKENS = tinymodel.answer_texts()
CAPS = range(1, 31)
MODES = ("stream", "no-stream")
SPEC = "# Spec\n\nThe mean of 2, 4 and 9 is 5.\n"


@dataclass(frozen=True)
class Result:
    code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@dataclass(frozen=True)
class Chain:
    """One ``run`` and what it wrote."""

    repo: Path
    run: Result
    expected_code: int = 0

    @property
    def segments(self) -> list[dict[str, Any]]:
        code = self.run.code
        assert code == self.expected_code, f"run exited {code}: {self.run.err[-2000:]}"
        segs: list[dict[str, Any]] = self.run.json()["segments"]
        return segs

    def texts(self) -> list[str]:
        return [(self.repo / s["answer_path"]).read_text(encoding="utf-8") for s in self.segments]

    def records(self) -> list[dict[str, Any]]:
        return [json.loads((self.repo / s["record_path"]).read_text()) for s in self.segments]


def expected_texts(cap: int) -> list[str]:
    """Each segment's answer for ``cap``: ``cap`` tokens at a time; when the cap divides the
    answer, the last full segment is cut at "length" and one empty continuation ends it."""
    texts = ["".join(TOKENS[i : i + cap]) for i in range(0, len(TOKENS), cap)]
    return [*texts, ""] if len(TOKENS) % cap == 0 else texts


def cli(repo: Path, *args: str) -> Result:
    """The real command line, in its own process, in ``repo``."""
    proc = subprocess.run(
        [sys.executable, "-m", "deepseek_review", *args],
        cwd=repo,
        env=quiet_environ(repo.parent / "home"),
        capture_output=True,
        text=True,
        timeout=100,
    )
    return Result(proc.returncode, proc.stdout, proc.stderr)


def make_repo(folder: Path) -> Path:
    repo = folder / "repo"
    (repo / "docs").mkdir(parents=True)
    (repo / "docs" / "spec.md").write_text(SPEC, encoding="utf-8")
    (repo.parent / "home").mkdir()
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True)
    return repo


def review_args(server: LlamaServer, *extra: str) -> list[str]:
    """``run`` against the server; ``extra`` may set its own ``--max-continuations`` (each
    option is given once: the tool refuses a repeated one)."""
    own_cap = "--max-continuations" in extra
    return [
        "run",
        "-c",
        "docs/spec.md",
        "-p",
        "Check the mean.",
        "--endpoint",
        server.base_url,
        "--server",
        "llama.cpp",
        "--model",
        MODEL,
        *([] if own_cap else ["--max-continuations", "40"]),
        "--retry-wait",
        "0.01",
        "--json",
        *extra,
    ]


@pytest.fixture(scope="module")
def chain(
    llama_server: LlamaServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Callable[..., Chain]]:
    """``chain(mode, cap)``: the review run once with that cap, in a repository of its own."""
    made: dict[tuple[str, ...], Chain] = {}

    def get(mode: str, cap: int, *extra: str, code: int = 0) -> Chain:
        key = (mode, str(cap), *extra)
        if key not in made:
            repo = make_repo(tmp_path_factory.mktemp(f"chain-{mode}-{cap}"))
            args = review_args(llama_server, f"--{mode}", "--max-tokens", str(cap), *extra)
            made[key] = Chain(repo, cli(repo, *args), code)
        return made[key]

    yield get


# --------------------------------------------------------------------------- one shot


@pytest.mark.parametrize("temperature", ["0", "1.5", "2"])
@pytest.mark.parametrize("mode", MODES)
def test_an_uncut_answer_is_the_fixed_sentence_at_any_temperature(chain, mode, temperature):
    run = chain(mode, 100, "--temperature", temperature)
    assert run.texts() == [tinymodel.ANSWER]
    assert run.run.json()["finish_reason"] == "stop"


# --------------------------------------------------------------------------- caps 1..30


@pytest.mark.parametrize("cap", CAPS)
@pytest.mark.parametrize("mode", MODES)
def test_a_cut_answer_continues_and_stitches_exactly_to_the_one_shot_answer(chain, mode, cap):
    assert "".join(chain(mode, cap).texts()) == tinymodel.ANSWER


@pytest.mark.parametrize("cap", CAPS)
@pytest.mark.parametrize("mode", MODES)
def test_each_segment_holds_the_next_cap_tokens(chain, mode, cap):
    assert chain(mode, cap).texts() == expected_texts(cap)


@pytest.mark.parametrize("cap", CAPS)
@pytest.mark.parametrize("mode", MODES)
def test_every_segment_but_the_last_ends_at_length(chain, mode, cap):
    reasons = [s["finish_reason"] for s in chain(mode, cap).segments]
    assert reasons == ["length"] * (len(expected_texts(cap)) - 1) + ["stop"]


@pytest.mark.parametrize("cap", CAPS)
@pytest.mark.parametrize("mode", MODES)
def test_verify_strict_passes_on_every_chain(chain, mode, cap):
    run = chain(mode, cap)
    receipts = [s["receipt_path"] for s in run.segments]
    checked = cli(run.repo, "verify", "--strict", "--json", *receipts)
    assert checked.code == 0, checked.out + checked.err


@pytest.mark.parametrize("cap", CAPS)
def test_no_stream_usage_is_recorded_as_the_server_reported_it(chain, cap):
    """Completion tokens are the segment's tokens; each continuation's prompt is the primary's
    plus the prefill (the answer so far), token for token."""
    run = chain("no-stream", cap)
    usages = [r["response"]["usage"] for r in run.records()]
    assert all(r["response"]["usage_reported"] for r in run.records())
    sizes = [len(t) for t in _token_runs(cap)]
    assert [u["completion_tokens"] for u in usages] == sizes
    first = usages[0]["prompt_tokens"]
    assert [u["prompt_tokens"] for u in usages] == [
        first + sum(sizes[:i]) for i in range(len(sizes))
    ]
    assert all(u["total_tokens"] == u["prompt_tokens"] + u["completion_tokens"] for u in usages)


@pytest.mark.parametrize("cap", CAPS)
def test_stream_usage_is_recorded_as_unreported(chain, cap):
    """The server's streams carry no usage: nothing is made up in the records, and the run
    says its token counts are estimates."""
    run = chain("stream", cap)
    responses = [r["response"] for r in run.records()]
    assert [(r["usage"], r["usage_reported"]) for r in responses] == [(None, False)] * len(
        expected_texts(cap)
    )
    assert run.run.json()["usage"] is None
    assert run.run.json()["estimated_tokens"] > 0


def _token_runs(cap: int) -> list[list[str]]:
    runs = [TOKENS[i : i + cap] for i in range(0, len(TOKENS), cap)]
    return [*runs, []] if len(TOKENS) % cap == 0 else runs


@pytest.mark.parametrize("mode", MODES)
def test_verify_strict_passes_on_a_chain_over_a_committed_file_after_it_changed(
    llama_server, tmp_path_factory, mode
):
    """Every segment's record pins the commit the file was read from, so the whole chain
    verifies from git once the work tree has moved on."""
    repo = make_repo(tmp_path_factory.mktemp(f"pinned-{mode}"))
    commit = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org", "commit", "-qam"]
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True)
    subprocess.run([*commit, "spec"], cwd=repo, check=True)
    r = cli(repo, *review_args(llama_server, f"--{mode}", "--max-tokens", "10"))
    assert r.code == 0, r.err
    (repo / "docs" / "spec.md").write_text(SPEC + "\nThe median is 4.\n", encoding="utf-8")
    subprocess.run([*commit, "median"], cwd=repo, check=True)
    receipts = [s["receipt_path"] for s in r.json()["segments"]]
    assert len(receipts) == 3
    checked = cli(repo, "verify", "--strict", "--json", *receipts)
    assert checked.code == 0, checked.out + checked.err


# --------------------------------------------------------------------------- refusals


def test_a_prompt_over_the_context_is_refused_in_the_servers_words_without_streaming(
    llama_server, tmp_path_factory
):
    repo = make_repo(tmp_path_factory.mktemp("overflow"))
    (repo / "docs" / "big.md").write_text("word " * 1200, encoding="utf-8")  # ~6,000 tokens
    r = cli(repo, *review_args(llama_server, "--no-stream", "-c", "docs/big.md"))
    assert r.code == 5, r.err
    assert "maximum context length is 4096 tokens" in r.err
    assert not (repo / "reviews").exists()


# --------------------------------------------------------------------------- continue


def cut_at_ten(chain: Callable[..., Chain], mode: str) -> Chain:
    """The review cut at 10 tokens, not continued: truncated, exit 4."""
    return chain(mode, 10, "--max-continuations", "0", code=4)


@pytest.fixture(scope="module")
def resumed(chain: Callable[..., Chain]) -> Callable[[str], Chain]:
    """``resumed(mode)``: a run cut at 10 tokens with no continuations (exit 4), then
    ``continue`` on its answer: the chain as ``continue`` left it."""
    made: dict[str, Chain] = {}

    def get(mode: str) -> Chain:
        if mode not in made:
            cut = cut_at_ten(chain, mode)
            first = cut.segments[0]["answer_path"]
            args = ["continue", first, "--server", "llama.cpp", f"--{mode}", "--json"]
            made[mode] = Chain(cut.repo, cli(cut.repo, *args, "--retry-wait", "0.01"))
        return made[mode]

    return get


@pytest.mark.parametrize("mode", MODES)
def test_continue_finishes_a_chain_the_run_left_truncated(resumed, mode):
    """``continue --json`` lists the whole chain, the run's cut segment first."""
    assert resumed(mode).texts() == expected_texts(10)


@pytest.mark.parametrize("mode", MODES)
def test_verify_strict_passes_on_a_chain_finished_by_continue(resumed, mode):
    chain = resumed(mode)
    receipts = sorted(str(p.relative_to(chain.repo)) for p in chain.repo.rglob("*.receipt.json"))
    assert len(receipts) == len(expected_texts(10))
    checked = cli(chain.repo, "verify", "--strict", "--json", *receipts)
    assert checked.code == 0, checked.out + checked.err


# --------------------------------------------------------------------------- the wire itself


def test_the_model_answers_the_sentence_in_process_at_any_temperature(tiny_model):
    """The model itself, without the server: if this fails, the generator is wrong."""
    from llama_cpp import Llama

    llm = Llama(model_path=str(tiny_model), n_ctx=512, n_threads=1, verbose=False)
    messages: list[Any] = [{"role": "user", "content": "Review ünïcode ✓\nand\ttabs."}]

    def answer(temperature: float) -> Any:
        reply: Any = llm.create_chat_completion(messages=messages, temperature=temperature)
        return reply["choices"][0]["message"]["content"]

    answers = {answer(t) for t in (0.0, 0.7, 1.5, 2.0)}
    assert answers == {tinymodel.ANSWER}


def _stream(server: LlamaServer, messages: list[dict[str, str]], **body: Any) -> list[Any]:
    """The data lines of one streamed answer, JSON-decoded (``[DONE]`` kept as the string)."""
    payload = {"model": MODEL, "messages": messages, "stream": True, **body}
    lines: list[Any] = []
    with httpx.stream("POST", server.chat_url, json=payload, timeout=30) as r:
        assert r.status_code == 200
        for line in r.iter_lines():
            if line.startswith("data: "):
                data = line[len("data: ") :]
                lines.append(data if data == "[DONE]" else json.loads(data))
    return lines


def _deltas(lines: list[Any]) -> list[tuple[dict[str, Any], str | None]]:
    return [(c["choices"][0]["delta"], c["choices"][0]["finish_reason"]) for c in lines[:-1]]


USER = [{"role": "user", "content": "Review this."}]


def test_server_opens_every_stream_with_a_role_only_chunk(llama_server):
    lines = _stream(llama_server, USER, max_tokens=3)
    assert _deltas(lines)[0] == ({"role": "assistant"}, None)


def test_server_answers_a_complete_prefill_with_role_only_then_an_empty_stop(llama_server):
    prefill = [*USER, {"role": "assistant", "content": tinymodel.ANSWER}]
    lines = _stream(llama_server, prefill, max_tokens=5)
    assert _deltas(lines) == [({"role": "assistant"}, None), ({}, "stop")]
    assert lines[-1] == "[DONE]"


def test_server_continues_a_prefill_with_the_rest_of_the_answer(llama_server):
    prefill = [*USER, {"role": "assistant", "content": "".join(TOKENS[:5])}]
    lines = _stream(llama_server, prefill, max_tokens=100)
    content = "".join(d.get("content") or "" for d, _ in _deltas(lines))
    assert content == "".join(TOKENS[5:])


def test_server_answers_any_model_name_and_echoes_it(llama_server):
    payload = {"model": "no-such-model", "messages": USER, "max_tokens": 2}
    reply = httpx.post(llama_server.chat_url, json=payload, timeout=30)
    assert (reply.status_code, reply.json()["model"]) == (200, "no-such-model")


def test_server_sends_no_usage_in_a_stream_even_when_asked(llama_server):
    lines = _stream(llama_server, USER, max_tokens=3, stream_options={"include_usage": True})
    assert [c.get("usage") for c in lines[:-1]] == [None] * (len(lines) - 1)


# --------------------------------------------------------------------------- findings


@pytest.fixture(scope="module")
def extracted(
    llama_server: LlamaServer, tmp_path_factory: pytest.TempPathFactory
) -> Callable[[str], Chain]:
    """``extracted(mode)``: a review with ``--findings-from structured``; the extraction's
    output is gibberish but the server's grammar (built from the schema sent) makes it
    valid JSON."""
    made: dict[str, Chain] = {}

    def get(mode: str) -> Chain:
        if mode not in made:
            repo = make_repo(tmp_path_factory.mktemp(f"extracted-{mode}"))
            extra = (f"--{mode}", "--max-tokens", "1000", "--findings", "--findings-from")
            made[mode] = Chain(repo, cli(repo, *review_args(llama_server, *extra, "structured")))
        return made[mode]

    return get


@pytest.mark.parametrize("mode", MODES)
def test_a_structured_extraction_answers_json_valid_against_the_schema_sent(extracted, mode):
    from jsonschema import Draft202012Validator

    from deepseek_review.finding.extract import wire_schema

    run = extracted(mode)
    assert run.run.code == 0, run.run.err[-2000:]
    (extraction,) = run.run.json()["extraction"]
    record = json.loads((run.repo / extraction["record_path"]).read_text())
    assert record["body"]["response_format"] == {"type": "json_object", "schema": wire_schema()}
    reply = json.loads((run.repo / extraction["answer_path"]).read_text(encoding="utf-8"))
    assert not list(Draft202012Validator(wire_schema()).iter_errors(reply))
    findings = json.loads((run.repo / extraction["findings_path"]).read_text())
    assert findings["findings_from"] == "structured"


@pytest.mark.parametrize("mode", MODES)
def test_verify_strict_rebuilds_the_structured_extraction_exactly(extracted, mode):
    run = extracted(mode)
    (extraction,) = run.run.json()["extraction"]
    checked = cli(run.repo, "verify", "--strict", "--json", extraction["receipt_path"])
    assert checked.code == 0, checked.out + checked.err
    (receipt,) = checked.json()["receipts"]
    assert receipt["status"] == "ok"


def test_a_server_not_declared_is_asked_what_it_is_and_gets_its_dialect(llama_server, tmp_path):
    """Without ``--server``, llama-cpp-python (no ``/api/version`` nor ``/props``) is known by
    its tokenizer's count route and gets llama.cpp's dialect, which its grammar honours (the
    OpenAI ``json_schema`` type it refuses with a 500)."""
    from deepseek_review.finding.extract import wire_schema

    repo = make_repo(tmp_path)
    args = review_args(llama_server, "--max-tokens", "1000", "--findings", "--no-stream")
    at = args.index("--server")
    del args[at : at + 2]
    run = cli(repo, *args)
    assert run.code == 0, run.err[-2000:]
    (extraction,) = run.json()["extraction"]
    record = json.loads((repo / extraction["record_path"]).read_text())
    assert record["body"]["response_format"] == {"type": "json_object", "schema": wire_schema()}
    findings = json.loads((repo / extraction["findings_path"]).read_text())
    assert findings["findings_from"] == "structured"
