"""The wire parsing of :mod:`deepseek_review.chat.wire`, without a server: bytes in, a
Completion (or the reason there is none) out."""

from __future__ import annotations

import subprocess
import sys

import pytest

from deepseek_review.chat import wire as chatwire
from tests.support.chat import read_stream, stream_chunk


def test_a_whole_stream_becomes_its_completion():
    st = read_stream(
        [
            stream_chunk({"content": "Hel"}),
            b"",
            stream_chunk({"content": "lo"}, "stop"),
            b"data: [DONE]",
        ]
    )
    chatwire.check_ended(st)
    done = chatwire.stream_completion(st, 1.5)
    assert (done.content, done.finish_reason, done.message_keys) == ("Hello", "stop", ("content",))


def test_a_surrogate_pair_split_across_two_chunks_is_joined():
    first, second = b'data: {"choices":[{"delta":{"content":"\\ud83d"}}]}', stream_chunk({}, "stop")
    halves = b'data: {"choices":[{"delta":{"content":"\\ude00"}}]}'
    st = read_stream([first, halves, second, b"data: [DONE]"])
    assert chatwire.stream_completion(st, 0.0).content == "\U0001f600"


def test_a_stream_without_done_is_not_ended():
    st = read_stream([stream_chunk({"content": "x"}, "stop")])
    with pytest.raises(ValueError, match=r"stream ended without its data: \[DONE\]"):
        chatwire.check_ended(st)


@pytest.mark.parametrize(
    "lines, raw",
    [
        ([b'error: {"code": 500, "message": "boom"}'], b'{"code": 500, "message": "boom"}'),
        ([b"event: error", b'data: {"message": "x"}'], b'{"message": "x"}'),
        ([b'data: {"error": {"message": "too long"}}'], b'{"error": {"message": "too long"}}'),
    ],
    ids=["llama.cpp error line", "sse error event", "error stream_chunk"],
)
def test_an_error_inside_the_stream_is_reported_with_the_servers_bytes(lines, raw):
    with pytest.raises(chatwire.ReportedError) as caught:
        read_stream(lines)
    assert caught.value.raw == raw


def test_an_error_that_is_null_is_no_error():
    st = read_stream([b'data: {"error": null, "choices": [{"delta": {"content": "ok"}}]}'])
    assert st.content == ["ok"]


def test_a_chunk_that_is_not_json_is_a_bad_chunk():
    with pytest.raises(chatwire.BadChunk):
        read_stream([b"data: {not json"])


def test_endless_blank_lines_make_an_idle_stream():
    with pytest.raises(chatwire.IdleStream, match="10000 stream lines in a row"):
        read_stream([b""] * (chatwire.MAX_IDLE_LINES + 1))


def test_a_token_count_that_is_a_bool_makes_the_answer_unusable():
    body = {"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": True}}
    with pytest.raises(ValueError, match=r"usage\.prompt_tokens is True"):
        chatwire.completion_from_json(body)


@pytest.mark.parametrize(
    "module", ["chat.types", "chat.wire", "chat.error_body", "reviewing.segment"]
)
def test_the_domain_and_wire_modules_load_without_httpx(module):
    code = f"import sys, deepseek_review.{module}; print('httpx' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
