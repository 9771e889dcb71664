"""What a pool of servers learns from a failed request: the server did not answer at all
(drain it), or answered that it is busy (send it fewer at once)."""

from __future__ import annotations

import pytest

from deepseek_review.chat.client import ChatClient
from deepseek_review.chat.retry import Throttle
from deepseek_review.chat.types import RetryPolicy
from deepseek_review.errors import ServerError
from tests.support.ports import closed_port

BODY = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
POLICY = RetryPolicy(max_attempts=2, backoff_initial=0.01)


class Counting(Throttle):
    def __init__(self) -> None:
        super().__init__()
        self.busy_answers = 0

    def busy(self) -> None:
        self.busy_answers += 1


def test_a_server_nothing_listens_on_is_unreachable():
    url = f"http://127.0.0.1:{closed_port()}/v1/chat/completions"
    with ChatClient(url, policy=POLICY) as c, pytest.raises(ServerError) as caught:
        c.complete(BODY, model="m", stream=False)
    assert caught.value.unreachable


def test_a_server_that_answers_503_is_busy_not_unreachable(make_simulator):
    sim = make_simulator(fault_rate=1.0, fault_kinds=("503",))
    throttle = Counting()
    with (
        ChatClient(sim.chat_url, policy=POLICY, throttle=throttle) as c,
        pytest.raises(ServerError) as caught,
    ):
        c.complete(BODY, model="m", stream=False)
    assert not caught.value.unreachable
    assert throttle.busy_answers == 2
