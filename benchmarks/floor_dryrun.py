"""The dry-run row's floor inside the stack: less than any dry run of ``-c .`` does.

Imports the stack (typer), lists the folder's files with ``git ls-files -z`` (as the
baseline), reads each one, decodes it as UTF-8 (a file that is not text is an error, as for
ours), appends its JSON-escaped text to the body, hashes the body (sha256) and prints each
file's size and path and the hash. In one process, and nothing else: no ignore rules, no
size limits, no secret or binary checks beyond the decode, no headings or fences, no
template, no token estimate. Ours does all of that on top, so this is a floor, not a rival.

Usage: python floor_dryrun.py ROOT
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import typer


def main(root: str) -> None:
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=root, check=True, capture_output=True
    ).stdout
    body = hashlib.sha256()
    lines = []
    for name in listed.decode("utf-8").split("\0")[:-1]:
        with open(os.path.join(root, name), "rb") as fh:
            data = fh.read()
        body.update(json.dumps(data.decode("utf-8"), ensure_ascii=False).encode("utf-8"))
        lines.append(f"{len(data):>12}  {name}\n")
    lines.append(f"sha256:{body.hexdigest()}\n")
    sys.stdout.write("".join(lines))
    sys.stdout.flush()
    os._exit(0)  # as ours after a flushed success: no interpreter teardown


if __name__ == "__main__":
    typer.run(main)
