"""Counting a prompt's tokens: the server's tokenizer where it has one (vLLM's and llama.cpp's
``/tokenize``), else an estimate calibrated from what the server reported, else bytes / 4.

The requests to a tokenizer are pinned against an in-process transport (their exact paths and
bodies, and every way a server can fail to answer); what a run and a dry run do with the count,
against the real simulator offering each server's tokenizer endpoints.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from deepseek_review.chat import client as client_module
from deepseek_review.chat.client import ChatClient
from deepseek_review.chat.tokenize import TEMPLATE_TOKENS, asks, server_count
from deepseek_review.chat.tokens import (
    MESSAGE_OVERHEAD,
    PLAIN_ESTIMATE,
    SERVER_TOKENIZER,
    Count,
    Counter,
    Sample,
    calibrated_bytes_per_token,
)
from deepseek_review.chat.transport import HttpClients
from deepseek_review.testing.simulator.answer import prompt_token_estimate
from tests.support.cli import use_key

URL = "http://127.0.0.1:9/v1/chat/completions"
CHAT = [
    {"role": "system", "content": "You review code."},
    {"role": "user", "content": "Review this: def mean(xs): return sum(xs) / len(xs)"},
]
Handler = Callable[[httpx.Request], httpx.Response]


@pytest.fixture
def seen() -> list[httpx.Request]:
    return []


@pytest.fixture
def serve(
    monkeypatch: pytest.MonkeyPatch, seen: list[httpx.Request]
) -> Iterator[Callable[[Handler], ChatClient]]:
    """A client whose side requests reach ``handler`` (in process), each request kept."""

    def make(handler: Handler) -> ChatClient:
        def recorded(request: httpx.Request) -> httpx.Response:
            request.read()
            seen.append(request)
            return handler(request)

        def clients(*_: Any, **__: Any) -> HttpClients:
            return HttpClients(lambda: httpx.Client(transport=httpx.MockTransport(recorded)))

        monkeypatch.setattr(client_module, "make_http_client", clients)
        return ChatClient(URL, "sk-test-key-123456")

    yield make


def reply(status: int, body: object) -> httpx.Response:
    """An answer read from the wire as a server's is (streamed, not already in memory)."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"content-type": "application/json"}
    return httpx.Response(status, headers=headers, stream=httpx.ByteStream(data))


def routes(table: dict[str, Any]) -> Handler:
    """Answers each path with its JSON (a callable: of the request's JSON); else a 404."""

    def handle(request: httpx.Request) -> httpx.Response:
        answer = table.get(request.url.path)
        if answer is None:
            return reply(404, {"error": "not found"})
        if callable(answer):
            answer = answer(json.loads(request.content))
        return reply(200, answer)

    return handle


def asked(seen: list[httpx.Request]) -> list[tuple[str, Any]]:
    return [(r.url.path, json.loads(r.content)) for r in seen]


# --------------------------------------------------------------------------- vLLM


def test_vllm_counts_the_messages_as_its_chat_template_renders_them(
    serve: Callable[[Handler], ChatClient], seen: list[httpx.Request]
) -> None:
    client = serve(routes({"/tokenize": {"count": 57, "max_model_len": 8192, "tokens": [1] * 57}}))
    assert server_count(client, "vllm", "m", CHAT) == (57, 8192)
    assert asked(seen) == [
        (
            "/tokenize",
            {
                "model": "m",
                "messages": CHAT,
                "add_generation_prompt": True,
                "continue_final_message": False,
            },
        )
    ]


def test_vllm_counts_a_prefilled_answer_as_continued_not_as_a_new_turn(
    serve: Callable[[Handler], ChatClient], seen: list[httpx.Request]
) -> None:
    client = serve(routes({"/tokenize": {"count": 60, "max_model_len": 8192, "tokens": []}}))
    server_count(client, "vllm", "m", [*CHAT, {"role": "assistant", "content": "So far"}])
    body = asked(seen)[0][1]
    assert (body["add_generation_prompt"], body["continue_final_message"]) == (False, True)


def test_vllm_without_a_count_field_is_counted_by_its_tokens(
    serve: Callable[[Handler], ChatClient],
) -> None:
    client = serve(routes({"/tokenize": {"tokens": [5, 6, 7]}}))
    assert server_count(client, "vllm", "m", CHAT) == (3, None)


def test_the_tokenizer_is_asked_with_the_key_in_the_authorization_header_only(
    serve: Callable[[Handler], ChatClient], seen: list[httpx.Request]
) -> None:
    client = serve(routes({"/tokenize": {"count": 1, "max_model_len": 10, "tokens": [1]}}))
    server_count(client, "vllm", "m", CHAT)
    assert seen[0].headers["authorization"] == "Bearer sk-test-key-123456"
    assert b"sk-test-key-123456" not in seen[0].content


