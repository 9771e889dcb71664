"""``python -m deepseek_review``: the same command line as the ``deepseek-review`` script."""

from deepseek_review.cli import main

if __name__ == "__main__":
    main()
