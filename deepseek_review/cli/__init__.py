"""The command line: :data:`app` and its console script :func:`main`. Each command module
registers its commands on the app when imported, here, in the order ``--help`` lists them.
"""

from importlib import import_module

from deepseek_review.cli.app import app, main

#: The modules of :mod:`deepseek_review.cli` that define commands, in ``--help`` order.
COMMAND_MODULES = (
    "review_cmds",  # run, continue, show
    "verify_cmd",
    "findings_cmd",
    "batch_cmd",
    "sign_cmd",  # sign, attest
    "stats_cmd",
    "config_cmd",
    "simulator_cmd",
)
for _name in COMMAND_MODULES:
    import_module(f"{__name__}.{_name}")

__all__ = ["COMMAND_MODULES", "app", "main"]