# --------------------------------------------------------------------------- llama.cpp


def test_llamacpp_renders_the_template_then_tokenizes_it_with_the_special_tokens(
    serve: Callable[[Handler], ChatClient], seen: list[httpx.Request]
) -> None:
    client = serve(
        routes({"/apply-template": {"prompt": "<s>[rendered]"}, "/tokenize": {"tokens": [1] * 41}})
    )
    assert server_count(client, "llama.cpp", "m", CHAT) == (41, None)
    assert asked(seen) == [
        ("/apply-template", {"messages": CHAT}),
        ("/tokenize", {"content": "<s>[rendered]", "add_special": True}),
    ]


def test_llamacpp_without_apply_template_counts_each_message_and_its_template_tokens(
    serve: Callable[[Handler], ChatClient], seen: list[httpx.Request]
) -> None:
    lengths = {m["content"]: n for m, n in zip(CHAT, (4, 19), strict=True)}
    client = serve(routes({"/tokenize": lambda body: {"tokens": [0] * lengths[body["content"]]}}))
    assert server_count(client, "llama.cpp", "m", CHAT) == (4 + 19 + 2 * TEMPLATE_TOKENS, None)
    assert [path for path, _ in asked(seen)] == ["/apply-template", "/tokenize", "/tokenize"]


def test_llama_cpp_python_is_counted_through_its_extras_route(
    serve: Callable[[Handler], ChatClient], seen: list[httpx.Request]
) -> None:
    lengths = {m["content"]: n for m, n in zip(CHAT, (5, 20), strict=True)}
    client = serve(
        routes({"/extras/tokenize/count": lambda body: {"count": lengths[body["input"]]}})
    )
    assert server_count(client, "llama.cpp", "m", CHAT) == (5 + 20 + 2 * TEMPLATE_TOKENS, None)
    assert asked(seen)[-1] == (
        "/extras/tokenize/count",
        {"input": CHAT[1]["content"], "model": "m"},
    )


# --------------------------------------------------------------------------- failures


@pytest.mark.parametrize(
    "answer",
    [
        (500, {"error": "boom"}),
        (200, b"not json"),
        (200, {"tokens": "many"}),
        (200, {"count": -3}),
        (200, {"count": True}),
        (200, [1, 2, 3]),
        (401, {"error": "unauthorized"}),
    ],
    ids=["500", "not-json", "tokens-not-a-list", "negative", "bool", "array", "401"],
)
@pytest.mark.parametrize("server", ["vllm", "llama.cpp"])
def test_a_tokenizer_that_does_not_answer_a_count_leaves_the_estimate(
    serve: Callable[[Handler], ChatClient], server: str, answer: tuple[int, object]
) -> None:
    client = serve(lambda request: reply(*answer))
    counter = Counter(server=lambda messages: server_count(client, server, "m", messages))
    count = counter.count(CHAT)
    assert count.how == PLAIN_ESTIMATE
    assert count.tokens == Counter().count(CHAT).tokens


