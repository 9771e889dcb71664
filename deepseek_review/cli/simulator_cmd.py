"""``simulator``: serve the bundled test double from the command line."""

from __future__ import annotations

import typer

from .app import app


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def simulator(ctx: typer.Context) -> None:
    """Serve the bundled OpenAI-compatible simulator (a test double, not a model).

    \b
    Example: deepseek-review simulator --port 8080 --latency 0.2 --capacity 8
    """
    from ..simulator import serve

    raise typer.Exit(serve(list(ctx.args), prog="deepseek-review simulator"))
