"""Typer options from the option table: ``run``, ``continue`` and ``batch`` take every option
of their scope from :mod:`options.table`, so a flag, its help and its default are written once and
the commands cannot drift apart.

A command function decorated with :func:`table_command` receives one :class:`Flags` instead
of a parameter per option: typer sees the generated signature.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from deepseek_review.cli.app import (
    JsonOpt,
    QuietOpt,
    VerboseOpt,
    app,
    parse_json_object,
    typed_path,
)
from deepseek_review.options.rows import TEMPLATES
from deepseek_review.options.table import OPTIONS, Option, in_scope
from deepseek_review.options.values import OneOf

if TYPE_CHECKING:
    from deepseek_review.signing.segments import SigningKey

_PY = {"str": str, "path": Path, "int": int, "float": float, "json": str}


def choices(option: Option) -> tuple[str, ...]:
    """The values ``option`` takes, when they are a few names (none for free values)."""
    if isinstance(option.check, OneOf):
        return option.check.choices
    return TEMPLATES if option.key == "template" else ()


#: What the shell's completion offers for a free value (any other is accepted): DeepSeek's
#: model ids as DeepSeek's API and Ollama serve them (the V4 ids; the legacy aliases).
SUGGESTIONS = {
    "model": ("deepseek-v4-flash", "deepseek-v4-pro", "deepseek-chat", "deepseek-reasoner")
}


def completer(names: tuple[str, ...]) -> Callable[[str], list[str]]:
    """The shell's completion of one of ``names``: those starting with what was typed."""

    def complete(incomplete: str) -> list[str]:
        return [n for n in names if n.startswith(incomplete)]

    return complete


def choice_settings(names: tuple[str, ...]) -> dict[str, Any]:
    """What a typer option of one of ``names`` is given: the help shows the names instead of
    ``<str>``, and the shell's completion offers them."""
    if not names:
        return {}
    return {"metavar": "[" + "|".join(names) + "]", "autocompletion": completer(names)}


def _completion(option: Option) -> dict[str, Any]:
    """The help's metavar and the shell's completion of ``option``: its choices, or the
    suggestions for a free value (the help then keeps its type)."""
    if option.key in SUGGESTIONS:
        return {"autocompletion": completer(SUGGESTIONS[option.key])}
    return choice_settings(choices(option))


def _parameter(option: Option, command: str) -> inspect.Parameter:
    """The typer parameter of ``option``: its type as the annotation and typer's Option or
    Argument as the default. The value is None ("not given") unless it is a plain switch (False) or
    required (``...``); the table fills in the real default later."""
    help_text = option.help_text()
    kind: Any = _PY.get(option.kind)
    if option.argument:
        info: Any = typer.Argument(..., help=help_text)
    else:
        decls = [option.long_flag, *option.aliases, *([option.short] if option.short else [])]
        default: Any = None
        if option.kind == "bool":
            if option.negatable:
                decls[0] = f"{option.long_flag}/--no-{option.long_flag[2:]}"
                kind = bool | None
            else:
                kind, default = bool, False
        elif option.kind == "paths" or command in option.repeats:
            kind = list[str] | None
        else:
            kind = kind | None
        if option.required:
            default = ...
        info = typer.Option(
            default, *decls, help=help_text, show_default=False, **_completion(option)
        )
    return inspect.Parameter(
        option.key, inspect.Parameter.KEYWORD_ONLY, default=info, annotation=kind
    )


def parameters(command: str) -> list[inspect.Parameter]:
    """The typer parameters of ``command``: its options from the table, in table order."""
    return [_parameter(option, command) for option in in_scope(command)]


class Flags:
    """What one command line gave: table options by key, and the command's own flags."""

    def __init__(self, values: dict[str, Any]) -> None:
        self.values = values

    def __getitem__(self, key: str) -> Any:
        return self.values.get(key)

    def root(self) -> Path:
        """The repository the command works in: ``--repo-root``, else the one around here."""
        from deepseek_review import api

        return api.repo_root(self["repo_root"])

    def signing_key(self, root: Path) -> SigningKey | None:
        """The key ``--sign`` signs with, checked now by signing a probe; None unsigned."""
        from deepseek_review import api

        return api.signing_key(self["sign"], self["signing_key"], repo_root=root)

    def given(self, root: Path | None = None) -> dict[str, Any]:
        """The table options given (None, an empty list and a plain switch left off are not
        given), JSON objects parsed; with ``root``, typed paths made root-relative."""
        out: dict[str, Any] = {}
        for key, value in self.values.items():
            option = OPTIONS.get(key)
            if option is None or option.cli_only or option.argument or value in (None, []):
                continue
            if option.kind == "bool" and not option.negatable and value is False:
                continue
            if option.kind == "json":
                value = parse_json_object(value, option.long_flag)
            if option.under_root and root is not None:
                typed = [
                    typed_path(root, v) for v in ([value] if isinstance(value, str) else value)
                ]
                value = typed[0] if isinstance(value, str) else typed
            out[key] = value
        return out


def table_command(
    name: str, *, epilog: str, json: bool = True
) -> Callable[[Callable[[Flags], None]], Any]:
    """Register ``func(flags)`` as command ``name`` with the table's options of ``name``,
    ``--json`` (unless ``json`` is off), ``-v`` and ``-q``."""

    def register(func: Callable[[Flags], None]) -> Callable[[Flags], None]:
        def command(**values: Any) -> None:
            func(Flags(values))

        extra = [("as_json", JsonOpt, False)] if json else []
        extra += [("verbose", VerboseOpt, False), ("quiet", QuietOpt, False)]
        own = [
            inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=d, annotation=a)
            for n, a, d in extra
        ]
        command.__signature__ = inspect.Signature([*parameters(name), *own])  # type: ignore[attr-defined]
        command.__doc__ = func.__doc__
        command.__name__ = func.__name__
        app.command(name, epilog=epilog)(command)
        return func

    return register
