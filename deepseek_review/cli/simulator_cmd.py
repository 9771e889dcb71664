"""``simulator``: serve the bundled test double from the command line."""

import typer

from deepseek_review.cli.app import app


@app.command(
    context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
    add_help_option=False,
)
def simulator(ctx: typer.Context) -> None:
    """Serve the bundled OpenAI-compatible simulator (a test double, not a model).

    Its options, defaults, fault kinds and an example: ``deepseek-review simulator --help``."""
    from deepseek_review.testing.simulator import serve

    raise typer.Exit(serve(list(ctx.args), prog="deepseek-review simulator"))
