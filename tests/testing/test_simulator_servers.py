"""The simulator as one server of several: a bounded queue (Ollama's 503 beyond it) and a
crash after a number of answers."""

from __future__ import annotations

import contextlib
import socket
import threading

from deepseek_review.testing.simulator import Simulator
from tests.support.batch import wait_for
from tests.support.chat import chat


def test_beyond_its_queue_a_busy_server_answers_ollama_s_503(make_simulator):
    sim: Simulator = make_simulator(capacity=1, max_queue=0, latency=0.3, answer_words=5)
    first = threading.Thread(target=chat, args=(sim,))
    first.start()
    while not sim.chat_requests():
        threading.Event().wait(0.01)
    second = chat(sim)
    first.join()
    assert second.status == 503
    assert "maximum pending requests exceeded" in second.json()["error"]["message"]


def test_a_server_told_to_die_answers_that_many_then_stops_listening(make_simulator):
    sim: Simulator = make_simulator(die_after=2, answer_words=5)
    assert [chat(sim).status for _ in range(2)] == [200, 200]
    with contextlib.suppress(OSError):  # the third request's connection is cut
        chat(sim)
    wait_for(lambda: not _listening(sim.port))


def _listening(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0
