"""The contract of counting with a real server's tokenizer: llama-cpp-python's, which has no
``/apply-template`` nor llama.cpp's ``/tokenize``, only ``POST /extras/tokenize/count``
(``{"input"}`` → ``{"count"}``, with the BOS its ``add_bos`` adds).

What the real server does (pinned here): each message's count, plus
:data:`chat.tokenize.TEMPLATE_TOKENS` for its template, is never under the ``prompt_tokens``
the chat answer reports for the same messages, and over it by at most that allowance.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from deepseek_review.chat.client import ChatClient
from deepseek_review.chat.tokenize import TEMPLATE_TOKENS, server_count
from tests.contract.conftest import MODEL, LlamaServer

pytestmark = pytest.mark.contract

PROMPTS = {
    "short": [{"role": "user", "content": "Check the mean."}],
    "system-and-user": [
        {"role": "system", "content": "You review specifications for arithmetic errors."},
        {"role": "user", "content": "# Spec\n\nThe mean of 2, 4 and 9 is 5.\n" * 20},
    ],
    "non-ascii": [{"role": "user", "content": "Überprüfe: Mittelwert von 2, 4 und 9 ist 5 — ✓"}],
    "special-looking": [{"role": "user", "content": "a <|u|> b <|a|> c </s>"}],
}


def reported_prompt_tokens(server: LlamaServer, messages: list[dict[str, str]]) -> int:
    body = {"model": MODEL, "messages": messages, "max_tokens": 1, "stream": False}
    answer: Any = httpx.post(server.chat_url, json=body, timeout=60).json()
    tokens: int = answer["usage"]["prompt_tokens"]
    return tokens


@pytest.mark.parametrize("name", sorted(PROMPTS))
def test_the_servers_count_covers_the_prompt_tokens_it_reports_for_the_same_messages(
    llama_server: LlamaServer, name: str
) -> None:
    messages = PROMPTS[name]
    with ChatClient(llama_server.chat_url) as client:
        counted = server_count(client, "llama.cpp", MODEL, messages)
    assert counted is not None
    tokens, window = counted
    reported = reported_prompt_tokens(llama_server, messages)
    assert reported <= tokens <= reported + TEMPLATE_TOKENS * len(messages)
    assert window is None
