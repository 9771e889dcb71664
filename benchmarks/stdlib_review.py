"""The baseline of benchmark 1: a plain stdlib-only script doing the same job as `run`.

It reads the context files, frames them in a prompt, POSTs one non-streamed chat-completions
request with urllib, and writes the answer and a receipt with the same sha256 fields. No
retries, no validation, no continuation: the floor a tool could hope to reach.

Usage: python stdlib_review.py URL OUT_DIR FILE...
"""

import hashlib
import json
import os
import sys
import time
import urllib.request


def main() -> None:
    url, out_dir, *files = sys.argv[1:]
    parts = []
    for path in files:
        with open(path, "rb") as fh:
            data = fh.read()
        text = data.decode("utf-8")
        fence = "`" * 3
        while fence in text:
            fence += "`"
        parts.append(f"## File: {path}\n\n{fence}\n{text}\n{fence}\n")
    messages = [
        {"role": "system", "content": "You are a careful reviewer."},
        {"role": "user", "content": "Review these files.\n\n" + "\n".join(parts)},
    ]
    body = json.dumps(
        {
            "model": "deepseek-v4-flash",
            "messages": messages,
            "temperature": 0,
            "max_tokens": 8192,
            "stream": False,
        },
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
    ).encode("utf-8")
    req = urllib.request.Request(url, data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=600) as resp:
        answer = json.loads(resp.read())
    content = answer["choices"][0]["message"]["content"].encode("utf-8")
    stem = os.path.join(out_dir, f"review_{time.time_ns()}")
    with open(stem + ".md", "wb") as fh:
        fh.write(content)
    receipt = {
        "schema": "ollama_deepseek_review_receipt_v1",
        "model": "deepseek-v4-flash",
        "endpoint": url,
        "prompt_sha256": "sha256:" + hashlib.sha256(body).hexdigest(),
        "answer_sha256": "sha256:" + hashlib.sha256(content).hexdigest(),
        "usage": answer.get("usage"),
        "context_files": files,
        "answer_path": stem + ".md",
    }
    with open(stem + ".receipt.json", "w", encoding="utf-8") as fh:
        json.dump(receipt, fh, indent=2)


if __name__ == "__main__":
    main()
