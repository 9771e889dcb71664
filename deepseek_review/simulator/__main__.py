"""Entry point for ``python -m deepseek_review.simulator``."""

import sys

from deepseek_review.simulator.command import serve

if __name__ == "__main__":
    sys.exit(serve())
