"""Entry point for ``python -m deepseek_review.testing.simulator``."""

import sys

from deepseek_review.errors import ReviewError
from deepseek_review.testing.simulator.command import serve

if __name__ == "__main__":
    try:
        sys.exit(serve())
    except ReviewError as exc:  # one line and the exit code, as the deepseek-review CLI does
        hint = f" ({exc.hint})" if exc.hint else ""
        sys.stderr.write(f"deepseek-review: error: {exc.message}{hint}\n")
        sys.exit(exc.exit_code)
