"""The verify rows' floor inside the stack: the least a verify of these receipts does.

Imports the stack (typer), then for every ``*.receipt.json`` under FOLDER: reads and decodes
the receipt and its request record, hashes the answer file, hashes each file a ``$file`` or
``$answer`` reference names (once per path), rebuilds the request body (the record's body
with each reference replaced by the file's text, encoded as the tool encodes: keys sorted,
``,``/``:``, UTF-8, no NaN) and hashes it; both hashes must equal the receipt's. Nothing else:
no schema, no path or size checks, no chain, no report, no git. With ``--workers N`` (N > 0)
the receipts are split among N forked children, as verify splits them among its workers.

It exits 1 if any receipt fails, so a floor that skipped the work could not pass for a fast
one. Usage: python floor_verify.py ROOT FOLDER [--workers N]
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from typing import Any

import typer  # noqa: F401  (the stack's imports: every verify pays them)

ENCODER = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def tag(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def read(root: str, rel: str) -> bytes:
    with open(os.path.join(root, rel), "rb") as fh:
        return fh.read()


class Files:
    """Each referenced file read and hashed once per process."""

    def __init__(self, root: str) -> None:
        self.root = root
        self.known: dict[str, tuple[str, str]] = {}

    def text(self, ref: dict[str, Any]) -> str:
        path = ref["path"]
        if path not in self.known:
            data = read(self.root, path)
            self.known[path] = (tag(data), data.decode("utf-8"))
        digest, text = self.known[path]
        if digest != ref["sha256"]:
            raise ValueError(f"{path} changed")
        return text


def content(value: Any, files: Files) -> str:
    if isinstance(value, str):
        return value
    out = []
    for part in value["$parts"]:
        if isinstance(part, str):
            out.append(part)
        else:
            ((_, ref),) = part.items()
            out.append(files.text(ref))
    return "".join(out)


def verified(root: str, receipt_path: str, files: Files) -> bool:
    receipt = json.loads(read(root, receipt_path))
    if tag(read(root, str(receipt["answer_path"]))) != receipt["answer_sha256"]:
        return False
    record = json.loads(read(root, receipt_path.removesuffix(".receipt.json") + ".request.json"))
    body = dict(record["body"])
    body["messages"] = [{**m, "content": content(m["content"], files)} for m in body["messages"]]
    sent = ENCODER.encode(body).encode("utf-8")  # one call of the C encoder
    return bool(tag(sent) == receipt["prompt_sha256"])


def check(root: str, receipts: list[str]) -> int:
    files = Files(root)
    return sum(not verified(root, r, files) for r in receipts)


def main(argv: list[str]) -> int:
    root, folder = argv[0], argv[1]
    workers = int(argv[3]) if argv[2:3] == ["--workers"] else 0
    receipts = sorted(
        os.path.relpath(os.path.join(d, n), root)
        for d, _, names in os.walk(folder)
        for n in names
        if n.endswith(".receipt.json")
    )
    if workers <= 0:
        failed = check(root, receipts)
    else:
        pids = []
        for i in range(workers):
            pid = os.fork()
            if pid == 0:
                os._exit(min(1, check(root, receipts[i::workers])))
            pids.append(pid)
        failed = sum(os.waitstatus_to_exitcode(os.waitpid(p, 0)[1]) for p in pids)
    print(f"{len(receipts)} receipts, {failed} failed")
    return 1 if failed or not receipts else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
