"""The command line. Each command module registers itself on :data:`app` when imported."""

from . import (  # noqa: F401  (each module registers its commands)
    batch_cmd,
    config_cmd,
    findings_cmd,
    review_cmds,
    sign_cmd,
    simulator_cmd,
    stats_cmd,
    verify_cmd,
)
from .app import app, main

__all__ = ["app", "main"]
