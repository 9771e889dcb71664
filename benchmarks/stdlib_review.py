"""The seed emitter's approach as a baseline: one stdlib script, one request, answer, receipt.

The project's seed (``ollama_deepseek_review_emitter.py``, whose receipts are in
``/work/shared/fixtures/research-stack``) reads the context files, frames them in a prompt
held in its own source, POSTs one request with urllib, and writes the answer (``.md``) and a
receipt (``.receipt.json``: model, endpoint, prompt and answer sha256, usage, context files,
answer path). This script does the same, and sends the very bytes ``deepseek-review run``
sends: the framing is our request record's body (its ``$parts``, the template text standing
for the seed's in-source prompt), each ``$file`` part is replaced by that file's text as read
now, and the body is serialised canonically (sorted keys, compact, UTF-8). A body asking for
``"stream": true`` is read as a server-sent event stream, as ``run`` does by default.

No retries, no checks, no request record, no fsync: the floor a Python tool could hope for.

Usage: python stdlib_review.py SKELETON.json URL OUT_DIR
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
import urllib.request
from datetime import UTC, datetime

TYPE_CHECKING = False  # typing itself costs milliseconds of start-up: only mypy reads these
if TYPE_CHECKING:
    from http.client import HTTPResponse
    from typing import Any


def build_body(skeleton: dict[str, Any]) -> tuple[bytes, list[str]]:
    """The request body bytes and the context files it names, in order."""
    files: list[str] = []
    messages: list[dict[str, Any]] = []
    for message in skeleton["messages"]:
        content = message["content"]
        if isinstance(content, dict):
            pieces: list[str] = []
            for part in content["$parts"]:
                if isinstance(part, str):
                    pieces.append(part)
                    continue
                path = part["$file"]["path"]
                with open(path, "rb") as fh:
                    pieces.append(fh.read().decode("utf-8"))
                files.append(path)
            content = "".join(pieces)
        messages.append({**message, "content": content})
    body = {**skeleton, "messages": messages}
    data = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return data.encode("utf-8"), files


def read_answer(resp: HTTPResponse, stream: bool) -> tuple[str, Any]:
    """The answer text and the usage, from a JSON response or an SSE stream."""
    if not stream:
        answer = json.loads(resp.read())
        return answer["choices"][0]["message"]["content"], answer.get("usage")
    parts: list[str] = []
    usage: Any = None
    for raw in resp:
        line = raw.strip()
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if data == b"[DONE]":
            break
        event = json.loads(data)
        usage = event.get("usage") or usage
        for choice in event.get("choices") or ():
            piece = (choice.get("delta") or {}).get("content")
            if piece:
                parts.append(piece)
    return "".join(parts), usage


def main() -> None:
    skeleton_path, url, out_dir = sys.argv[1:]
    with open(skeleton_path, "rb") as fh:
        skeleton = json.load(fh)
    body, files = build_body(skeleton)
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        text, usage = read_answer(resp, bool(skeleton.get("stream")))
    content = text.encode("utf-8")
    stem = os.path.join(out_dir, f"review_{time.time_ns()}")
    with open(stem + ".md", "wb") as fh:
        fh.write(content)
    receipt = {
        "schema": "ollama_deepseek_review_receipt_v1",
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "model": skeleton["model"],
        "endpoint": url,
        "prompt_sha256": "sha256:" + hashlib.sha256(body).hexdigest(),
        "answer_sha256": "sha256:" + hashlib.sha256(content).hexdigest(),
        "usage": usage,
        "context_files": files,
        "answer_path": stem + ".md",
    }
    with open(stem + ".receipt.json", "w", encoding="utf-8") as fh:
        json.dump(receipt, fh, indent=2)


if __name__ == "__main__":
    main()
