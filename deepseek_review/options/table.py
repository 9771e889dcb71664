"""The option table, looked up: every option once, with its type, default, scopes, checks and help.

The rows are in :mod:`options.rows` and what a row is in :mod:`options.option`; everything else is
derived from :data:`OPTIONS`: the config file's keys and the ``DEEPSEEK_REVIEW_*`` variables
(:mod:`options.config`), the typer options of ``run``, ``continue`` and ``batch``
(:mod:`.cli.table`),
the library's keywords (:mod:`options.merge`), the manifest's JSON Schema (:mod:`options.schema`)
and
every check of a value, whatever its source. An error names the option as the layer that
reports it spells it (:func:`name_of`): ``--max-tokens`` on the command line, ``max_tokens`` in
a manifest or a library call; the environment and the config file name their variable or file
themselves.

Standard library only: the command line builds its options from this before anything heavy
is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Literal

from deepseek_review.errors import ConfigError
from deepseek_review.options.option import (
    COMMANDS,
    CONFIG_FILE,
    DEFAULTS,
    ENTRY,
    ENV,
    ENV_PREFIX,
    Kind,
    Option,
)
from deepseek_review.options.rows import (
    CHAT_APIS,
    CONTINUATION_STYLES,
    REASONING_LEVELS,
    SERVER_PRESETS,
    TABLE,
    TOPIC_PATTERN,
)
from deepseek_review.options.values import BadValue

__all__ = [
    "CHAT_APIS",
    "COMMANDS",
    "CONFIG_FILE",
    "CONTINUATION_STYLES",
    "DEFAULTS",
    "DEFAULT_KEYS",
    "ENTRY",
    "ENTRY_KEYS",
    "ENV",
    "ENV_PREFIX",
    "OPTIONS",
    "REASONING_LEVELS",
    "SERVER_PRESETS",
    "SETTING_KEYS",
    "TOPIC_PATTERN",
    "Kind",
    "Option",
    "check",
    "default",
    "in_scope",
    "name_of",
    "naming",
    "naming_as",
    "naming_at",
]

OPTIONS: dict[str, Option] = {o.key: o for o in TABLE}


def default(key: str) -> Any:
    """The built-in default of ``key`` (the one place it is written)."""
    return OPTIONS[key].default


def in_scope(scope: str) -> tuple[Option, ...]:
    """The options of ``scope`` (a command, ``entry``, ``config_file``, ...), in table order."""
    return tuple(o for o in TABLE if scope in o.scopes)


#: Keys an entry may hold, a manifest's ``[defaults]`` may hold, and a config file may hold.
ENTRY_KEYS: tuple[str, ...] = tuple(o.key for o in in_scope(ENTRY))
DEFAULT_KEYS: tuple[str, ...] = tuple(o.key for o in in_scope(DEFAULTS))
SETTING_KEYS: tuple[str, ...] = tuple(o.key for o in TABLE if o.scopes & {CONFIG_FILE, ENV})


# --------------------------------------------------------------------------- naming

#: An option's name in the reporting layer's spelling, and where it was set ("" when that
#: goes without saying: the command line, a library call).
_Namer = Callable[[Option], tuple[str, str]]
_NAMERS: dict[str, _Namer] = {
    "key": lambda o: (o.key, ""),
    "flag": lambda o: (o.long_flag, ""),
    # In a manifest: its key, or, for what a manifest may not set, the flag of ``batch``.
    "manifest": lambda o: (o.key if o.in_manifest else o.long_flag, ""),
}
_naming: ContextVar[_Namer] = ContextVar("deepseek_review_naming", default=_NAMERS["key"])


def _placed(text: str, where: str) -> str:
    return f"{text} ({where})" if where else text


def name_of(key: str) -> str:
    """``key`` as the layer reporting an error spells it: ``--max-tokens`` on the command
    line, ``max_tokens`` in a manifest and in a library call (the default)."""
    return _placed(*_naming.get()(OPTIONS[key]))


def switched_off(key: str) -> str:
    """The switch ``key`` turned off, as the reporting layer spells it: ``--no-stream`` on the
    command line, ``stream = false`` in a manifest or a library call, ``stream = false (entry
    2, line 10)`` for a batch entry's own setting."""
    name, where = _naming.get()(OPTIONS[key])
    return _placed(f"--no-{name[2:]}" if name.startswith("--") else f"{name} = false", where)


@contextmanager
def naming(style: Literal["key", "flag", "manifest"]) -> Iterator[None]:
    """Errors raised inside name options as ``style`` says (the CLI: ``flag``; a manifest's
    entries: ``manifest``)."""
    token = _naming.set(_NAMERS[style])
    try:
        yield
    finally:
        _naming.reset(token)


@contextmanager
def naming_at(places: Mapping[str, str]) -> Iterator[None]:
    """Inside, an option ``places`` holds is named with where it was set, ``model (entry 2,
    line 7)`` (a batch's run: its messages do not say which entry they are about); any other
    as before (``--model`` on the command line)."""
    outer = _naming.get()
    token = _naming.set(lambda o: (o.key, places[o.key]) if o.key in places else outer(o))
    try:
        yield
    finally:
        _naming.reset(token)


@contextmanager
def naming_as(names: Mapping[str, str]) -> Iterator[None]:
    """Inside, an option ``names`` holds is named as the user wrote it where its value came
    from (``DEEPSEEK_REVIEW_SIGNING_KEY``, ``pyproject.toml [tool.deepseek-review]
    endpoint``: :func:`options.config.spellings`); any other as before (``--model`` on the command
    line). An error then names the source of the value it is about, not a flag never typed."""
    if not names:
        yield
        return
    outer = _naming.get()
    token = _naming.set(lambda o: (names[o.key], "") if o.key in names else outer(o))
    try:
        yield
    finally:
        _naming.reset(token)


def check(key: str, value: Any) -> Any:
    """``value`` for ``key``, typed and checked; a :class:`~.errors.ConfigError` naming the
    option as :func:`name_of` spells it when it is out of range."""
    try:
        return OPTIONS[key].checked(value)
    except BadValue as exc:
        raise ConfigError(f"{name_of(key)} {exc.why}") from None
