"""deepseek-review: ask a DeepSeek model to review repository files, with verifiable receipts."""

__version__ = "0.1.0"
