"""The package's version, in one place (pyproject.toml carries the same string; a test checks)."""

__version__ = "0.1.0"
