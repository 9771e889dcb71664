"""Keep the README's copies of `--help` equal to the real output.

The README holds blocks between `<!-- help: ARGS -->` and `<!-- /help -->` markers;
`python scripts/readme_help.py` rewrites each with the output of `deepseek-review ARGS --help`
(at a fixed width of 100 columns), and `--check` exits 1 if any differs (tests/test_readme.py
runs the same comparison).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parent.parent / "README.md"
BLOCK = re.compile(
    r"(<!-- help: (?P<args>[^>]*?) -->\n```text\n)(?P<body>.*?)(```\n<!-- /help -->)", re.S
)


def help_text(args: str) -> str:
    env = {**os.environ, "COLUMNS": "100", "NO_COLOR": "1", "TERM": "dumb"}
    argv = [sys.executable, "-m", "deepseek_review", *args.split(), "--help"]
    out = subprocess.run(argv, capture_output=True, text=True, env=env, check=True).stdout
    return out.replace("python -m deepseek_review", "deepseek-review")


def render(text: str) -> str:
    return BLOCK.sub(lambda m: m.group(1) + help_text(m.group("args")) + m.group(4), text)


def main(argv: list[str]) -> int:
    text = README.read_text(encoding="utf-8")
    new = render(text)
    if "--check" in argv:
        if new != text:
            print(
                "README.md: a --help copy differs from the real output; run "
                "python scripts/readme_help.py",
                file=sys.stderr,
            )
            return 1
        return 0
    README.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
