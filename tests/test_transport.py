"""The one factory for httpx clients (:mod:`deepseek_review.transport`): every client the
tool builds, the batch's shared one included, is under the attempt deadline, follows no
redirect and loads the CA bundle only for https."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest

from deepseek_review import deadline
from deepseek_review.calls import Timeouts
from deepseek_review.transport import make_http_client, no_tls_context
from tests.test_batch import manifest
from tests.test_hostile_server import Hostile, drip


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


def test_a_client_for_plain_http_is_bound_to_the_deadline_and_follows_no_redirect():
    with make_http_client(Timeouts(), https=False) as http:
        pool = http._transport._pool  # type: ignore[attr-defined]  # httpx has no public view
        assert isinstance(pool._network_backend, deadline._Backend)
        assert pool._ssl_context is no_tls_context()
        assert http.follow_redirects is False
