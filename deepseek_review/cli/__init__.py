"""The command line. Each command module registers itself on :data:`app` when imported."""

from . import batch_cmd, config_cmd, review_cmds, simulator_cmd, verify_cmd  # noqa: F401
from .app import app, main

__all__ = ["app", "main"]
