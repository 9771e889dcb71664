"""The one factory for httpx clients (:mod:`deepseek_review.chat.transport`): every client the
tool builds, the batch's shared one included, is under the attempt deadline, follows no
redirect and loads the CA bundle only for https."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest

from deepseek_review.chat.transport import make_http_client, no_tls_context
from deepseek_review.chat.types import Timeouts
from tests.support.batch import manifest
from tests.support.hostile import Hostile, Wire, answer, drip


@pytest.fixture
def header_drip() -> Iterator[Hostile]:
    """A server that sends its headers one byte every 50 ms, forever."""
    server = Hostile(drip(b"HTTP/1.1 200 OK\r\n" + b"X-Slow: yes\r\n" * 1000))
    yield server
    server.stop()


def test_a_batch_entry_whose_server_drips_its_headers_is_cut_off_at_the_total_timeout(
    repo, cli, header_drip
):
    server = header_drip
    manifest(repo, ["slow"])
    started = time.monotonic()
    r = cli(
        "batch", "reviews.toml", "--endpoint", server.base_url, "--json",
        "--total-timeout", "1", "--max-attempts", "1",
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert r.code == 11, r.err
    (entry,) = r.json()["entries"]
    assert entry["status"] == "failed"
    assert "no complete answer within --total-timeout 1s" in entry["error"]
    assert elapsed < 4, elapsed


def _answer_then_drip(conn: Wire, stop: threading.Event) -> None:
    """A whole answer, the connection kept open, then the headers of a next answer dripped."""
    body = answer()
    head = b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
    conn.sendall(head + f"Content-Length: {len(body)}\r\n\r\n".encode() + body)
    drip(b"HTTP/1.1 200 OK\r\n" + b"X-Slow: yes\r\n" * 1000)(conn, stop)


@pytest.fixture
def keeps_open() -> Iterator[Hostile]:
    server = Hostile(_answer_then_drip)
    yield server
    server.stop()


def test_a_connection_kept_open_by_its_server_is_not_reused_past_the_deadline(
    repo, cli, keeps_open
):
    """A connection kept open and reused for the next review is under that review's
    deadline too: a server that answers, then drips the headers of the next answer on the
    same connection, is cut off at the total timeout."""
    server = keeps_open
    manifest(repo, ["one", "two"])
    started = time.monotonic()
    r = cli(
        "batch", "reviews.toml", "--endpoint", server.base_url, "--json", "--jobs", "1",
        "--total-timeout", "1", "--max-attempts", "1",
    )  # fmt: skip
    elapsed = time.monotonic() - started
    assert r.code == 11, r.err
    one, two = r.json()["entries"]
    assert (one["status"], two["status"]) == ("ok", "failed")
    assert "no complete answer within --total-timeout 1s" in two["error"]
    assert len(server.seen) == 1  # the second request went over the first's connection
    assert elapsed < 4, elapsed


def test_a_client_for_plain_http_follows_no_redirect_and_trusts_no_certificate():
    with make_http_client(Timeouts(), https=False) as clients, clients.lease() as lane:
        assert lane.client.follow_redirects is False
    assert no_tls_context().get_ca_certs() == []
