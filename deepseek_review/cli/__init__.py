"""The command line. Each command module registers itself on :data:`app` when imported, and
the app's group imports only the module of the command that was named (``commands.py``).
"""

from .app import app, main

__all__ = ["app", "main"]
