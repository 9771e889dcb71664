"""Which server of a pool gets a review (:class:`deepseek_review.reviewing.pool.Pool`)."""

from __future__ import annotations

import threading

import pytest

from deepseek_review.chat.endpoint import Endpoint
from deepseek_review.errors import ServerError
from deepseek_review.reviewing.pool import Pool, Server

A, B = "http://127.0.0.1:1/v1/chat/completions", "http://127.0.0.1:2/v1/chat/completions"


def pool(jobs: int = 4) -> tuple[Pool, Server, Server]:
    p = Pool([Endpoint(A), Endpoint(B)], jobs, None, threading.Event())
    return p, p.servers[0], p.servers[1]


def test_a_review_goes_to_the_server_that_served_its_context_while_it_has_a_free_slot():
    p, a, b = pool()
    assert p.take("spec") is a
    assert p.take("code") is b
    assert p.take("code") is b  # a is as free as b: the context decides
    assert p.take("spec") is a


def test_a_full_server_does_not_hold_up_its_context_another_one_takes_it():
    p, a, b = pool()
    assert [p.take("spec"), p.take("spec")] == [a, a]
    assert p.take("spec") is b


def test_each_server_gets_its_share_of_jobs():
    _, a, b = pool(jobs=5)
    assert (a.limit, b.limit) == (3, 3)


def test_a_busy_answer_lowers_the_server_s_limit_and_clean_answers_raise_it_again():
    p, a, _ = pool()
    p.overloaded(a)
    assert a.limit == 1
    p.answered(a)
    assert a.limit == 2


def test_a_drained_server_gets_nothing_and_a_pool_with_none_left_refuses():
    p, a, b = pool()
    p.drain(a, ServerError("cannot reach"))
    assert p.take("spec") is b
    p.drain(b, ServerError("cannot reach"))
    with pytest.raises(ServerError, match="all 2 drained"):
        p.take("spec")
