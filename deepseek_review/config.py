"""Settings: flags > environment > config file > defaults, and where each value came from.

The config file is the repository's ``.deepseek-review.toml`` (top-level keys) or the
``[tool.deepseek-review]`` table of its ``pyproject.toml``; having settings in both is refused,
so there is never a question of which one won. Environment variables are
``DEEPSEEK_REVIEW_<KEY>`` (upper case), plus ``OLLAMA_HOST`` for the endpoint, read by the
endpoint rules themselves. ``deepseek-review config`` shows every effective value and its source.
"""

from __future__ import annotations

import difflib
import logging
import math
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .errors import ConfigError

CONFIG_FILE = ".deepseek-review.toml"
PYPROJECT_TABLE = "deepseek-review"
ENV_PREFIX = "DEEPSEEK_REVIEW_"


log = logging.getLogger("deepseek_review")

#: Why a value is out of range (None when it is fine).
Check = Callable[[Any], str | None]


def _at_least(low: float) -> Check:
    def check(v: Any) -> str | None:
        ok = math.isfinite(v) and v >= low
        return None if ok else f"must be at least {low:g}, got {v}"

    return check


def _positive(v: Any) -> str | None:
    return None if math.isfinite(v) and v > 0 else f"must be positive, got {v}"


def _one_of(*choices: str) -> Check:
    return lambda v: None if v in choices else f"must be one of {', '.join(choices)}, not {v!r}"


def _temperature(v: Any) -> str | None:
    return None if 0 <= v <= 2 else f"must be between 0 and 2, got {v}"


def _server(v: Any) -> str | None:
    from .pipeline import SERVER_PRESETS  # only when a file or variable sets it

    return _one_of(*SERVER_PRESETS)(v)


@dataclass(frozen=True)
class Key:
    name: str
    type: type
    default: Any
    help: str
    check: Check | None = None
    """Checked for values from the environment and the config file, so an error names the
    variable or file that holds it (a flag's value is checked where it is used)."""


KEYS: dict[str, Key] = {
    k.name: k
    for k in (
        Key("model", str, "deepseek-v4-flash", "model name as the server knows it"),
        Key("endpoint", str, None, "chat-completions URL or base URL (else OLLAMA_HOST)"),
        Key("output_dir", str, "reviews", "output folder, relative to the repository root"),
        Key("template", str, "default", "bundled template name"),
        Key("temperature", float, 0.0, "sampling temperature (always sent)", _temperature),
        Key("max_tokens", int, 8192, "completion token cap", _positive),
        Key("max_continuations", int, 3, "continuations when cut off (0 disables)", _at_least(0)),
        Key(
            "continuation_style",
            str,
            "prefill",
            "prefill or directive",
            _one_of("prefill", "directive"),
        ),
        Key("continuation_model", str, None, "model for continuations"),
        Key("continuation_max_tokens", int, None, "token cap for continuations", _positive),
        Key("server", str, "ollama", "ollama, llama.cpp, vllm or deepseek", _server),
        Key("stream", bool, True, "stream answers (SSE)"),
        Key("max_file_bytes", int, 200_000, "refuse a context file larger than this", _positive),
        Key("max_context_bytes", int, 400_000, "refuse a context larger than this", _positive),
        Key(
            "context_window",
            int,
            None,
            "the model's context window, for a pre-flight warning",
            _positive,
        ),
        Key(
            "api_key_env",
            str,
            None,
            "environment variable holding the API key (else OLLAMA_API_KEY, sent over https"
            " only); a flag or the environment only",
        ),
        Key("max_attempts", int, 5, "attempts per request", _at_least(1)),
        Key("connect_timeout", float, 10.0, "seconds to connect", _positive),
        Key("read_timeout", float, 600.0, "seconds to wait for the next bytes", _positive),
        Key("total_timeout", float, 1800.0, "seconds one attempt may take in all", _positive),
        Key("jobs", int, 4, "concurrent reviews in a batch", _at_least(1)),
    )
}


#: Settings that choose which secret is sent: a file in the repository under review must not
#: set them (a pull request could otherwise send CI's secrets wherever it likes).
OPERATOR_ONLY = frozenset({"api_key_env"})


@dataclass(frozen=True)
class Setting:
    name: str
    value: Any
    source: str
    """``flag``, ``env DEEPSEEK_REVIEW_X``, ``config <file>`` or ``default``."""

    @property
    def named_by(self) -> str | None:
        """The repository file that chose this value, or None when the operator did (a flag,
        the environment) or it is the default. Such a value must not steer a secret."""
        return self.source.removeprefix("config ") if self.source.startswith("config ") else None


def _coerce(key: Key, raw: Any, where: str) -> Any:
    """A config-file value or an environment string, as ``key.type`` and within its range."""
    value = _typed(key, raw, where)
    why = key.check(value) if key.check is not None and value is not None else None
    if why is not None:
        raise ConfigError(f"{where}: {key.name} {why}")
    return value


