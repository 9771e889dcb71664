"""The ``deepseek-review`` console script and ``python -m deepseek_review``.

``--version`` alone is answered here, before the command line (typer) is imported: the same
line as typer's ``--version`` prints, within the 0.1 s a version check may take.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    """The process's own command line: ``--version`` at once, anything else by the CLI."""
    if sys.argv[1:] == ["--version"]:
        _print_version()
        return
    from deepseek_review.cli import main as cli_main

    cli_main()


def _print_version() -> None:
    from deepseek_review._version import __version__

    try:
        sys.stdout.write(f"deepseek-review {__version__}\n")
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left (`| true`): nothing to say, as for any command
        # Python's own advice: stdout to devnull, so the flush at exit does not fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


if __name__ == "__main__":
    main()
