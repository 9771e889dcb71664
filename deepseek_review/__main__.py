"""The ``deepseek-review`` console script and ``python -m deepseek_review``.

``--version`` alone is answered here, before the command line (typer) is imported: the
same line as typer's ``--version`` prints, in a fraction of the time.
"""

from __future__ import annotations

import os
import sys


def main() -> None:
    """The process's own command line: ``--version`` at once, anything else by the CLI."""
    if sys.argv[1:] == ["--version"]:
        _print_version()
    from deepseek_review import collector

    collector.pause()  # resumed once the command is named, unless it is brief
    from deepseek_review.cli import main as cli_main

    cli_main()


def _print_version() -> None:
    from deepseek_review import __version__

    try:
        sys.stdout.write(f"deepseek-review {__version__}\n")
        sys.stdout.flush()
    except BrokenPipeError:  # the reader left (`| true`): nothing to say, as for any command
        pass
    # Flushed, or nobody reads it: the interpreter's teardown (an eighth of this process's
    # work) has nothing left to do, as after any successful command (cli.streams.exit_now).
    os._exit(0)


if __name__ == "__main__":
    main()
