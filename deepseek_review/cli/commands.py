"""The command table, and the typer group that imports only the command that was named.

typer builds every command of an app before it parses a word, and each command module pulls
in its own imports: at start-up that was about half of a ``run``. Here each command is one
row (name, defining module, one-line summary) in :data:`COMMANDS`, in the order ``--help``
lists them; :class:`LazyGroup` imports a command's module only when that command is looked
up, and ``--help`` prints the summaries from the table without importing any module.

The summary is the first paragraph of the command's help, written only here: a command
function's docstring holds the rest of its help (or nothing), and :func:`_build` joins them.
"""

from __future__ import annotations

from collections.abc import Iterator, MutableMapping
from importlib import import_module
from typing import Any, NamedTuple

from typer import _click
from typer.core import TyperGroup
from typer.main import get_command_from_info, get_command_name


class Entry(NamedTuple):
    module: str
    """The module of :mod:`deepseek_review.cli` whose import registers the command."""
    summary: str
    """The first paragraph of the command's help; ``--help`` shortens it to a line."""


COMMANDS: dict[str, Entry] = {
    "run": Entry(
        "review_cmds",
        "Run one review: gather context, send it, write the answer, receipt and request record.",
    ),
    "continue": Entry(
        "review_cmds", "Continue a truncated review from the last segment of its chain."
    ),
    "show": Entry(
        "review_cmds",
        "Print a chain's whole stitched answer, after checking every segment's hash.",
    ),
    "verify": Entry(
        "verify_cmd",
        "Check receipts: schema, answer hash, chain, context files, the exact prompt, and "
        "signatures.",
    ),
    "findings": Entry(
        "findings_cmd",
        "Export the findings block of reviews made with a findings-asking template.",
    ),
    "batch": Entry(
        "batch_cmd",
        "Run every review of a manifest, N at a time; re-running resumes; --shard splits it.",
    ),
    "sign": Entry(
        "sign_cmd",
        "Sign every segment that verifies and has no signature yet: reviews written without "
        "--sign, or a run stopped between a receipt and its signature.",
    ),
    "attest": Entry(
        "sign_cmd",
        "Write the predicate of a GitHub artifact attestation (actions/attest's "
        "predicate-path) over the reviews; print its predicate type (actions/attest's "
        "predicate-type).",
    ),
    "stats": Entry(
        "stats_cmd",
        "Count reviews, segments and tokens per model and per month, read from the receipts.",
    ),
    "config": Entry(
        "config_cmd",
        "Show every setting's effective value and its source (flag, env, config file, default).",
    ),
    "simulator": Entry(
        "simulator_cmd",
        "Serve the bundled OpenAI-compatible simulator (a test double, not a model).",
    ),
}


def _build(name: str) -> _click.Command:
    """Import the module of command ``name`` (it registers itself on the app) and turn
    that one registration into a click command whose help starts with the table's summary."""
    from .app import app

    import_module(f"{__package__}.{COMMANDS[name].module}")
    info = next(
        c
        for c in app.registered_commands
        if (c.name or get_command_name(c.callback.__name__ if c.callback else "")) == name
    )
    command = get_command_from_info(
        info,
        pretty_exceptions_short=app.pretty_exceptions_short,
        rich_markup_mode=app.rich_markup_mode,
    )
    return _with_summary(name, command)


def _with_summary(name: str, command: _click.Command) -> _click.Command:
    """``command`` with the table's summary as the first paragraph of its help."""
    rest = command.help or ""
    command.help = COMMANDS[name].summary + (f"\n\n{rest}" if rest else "")
    return command


class _Commands(MutableMapping[str, _click.Command]):
    """The group's commands: every name of the table, each built on first access."""

    def __init__(self, built: dict[str, _click.Command]) -> None:
        self._built = {n: _with_summary(n, c) if n in COMMANDS else c for n, c in built.items()}

    def __getitem__(self, name: str) -> _click.Command:
        if name not in self._built:
            if name not in COMMANDS:
                raise KeyError(name)
            self._built[name] = _build(name)
        return self._built[name]

    def __setitem__(self, name: str, command: _click.Command) -> None:
        self._built[name] = command

    def __delitem__(self, name: str) -> None:
        del self._built[name]

    def __iter__(self) -> Iterator[str]:
        yield from COMMANDS
        yield from (n for n in self._built if n not in COMMANDS)

    def __len__(self) -> int:
        return len(COMMANDS) + sum(n not in COMMANDS for n in self._built)


class LazyGroup(TyperGroup):
    """The app's group: commands from :data:`COMMANDS`, imported when named."""

    def __init__(self, *, commands: dict[str, _click.Command] | None = None, **attrs: Any) -> None:
        # typer hands over the commands already registered: in a fresh process none (no
        # command module is imported yet); in a process that ran commands before, those.
        super().__init__(**attrs)
        self.commands = _Commands(dict(commands or {}))

    def resolve_command(
        self, ctx: _click.Context, args: list[str]
    ) -> tuple[str | None, _click.Command | None, list[str]]:
        name, command, rest = super().resolve_command(ctx, args)
        if command is not None:
            from .repeats import refuse_repeats

            refuse_repeats(ctx, command, rest)
        return name, command, rest

    def list_commands(self, ctx: _click.Context) -> list[str]:
        return list(self.commands)

    def format_commands(self, ctx: _click.Context, formatter: _click.HelpFormatter) -> None:
        """The ``Commands`` section, as click writes it, from the table alone."""
        limit = formatter.width - 6 - max(len(name) for name in COMMANDS)
        rows = [
            (name, _click.utils.make_default_short_help(entry.summary, limit).strip())
            for name, entry in COMMANDS.items()
        ]
        with formatter.section("Commands"):
            formatter.write_dl(rows)
