"""Settings: flags > environment > config file > defaults, and where each value came from.

The config file is the repository's ``.deepseek-review.toml`` (top-level keys) or the
``[tool.deepseek-review]`` table of its ``pyproject.toml``; having settings in both is refused,
so there is never a question of which one won. Environment variables are
``DEEPSEEK_REVIEW_<KEY>`` (upper case), plus ``OLLAMA_HOST`` for the endpoint, read by the
endpoint rules themselves. ``deepseek-review config`` shows every effective value and its source.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

from deepseek_review.errors import ConfigError
from deepseek_review.options.option import (
    ALLOWED_ENV,
    CRASH_ENV,
    ENDPOINTS_ENV,
    HOOK_FAIL_ON_ENV,
)
from deepseek_review.options.table import CONFIG_FILE as _CONFIG_SCOPE
from deepseek_review.options.table import ENV, ENV_PREFIX, OPTIONS, SETTING_KEYS, Option
from deepseek_review.options.values import BadValue

CONFIG_FILE = ".deepseek-review.toml"
PYPROJECT_TABLE = "deepseek-review"
#: A config file (or the pyproject.toml holding one) bigger than this is refused unread.
MAX_CONFIG_BYTES = 4 * 1024 * 1024


#: The settings: the options a config file or the environment may set (see :mod:`options.table`).
KEYS: dict[str, Option] = {k: OPTIONS[k] for k in SETTING_KEYS}


class Setting(NamedTuple):
    """One setting's value and where it came from (flag, environment, config file, default)."""

    name: str
    value: Any
    source: str
    """``flag``, ``env DEEPSEEK_REVIEW_X``, ``config <file>``, ``manifest ...`` or ``default``."""
    named_by: str | None = None
    """The repository file that chose this value (the config file, the manifest), or None when
    the operator did (a flag, the environment) or it is the default. Kept for the options whose
    origin matters: such a value must not steer a secret."""


def _checked(option: Option, raw: Any, where: str, *, text: bool = False) -> Any:
    """A config-file value (typed by TOML) or an environment variable's ``text``, typed and
    in range."""
    try:
        return option.parse_text(raw) if text else option.checked(raw)
    except BadValue as exc:
        raise ConfigError(f"{where} {exc.why}") from None