def _typed(key: Key, raw: Any, where: str) -> Any:
    """A config-file value (already typed by TOML) or an environment string, as ``key.type``."""
    if isinstance(raw, str) and key.type is not str:
        text = raw.strip()
        try:
            if key.type is bool:
                if text.lower() in ("1", "true", "yes", "on"):
                    return True
                if text.lower() in ("0", "false", "no", "off"):
                    return False
                raise ValueError(text)
            return key.type(text)
        except ValueError:
            raise ConfigError(
                f"{where}: {key.name} must be {key.type.__name__}, got {raw!r}"
            ) from None
    if key.type is float and isinstance(raw, int) and not isinstance(raw, bool):
        return float(raw)
    if not isinstance(raw, key.type) or (key.type is int and isinstance(raw, bool)):
        raise ConfigError(
            f"{where}: {key.name} must be {key.type.__name__}, got {type(raw).__name__}"
        )
    return raw


def _read_toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read ({exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc})") from None
    except RecursionError:  # tomllib recurses per nested array or inline table
        raise ConfigError(f"{path}: not valid TOML (nested too deeply)") from None


def load_file(root: Path) -> tuple[dict[str, Any], str | None]:
    """The config file's settings (validated) and its name, or ({}, None)."""
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
        return {}, None
    if len(found) > 1:
        raise ConfigError(
            f"settings in both {CONFIG_FILE} and pyproject.toml [tool.{PYPROJECT_TABLE}]; keep one"
        )
    data, name = found[0]
    values: dict[str, Any] = {}
    for k, v in data.items():
        key = KEYS.get(k.replace("-", "_"))
        if key is None:
            raise ConfigError(f"{name}: unknown setting {k!r} (see `deepseek-review config`)")
        if key.name in OPERATOR_ONLY:
            raise ConfigError(
                f"{name}: {key.name} cannot be set in the repository's config (a file under "
                f"review must not choose which secret is sent); use --{key.name.replace('_', '-')}"
                f" or {ENV_PREFIX}{key.name.upper()}"
            )
        values[key.name] = _coerce(key, v, name)
    return values, name


@dataclass(frozen=True)
class Settings:
    """Every setting's effective value and source."""

    items: dict[str, Setting]

    def __getitem__(self, name: str) -> Any:
        return self.items[name].value

    def as_dict(self) -> dict[str, dict[str, Any]]:
        return {k: {"value": s.value, "source": s.source} for k, s in self.items.items()}


def resolve(
    root: Path, flags: Mapping[str, Any] | None = None, env: Mapping[str, str] | None = None
) -> Settings:
    """Effective settings. ``flags`` holds only options given on the command line (not None)."""
    import os

    flags = flags or {}
    env = os.environ if env is None else env
    _warn_unknown_env(env)
    file_values, file_name = load_file(root)
    items: dict[str, Setting] = {}
    for name, key in KEYS.items():
        env_name = ENV_PREFIX + name.upper()
        if flags.get(name) is not None:
            items[name] = Setting(name, flags[name], "flag")
        elif env.get(env_name, "").strip():
            items[name] = Setting(name, _coerce(key, env[env_name], env_name), f"env {env_name}")
        elif name == "endpoint" and env.get("OLLAMA_HOST", "").strip():
            items[name] = Setting(name, None, "env OLLAMA_HOST")
        elif name in file_values:
            items[name] = Setting(name, file_values[name], f"config {file_name}")
        else:
            items[name] = Setting(name, key.default, "default")
    return Settings(items)


#: Variables of ours that are not settings: read where they are used.
OTHER_ENV = frozenset({"DEEPSEEK_REVIEW_ALLOWED_ENDPOINTS", "DEEPSEEK_REVIEW_CRASH_AT"})
_warned: set[str] = set()


def _warn_unknown_env(env: Mapping[str, str]) -> None:
    """A misspelt variable (``DEEPSEEK_REVIEW_MAX_TOKEN``) would otherwise do nothing silently."""
    known = {ENV_PREFIX + name.upper() for name in KEYS} | OTHER_ENV
    for name in env:
        if name.startswith(ENV_PREFIX) and name not in known and name not in _warned:
            _warned.add(name)
            close = difflib.get_close_matches(name, sorted(known), n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            log.warning("%s is not a setting of deepseek-review; ignored%s", name, hint)


#: Settings that are also review options (a batch entry may set them); the others (jobs,
#: attempts, timeouts) belong to a whole run.
REVIEW_KEYS = frozenset(KEYS) - {
    "jobs",
    "max_attempts",
    "connect_timeout",
    "read_timeout",
    "total_timeout",
}


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
        if name in REVIEW_KEYS and s.source != "default" and s.value is not None
    }
