"""Write the CLI reference, docs/reference/cli.md, from every command's real `--help`.

The page is generated whole: the root help, then one section per command in the order the
root help lists them (so a new command appears without editing this script), each the output
of `deepseek-review COMMAND --help` at a fixed width of 100 columns. `python
scripts/cli_reference.py` rewrites it; `--check` exits 1 if it differs (tests/project/test_readme.py
runs the same comparison, so the page never goes stale).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

PAGE = Path(__file__).resolve().parent.parent / "docs" / "reference" / "cli.md"
HEADER = """\
# CLI reference

Every command's `--help`, exactly as printed at a width of 100 columns. This page is generated
by `python scripts/cli_reference.py` and a test fails when it differs from the real output: do
not edit it by hand. The options' settings in a config file and the environment are in
[Options](options.md); exit codes in [Exit codes](exit-codes.md).
"""


def help_text(args: str) -> str:
    """The output of ``deepseek-review ARGS --help``, as a user at 100 columns sees it."""
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
    argv = [sys.executable, "-m", "deepseek_review", *args.split(), "--help"]
    out = subprocess.run(argv, capture_output=True, text=True, env=env, check=True).stdout
    return out.replace("python -m deepseek_review", "deepseek-review")


def commands(root_help: str) -> list[str]:
    """The command names the root help lists, in its order."""
    listing = root_help.split("\nCommands:\n", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^  (\S+)", listing, re.M)


def render() -> str:
    """The whole page."""
    root = help_text("")
    parts = [HEADER, "\n## `deepseek-review`\n\n```text\n", root, "```\n"]
    for name in commands(root):
        parts += [f"\n## `deepseek-review {name}`\n\n```text\n", help_text(name), "```\n"]
    return "".join(parts)


def write_or_check(page: Path, new: str, script: str, argv: list[str]) -> int:
    """Write ``new`` to ``page``; with ``--check``, exit 1 if the page differs instead."""
    if "--check" in argv:
        if not page.exists() or page.read_text(encoding="utf-8") != new:
            print(
                f"{page.relative_to(page.parents[2])}: differs from the real --help output; run "
                f"python scripts/{script}",
                file=sys.stderr,
            )
            return 1
        return 0
    page.write_text(new, encoding="utf-8")
    return 0


def main(argv: list[str]) -> int:
    return write_or_check(PAGE, render(), "cli_reference.py", argv)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
