"""Values of the option table: types, range checks, and the words that say why a value is
refused (the same words for a flag, a variable, a config file, a manifest and a keyword).

Standard library only, like :mod:`deepseek_review.options.table`.
"""

import math
import os
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

# The checks are named tuples: immutable plain values.


def _num(v: Any) -> str:
    return str(v)


class Positive(NamedTuple):
    unit: str = ""

    def why(self, v: Any) -> str | None:
        if math.isfinite(v) and v > 0:
            return None
        return (
            f"must be a positive number of {self.unit}, got {_num(v)}"
            if self.unit
            else (f"must be positive, got {_num(v)}")
        )

    def schema(self) -> dict[str, Any]:
        return {"minimum": 0, "exclusiveMinimum": True}  # JSON Schema draft 4, as taplo reads


class AtLeast(NamedTuple):
    low: int
    unit: str = ""

    def why(self, v: Any) -> str | None:
        if math.isfinite(v) and v >= self.low:
            return None
        unit = f" {self.unit}" if self.unit else ""
        bound = "0 or more" if self.low == 0 else f"at least {self.low}"
        return f"must be {bound}{unit}, got {_num(v)}"

    def schema(self) -> dict[str, Any]:
        return {"minimum": self.low}


class Between(NamedTuple):
    low: float
    high: float

    def why(self, v: Any) -> str | None:
        ok = self.low <= v <= self.high
        return None if ok else f"must be between {self.low:g} and {self.high:g}, got {_num(v)}"

    def schema(self) -> dict[str, Any]:
        return {"minimum": self.low, "maximum": self.high}


class OneOf(NamedTuple):
    choices: tuple[str, ...]

    def why(self, v: Any) -> str | None:
        return None if v in self.choices else f"must be one of {', '.join(self.choices)}, not {v!r}"

    def schema(self) -> dict[str, Any]:
        return {"enum": list(self.choices)}


class NotBlank(NamedTuple):
    def why(self, v: Any) -> str | None:
        return None if v.strip() else "is empty"

    def schema(self) -> dict[str, Any]:
        return {"pattern": r"\S"}


class Matches(NamedTuple):
    pattern: str
    rule: str

    def why(self, v: Any) -> str | None:
        return None if re.fullmatch(self.pattern, v) else f"{v!r}: {self.rule}"

    def schema(self) -> dict[str, Any]:
        return {"pattern": f"^{self.pattern}$"}


Check = Positive | AtLeast | Between | OneOf | NotBlank | Matches


class BadValue(ValueError):
    """A value the table refuses; ``why`` follows the option's name in the message."""

    def __init__(self, why: str) -> None:
        super().__init__(why)
        self.why = why


_WANT = {
    "str": "a string",
    "path": "a string",
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "json": "a table (JSON object)",
    "paths": "a path or glob, or a non-empty list of them",
}


def describe(value: Any) -> str:
    """What ``value`` is, in a manifest's or a config file's words."""
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list | tuple):
        return "a list" if value else "an empty list"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


def typed(kind: str, value: Any) -> Any:
    """``value`` as a ``kind`` (an int is a float too), or :class:`BadValue` saying why not."""
    ok: bool
    if kind == "path" and isinstance(value, os.PathLike):
        value = os.fspath(value)
    if kind in ("str", "path"):
        ok = isinstance(value, str)
    elif kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "float":
        ok = isinstance(value, int | float) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif kind == "bool":
        ok = isinstance(value, bool)
    elif kind == "json":
        ok = isinstance(value, Mapping)
        value = dict(value) if ok else value
    else:
        return _paths(value)
    if not ok:
        plain = isinstance(value, str | int | float) and not isinstance(value, bool)
        shown = f" ({value!r})" if plain else ""
        raise BadValue(f"must be {_WANT[kind]}, not {describe(value)}{shown}")
    return value


def parse_text(kind: str, text: str) -> Any:
    """An environment variable's text as a ``kind`` (typed, not yet checked)."""
    raw = text.strip()
    value: Any = text
    try:
        if kind == "bool":
            words = {"1": True, "true": True, "yes": True, "on": True}
            words |= {"0": False, "false": False, "no": False, "off": False}
            if raw.lower() not in words:
                raise ValueError(raw)
            value = words[raw.lower()]
        elif kind == "int":
            value = int(raw)
        elif kind == "float":
            value = float(raw)
        elif kind == "json":  # a table in a variable: JSON (DEEPSEEK_REVIEW_PRICES)
            import json

            value = json.loads(raw)
    except ValueError:
        raise BadValue(f"must be {_WANT[kind]}, not {text!r}") from None
    return value


def _paths(value: Any) -> tuple[str, ...]:
    """A path or a non-empty list of them (an empty path is the context gatherer's to refuse,
    naming it, like a missing one)."""
    if isinstance(value, str):
        return (value,)
    if not isinstance(value, list | tuple) or not value:
        raise BadValue(f"must be {_WANT['paths']}, not {describe(value)}")
    bad = [v for v in value if not isinstance(v, str)]
    if bad:
        raise BadValue(f"holds {describe(bad[0])} ({bad[0]!r}), not a path")
    return tuple(value)