def _read_toml(path: Path) -> dict[str, Any]:
    import tomllib  # only when a config file exists: most runs have none

    from deepseek_review.util.safejson import read_file

    try:
        return tomllib.loads(read_file(path, max_bytes=MAX_CONFIG_BYTES).decode("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: cannot read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise ConfigError(f"{path}: not valid TOML (nested too deeply)") from None


class Refusal(NamedTuple):
    """A setting that was read but refused (``config`` shows it; a run stops on it)."""

    name: str
    """Where it was read, as the user wrote it: ``pyproject.toml [tool.deepseek-review]
    endpoint``, ``DEEPSEEK_REVIEW_MAX_TOKENS``, or a file as a whole."""
    key: str | None
    """The setting it would have set; None for an unknown key or a whole file."""
    value: Any
    message: str
    """The one-line error a run stops with."""


#: Collects refusals instead of raising the first (``config`` shows them all); None: raise.
_Refusals = list[Refusal] | None


def _refuse(refused: _Refusals, refusal: Refusal) -> None:
    if refused is None:
        raise ConfigError(refusal.message)
    refused.append(refusal)


def _find_file(root: Path) -> tuple[dict[str, Any], str] | None:
    own = root / CONFIG_FILE
    pyproject = root / "pyproject.toml"
    found: list[tuple[dict[str, Any], str]] = []
    if own.is_file():
        found.append((_read_toml(own), CONFIG_FILE))
    if pyproject.is_file():
        table = _read_toml(pyproject).get("tool", {}).get(PYPROJECT_TABLE)
        if table is not None:
            if not isinstance(table, dict):
                raise ConfigError(f"pyproject.toml: [tool.{PYPROJECT_TABLE}] must be a table")
            found.append((table, f"pyproject.toml [tool.{PYPROJECT_TABLE}]"))
    if not found:
        return None
    if len(found) > 1:
        raise ConfigError(
            f"settings in both {CONFIG_FILE} and pyproject.toml [tool.{PYPROJECT_TABLE}]; keep one"
        )
    return found[0]


def _unknown(name: str, k: str) -> str:
    known = sorted(o.key for o in KEYS.values() if _CONFIG_SCOPE in o.scopes)
    close = difflib.get_close_matches(k.replace("-", "_"), known, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"{name} {k}: unknown setting{hint} (see `deepseek-review config`)"


def load_file(root: Path, refused: _Refusals = None) -> tuple[dict[str, Any], str | None]:
    """The config file's settings (validated) and its name, or ({}, None). With ``refused``,
    a refused key or file is added to it and left out rather than raised."""
    try:
        found = _find_file(root)
    except ConfigError as exc:
        _refuse(refused, Refusal(exc.message.partition(":")[0], None, None, exc.message))
        return {}, None
    if found is None:
        return {}, None
    data, name = found
    values: dict[str, Any] = {}
    for k, v in data.items():
        option = OPTIONS.get(k.replace("-", "_"))
        if option is None or (option.refusal is None and _CONFIG_SCOPE not in option.scopes):
            _refuse(refused, Refusal(f"{name} {k}", None, v, _unknown(name, k)))
            continue
        where = f"{name} {k}"
        if _CONFIG_SCOPE not in option.scopes:
            why = option.not_here("the repository's config")
            _refuse(refused, Refusal(where, option.key, v, f"{where} {why}"))
            continue
        try:
            values[option.key] = _checked(option, v, where)
        except ConfigError as exc:
            _refuse(refused, Refusal(where, option.key, v, exc.message))
    return values, name


@dataclass(frozen=True)
class Settings:
    """Every setting's effective value and source, and what was read but refused (only
    when asked to collect it: :func:`resolve` with ``collect``)."""

    items: dict[str, Setting]
    refused: tuple[Refusal, ...] = ()

    def __getitem__(self, name: str) -> Any:
        return self.items[name].value

    def as_dict(self) -> dict[str, dict[str, Any]]:
        return {k: {"value": s.value, "source": s.source} for k, s in self.items.items()}


def spelled(setting: Setting) -> str | None:
    """Where ``setting``'s value was written, as the user wrote it (the environment
    variable, ``<file> <key>``); None for a flag, a keyword or the default, which the
    reporting layer spells (:func:`deepseek_review.options.table.name_of`)."""
    kind, _, where = setting.source.partition(" ")
    if kind == "env":
        return where
    if kind == "config":
        return f"{where} {setting.name}"
    return None


def spellings(settings: Mapping[str, Setting]) -> dict[str, str]:
    """Each setting's :func:`spelled` name, for those that have one
    (:func:`options.table.naming_as`)."""
    out = {}
    for key, s in settings.items():
        name = spelled(s)
        if name is not None:
            out[key] = name
    return out


def resolve(
    root: Path,
    flags: Mapping[str, Any] | None = None,
    env: Mapping[str, str] | None = None,
    *,
    collect: bool = False,
) -> Settings:
    """Effective settings. ``flags`` holds only options given on the command line (not None).
    A refused value raises its :class:`ConfigError`; with ``collect`` it is listed in
    :attr:`Settings.refused` instead and the setting falls back to the next source."""
    import os

    flags = flags or {}
    env = os.environ if env is None else env
    refused: list[Refusal] | None = [] if collect else None
    _warn_unknown_env(env)
    file_values, file_name = load_file(root, refused)
    items: dict[str, Setting] = {}
    for name, option in KEYS.items():
        env_name = option.env_name
        if flags.get(name) is not None:
            items[name] = Setting(name, flags[name], "flag")
            continue
        if env_name is not None and env.get(env_name, "").strip():
            try:
                value = _checked(option, env[env_name], env_name, text=True)
            except ConfigError as exc:
                _refuse(refused, Refusal(env_name, name, env[env_name], exc.message))
            else:
                items[name] = Setting(name, value, f"env {env_name}")
                continue
        if name == "endpoint" and env.get("OLLAMA_HOST", "").strip():
            items[name] = Setting(name, None, "env OLLAMA_HOST")
        elif name in file_values:
            named_by = file_name if option.origin_matters else None
            items[name] = Setting(name, file_values[name], f"config {file_name}", named_by)
        else:
            items[name] = Setting(name, option.default, "default")
    return Settings(items, tuple(refused or ()))


_warned: set[str] = set()


def _warn_unknown_env(env: Mapping[str, str]) -> None:
    """A misspelt variable (``DEEPSEEK_REVIEW_MAX_TOKEN``) would otherwise do nothing silently."""
    ours = [n for n in env if n.startswith(ENV_PREFIX) and n not in _warned]
    if not ours:
        return
    from deepseek_review.util.logs import log

    known = {ENV_PREFIX + k.upper() for k, o in OPTIONS.items() if ENV in o.scopes}
    known |= {ALLOWED_ENV, CRASH_ENV, ENDPOINTS_ENV, HOOK_FAIL_ON_ENV}
    for name in ours:
        if name not in known:
            _warned.add(name)
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            log.warning("%s is not a setting of deepseek-review; ignored%s", name, hint)


def configured_review_values(
    root: Path, env: Mapping[str, str] | None = None
) -> dict[str, Setting]:
    """Review options set by the environment or the config file (not the built-in defaults),
    with their sources.

    A batch puts these below its manifest's ``[defaults]``: the manifest is more specific
    than the repository's configuration.
    """
    settings = resolve(root, env=env)
    return {
        name: s
        for name, s in settings.items.items()
        if OPTIONS[name].review and s.source != "default" and s.value is not None
    }
