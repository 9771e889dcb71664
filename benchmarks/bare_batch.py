"""The batch row's baseline: the same requests from a bare 8-thread http.client client.

Each thread keeps one connection open and takes the next body from a shared queue, POSTs it
and reads the streamed answer line by line to its end; nothing is checked or written. The
bodies are the exact bytes ``deepseek-review batch`` sent (rebuilt from its request records,
context included), one file each in BODY_DIR.

Usage: python bare_batch.py URL JOBS BODY_DIR
"""

from __future__ import annotations

import http.client
import os
import queue
import sys
import threading
from urllib.parse import urlsplit


def send_all(host: str, port: int, path: str, bodies: queue.SimpleQueue[bytes | None]) -> None:
    conn = http.client.HTTPConnection(host, port, timeout=600)
    while (body := bodies.get()) is not None:
        conn.request("POST", path, body, {"Content-Type": "application/json"})
        resp = conn.getresponse()
        if resp.status != 200:
            raise RuntimeError(f"HTTP {resp.status}")
        for _line in resp:  # the server-sent events, read as they come
            pass
    conn.close()


def queued(body_dir: str, jobs: int) -> queue.SimpleQueue[bytes | None]:
    """Every body of BODY_DIR in name order, then one end marker per thread."""
    out: queue.SimpleQueue[bytes | None] = queue.SimpleQueue()
    for name in sorted(os.listdir(body_dir)):
        with open(os.path.join(body_dir, name), "rb") as fh:
            out.put(fh.read())
    for _ in range(jobs):
        out.put(None)
    return out


def main() -> None:
    url, jobs_text, body_dir = sys.argv[1:]
    jobs = int(jobs_text)
    parts = urlsplit(url)
    bodies = queued(body_dir, jobs)
    failures: list[str] = []

    def worker() -> None:
        try:
            send_all(parts.hostname or "127.0.0.1", parts.port or 80, parts.path, bodies)
        except Exception as exc:
            failures.append(repr(exc))

    threads = [threading.Thread(target=worker) for _ in range(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failures:  # a failed run must not pass for a fast one
        sys.exit(f"bare_batch: {len(failures)} thread(s) failed: {failures[0]}")


if __name__ == "__main__":
    main()