def test_an_unreachable_tokenizer_leaves_the_estimate(
    serve: Callable[[Handler], ChatClient],
) -> None:
    def refuse(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("refused", request=request)

    client = serve(refuse)
    assert server_count(client, "vllm", "m", CHAT) is None


def test_a_server_that_had_no_tokenizer_is_not_asked_again_by_the_same_client(
    serve: Callable[[Handler], ChatClient], seen: list[httpx.Request]
) -> None:
    client = serve(routes({}))
    assert server_count(client, "llama.cpp", "m", CHAT) is None
    before = len(seen)
    assert server_count(client, "llama.cpp", "m", CHAT) is None
    assert len(seen) == before


@pytest.mark.parametrize("server", ["ollama", "deepseek"])
def test_servers_without_a_tokenizer_are_never_asked(
    serve: Callable[[Handler], ChatClient], seen: list[httpx.Request], server: str
) -> None:
    client = serve(routes({"/tokenize": {"count": 1}}))
    assert not asks(server)
    assert server_count(client, server, "m", CHAT) is None
    assert seen == []


# --------------------------------------------------------------------------- calibration


def test_the_plain_estimate_is_bytes_over_four_plus_each_messages_overhead() -> None:
    assert Counter().estimate([400, 0]) == Count(100 + 0 + 2 * MESSAGE_OVERHEAD, PLAIN_ESTIMATE)


def test_a_calibrated_estimate_divides_by_a_low_quantile_of_the_ratios_less_a_margin() -> None:
    samples = [Sample(3000 + 100 * i, 1, 1000) for i in range(10)]  # 3.0 .. 3.9 bytes a token
    per = calibrated_bytes_per_token(samples)
    assert per == pytest.approx(3.1 / (1 + 0.10 + 0.15 / 10))
    count = Counter.calibrated(samples).estimate([31_000])
    assert count.how == "calibrated estimate (10 samples)"
    assert count.tokens > 31_000 / 3.1  # never under the count at the low quantile


@pytest.mark.parametrize(
    "sample",
    [Sample(400, 1, 100), Sample(100_000, 1, 1000), Sample(500, 1, 1000), Sample(0, 1, 300)],
    ids=["too-small", "clipped-looking", "implausibly-dense", "empty"],
)
def test_samples_no_tokenizer_could_give_are_not_calibrated_from(sample: Sample) -> None:
    assert calibrated_bytes_per_token([sample]) is None
    assert Counter.calibrated([sample]).estimate([4000]).how == PLAIN_ESTIMATE


def test_a_count_says_how_it_was_made() -> None:
    assert str(Count(120, SERVER_TOKENIZER)) == "120 tokens (server tokenizer)"
    assert str(Count(120, PLAIN_ESTIMATE)) == "~120 tokens (estimate)"


# --------------------------------------------------------------------------- runs


def _dry(cli: Any, url: str, server: str, *more: str) -> Any:
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", url, "--server", server,
            "--dry-run", *more)  # fmt: skip
    assert r.code == 0, r.err
    return r


def prompt_tokens_of(repo: Path, url: str, server: str) -> int:
    """What the simulator counts for the prompt a run would send (its usage's prompt_tokens)."""
    from deepseek_review import api
    from deepseek_review.reviewing.plan import ReviewPlan

    plan = api.plan_review(
        context=["docs/spec.md"], prompt="x", endpoint=url, server=server, repo_root=repo
    )
    assert isinstance(plan, ReviewPlan)
    return prompt_token_estimate([{"role": m.role, "content": m.content} for m in plan.messages])


@pytest.mark.parametrize("tokenizer", ["vllm", "llama.cpp"])
def test_a_dry_run_counts_with_the_servers_tokenizer_and_says_so(
    repo: Path, make_simulator: Any, cli: Any, tokenizer: str
) -> None:
    sim = make_simulator(tokenizer=tokenizer)
    r = _dry(cli, sim.base_url, tokenizer)
    expected = prompt_tokens_of(repo, sim.base_url, tokenizer)
    assert f"{expected} tokens (server tokenizer)" in r.out
    assert sim.chat_requests() == []


def test_a_dry_run_against_llama_cpp_python_counts_its_messages_with_template_tokens(
    repo: Path, make_simulator: Any, cli: Any
) -> None:
    sim = make_simulator(tokenizer="llama-cpp-python")
    info = _dry(cli, sim.base_url, "llama.cpp", "--json").json()
    assert info["token_count_how"] == SERVER_TOKENIZER
    usage = prompt_tokens_of(repo, sim.base_url, "llama.cpp")
    assert usage <= info["token_count"] <= usage + 2 * TEMPLATE_TOKENS


def test_a_dry_run_against_a_server_without_a_tokenizer_says_it_estimated(
    repo: Path, make_simulator: Any, cli: Any
) -> None:
    sim = make_simulator()
    r = _dry(cli, sim.base_url, "llama.cpp")
    assert "tokens (estimate)" in r.out
    assert sim.chat_requests() == []


def test_a_prompt_vllm_says_is_over_its_window_is_refused_before_sending_naming_split(
    repo: Path, make_simulator: Any, cli: Any
) -> None:
    sim = make_simulator(tokenizer="vllm", context_window=2048)
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url,
            "--server", "vllm", "--max-tokens", "4000")  # fmt: skip
    assert r.code == 14, r.err
    assert "max_model_len" in r.err and "nothing was sent" in r.err
    assert "review it in parts that fit (--split)" in r.err.strip().splitlines()[-1]
    assert sim.chat_requests() == []


def test_the_key_reaches_the_tokenizer_as_it_reaches_the_chat(
    repo: Path, make_simulator: Any, cli: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    key = "sk-sim-tokenizer-key-42"
    sim = make_simulator(tokenizer="vllm", api_key=key)
    use_key(monkeypatch, key, "SIM_KEY")
    r = _dry(cli, sim.base_url, "vllm")
    assert "(server tokenizer)" in r.out
    assert key not in r.out + r.err
