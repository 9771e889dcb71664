"""The batch row's floor with ours' planning: the stack's floor, sending the bodies our own
planning makes.

What :mod:`benchmarks.floor_batch` does (typer parses the command line; JOBS threads share one
``httpx.Client`` and send under ``tenacity``, reading each streamed answer to its end; nothing
checked or written), except that the bodies are not read from files: they come from
``deepseek_review.api.plan_batch``, the call ``batch`` makes to read and check the manifest
and plan every entry before its first request. So this side adds to the floor exactly the
work the tool must finish before it may send anything (loading the modules planning needs,
checking the manifest, planning each entry), and leaves out what ours does around each
request: the Ollama pre-flight, the request record, answer and receipt written with fsync,
progress and the report.

Usage: python floor_planned.py MANIFEST URL JOBS OUTPUT_DIR   (run in the repository)
"""

from __future__ import annotations

import queue
import sys
from urllib.parse import urlsplit

import typer

from benchmarks.bare_batch import queue_of
from benchmarks.floor_batch import send_and_exit


def planned_bodies(
    manifest: str, url: str, jobs: int, output_dir: str
) -> queue.SimpleQueue[bytes | None]:
    """Every entry's request body as ours planned it, in manifest order, then one end marker
    per thread. The endpoint is URL's origin, as ``batch --endpoint`` takes it."""
    from deepseek_review import api

    origin = urlsplit(url)._replace(path="", query="", fragment="").geturl()
    plan = api.plan_batch(manifest, jobs=jobs, endpoint=origin, output_dir=output_dir)
    for work in plan.prepared.work:
        if work.action != "new":
            sys.exit(f"floor_planned: entry {work.topic!r} would {work.action}, not be sent new")
    return queue_of((w.planned.plan.prepared.body_bytes for w in plan.prepared.work), jobs)


def main(manifest: str, url: str, jobs: int, output_dir: str) -> None:
    send_and_exit(url, jobs, planned_bodies(manifest, url, jobs, output_dir), "floor_planned")


if __name__ == "__main__":
    typer.run(main)
