"""The batch row's floor inside the stack: the bare client's work with typer, httpx, tenacity.

What :mod:`benchmarks.bare_batch` does (JOBS threads take the next body from a shared queue,
POST it and read the streamed answer line by line to its end; nothing checked or written),
but the way a tool on this project's stack must: typer parses the command line, one
``httpx.Client`` (a connection per thread, plain http, so no CA bundle) sends, and each
request runs under ``tenacity``. The difference from the bare client is what the stack alone
costs the row, before any work of ours.

Usage: python floor_batch.py URL JOBS BODY_DIR
"""

from __future__ import annotations

import os
import queue
import ssl
import sys

import httpx
import tenacity
import typer

from benchmarks.bare_batch import queued, run_threads  # the bodies, threads: as the bare client


def send_all(client: httpx.Client, url: str, bodies: queue.SimpleQueue[bytes | None]) -> None:
    while (body := bodies.get()) is not None:
        for attempt in tenacity.Retrying(stop=tenacity.stop_after_attempt(3), reraise=True):
            with attempt:
                request = client.build_request(
                    "POST", url, content=body, headers={"Content-Type": "application/json"}
                )
                response = client.send(request, stream=True)
                try:
                    response.raise_for_status()
                    for _line in response.iter_lines():  # the server-sent events, as they come
                        pass
                finally:
                    response.close()


def send_and_exit(url: str, jobs: int, bodies: queue.SimpleQueue[bytes | None], name: str) -> None:
    """Every queued body sent by JOBS threads sharing one client; then the process ends."""
    no_ca = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # plain http: no CA bundle to load
    limits = httpx.Limits(max_connections=jobs, max_keepalive_connections=jobs)
    with httpx.Client(timeout=600, verify=no_ca, limits=limits) as client:
        run_threads(send_all, (client, url, bodies), jobs, name)
    sys.stdout.flush()
    os._exit(0)  # as ours after a flushed success: no interpreter teardown


def main(url: str, jobs: int, body_dir: str) -> None:
    send_and_exit(url, jobs, queued(body_dir, jobs), "floor_batch")


if __name__ == "__main__":
    typer.run(main)
