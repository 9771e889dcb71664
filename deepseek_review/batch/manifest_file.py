"""Batch manifests on disk: reading, and checking the structure of every entry.

A manifest is TOML (a ``[defaults]`` table and ``[[review]]`` entries, read with the standard
library) or JSON Lines (one review object a line; an optional first line
``{"defaults": {...}}``; ``null`` is "not given"). An entry's keys are ``run``'s options in
snake_case; ``[defaults]`` may hold any of them but ``topic``, ``prompt`` and ``prompt_file``.

Every entry and the ``[defaults]`` are checked against the JSON Schema derived from the
option table (:mod:`options.schema`, published for editors): jsonschema finds each key at fault,
which the option table words (the
same words as for a flag, the environment or the config file). Every problem is collected
with its entry and line; nothing here raises for a bad entry.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deepseek_review.errors import ConfigError, InputError
from deepseek_review.options.schema import table_problems
from deepseek_review.options.table import ENTRY_KEYS, OPTIONS, name_of
from deepseek_review.options.values import describe
from deepseek_review.util import safejson

FORMATS = ("toml", "jsonl")
_EXTENSIONS = {".toml": "toml", ".jsonl": "jsonl", ".ndjson": "jsonl"}


# --------------------------------------------------------------------------- problems


@dataclass(frozen=True)
class Problem:
    """One thing wrong with a manifest, located as precisely as we can."""

    message: str
    entry: int | None = None
    """1-based entry number; None for the file itself or ``[defaults]``."""
    line: int | None = None
    topic: str | None = None
    in_defaults: bool = False

    def where(self) -> str:
        if self.entry is not None:
            what = f"entry {self.entry}"
        elif self.in_defaults:
            what = "[defaults]"
        else:
            what = ""
        details = []
        if self.line is not None:
            details.append(f"line {self.line}")
        if self.topic is not None:
            details.append(f"topic {self.topic!r}")
        if details:
            what = f"{what} ({', '.join(details)})" if what else ", ".join(details)
        return what

    def __str__(self) -> str:
        where = self.where()
        return f"{where}: {self.message}" if where else self.message


class ManifestError(InputError):
    """The manifest has problems; :attr:`problems` lists every one (the message the first)."""

    def __init__(self, shown: str, problems: Sequence[Problem]) -> None:
        self.shown = shown
        self.problems = tuple(problems)
        n = len(self.problems)
        super().__init__(
            f"manifest {shown}: {n} problem{'s' if n != 1 else ''}; first: {self.problems[0]}",
            hint="nothing was sent and nothing was written",
        )

    def lines(self) -> list[str]:
        """Every problem on its own line, ``<manifest>:<line>: <problem>`` when located."""
        out = []
        for p in self.problems:
            prefix = f"{self.shown}:{p.line}" if p.line is not None else self.shown
            out.append(f"{prefix}: {p}")
        return out


# --------------------------------------------------------------------------- the manifest


@dataclass(frozen=True)
class Entry:
    """One ``[[review]]`` entry: its own keys, type-checked."""

    index: int
    """1-based position in the manifest."""
    line: int | None
    topic: str
    values: Mapping[str, Any]
    key_lines: Mapping[str, int] = field(default_factory=dict)

    @property
    def places(self) -> dict[str, str]:
        """Where each of its own options was set (``entry 2, line 7``), for messages that do
        not say which entry they are about (:func:`~deepseek_review.options.table.naming_at`)."""
        return {key: self._at(self.key_lines.get(key, self.line)) for key in self.values}

    def _at(self, line: int | None) -> str:
        return f"entry {self.index}" + (f", line {line}" if line is not None else "")


@dataclass(frozen=True)
class Manifest:
    path: Path
    format: str
    defaults: Mapping[str, Any]
    entries: tuple[Entry, ...]
    defaults_line: int | None = None
    default_key_lines: Mapping[str, int] = field(default_factory=dict)

    @property
    def folder(self) -> Path:
        return self.path.parent

    @property
    def shown(self) -> str:
        return str(self.path)


def detect_format(path: Path, fmt: str | None = None) -> str:
    if fmt is not None:
        if fmt not in FORMATS:
            raise ConfigError(f"{name_of('format')} {fmt!r}: choose toml or jsonl")
        return fmt
    found = _EXTENSIONS.get(path.suffix.lower())
    if found is None:
        raise ConfigError(
            f"{path}: cannot tell the manifest format from its extension; name it .toml, "
            f".jsonl or .ndjson, or pass {OPTIONS['format'].long_flag} toml|jsonl"
        )
    return found


# --------------------------------------------------------------------------- checking

# --------------------------------------------------------------------------- TOML lines

_HEADER_RE = re.compile(r"^\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY_RE = re.compile(r"""^\s*(?:"([^"]+)"|'([^']+)'|([A-Za-z0-9_-]+))\s*[.=]""")


@dataclass
class _TomlLines:
    """Where sections and keys sit (tomllib reports no positions, so the text is scanned)."""

    defaults: int | None = None
    default_keys: dict[str, int] = field(default_factory=dict)
    reviews: list[int] = field(default_factory=list)
    review_keys: list[dict[str, int]] = field(default_factory=list)


def scan_toml_lines(text: str) -> _TomlLines:
    """Lines of ``[defaults]``, of each ``[[review]]`` header and of their top-level keys."""
    found = _TomlLines()
    current: dict[str, int] | None = None
    in_string: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        if in_string is not None:
            if line.count(in_string) % 2 == 1:
                in_string = None
            continue
        m = _HEADER_RE.match(line)
        if m and not line.lstrip().startswith("#"):
            name = m.group(2).strip()
            if m.group(1) == "[[" and name == "review":
                found.reviews.append(number)
                current = {}
                found.review_keys.append(current)
            elif m.group(1) == "[" and name == "defaults":
                found.defaults = number
                current = found.default_keys
            elif m.group(1) == "[" and name.startswith(("review.", "defaults.")):
                current = None  # a sub-table (e.g. extra_body) of the current section
            else:
                current = None
            continue
        km = _KEY_RE.match(line)
        if km and current is not None:
            current.setdefault(km.group(1) or km.group(2) or km.group(3), number)
        for quote in ('"""', "'''"):
            if line.count(quote) % 2 == 1:
                in_string = quote
                break
    return found


# --------------------------------------------------------------------------- reading


def _parse_toml(text: str, shown: str) -> tuple[Any, list[Any], _TomlLines, list[Problem]]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        return (
            {},
            [],
            _TomlLines(),
            [Problem(f"not valid TOML: {exc}", line=int(m.group(1)) if m else None)],
        )
    except RecursionError:  # tomllib recurses per nested array or inline table
        return {}, [], _TomlLines(), [Problem("not valid TOML: nested too deeply")]
    lines = scan_toml_lines(text)
    problems: list[Problem] = []
    for key in data:
        if key not in ("defaults", "review"):
            hint = (
                " (entry keys go inside a [[review]] entry, shared ones in [defaults])"
                if key in ENTRY_KEYS
                else ""
            )
            problems.append(Problem(f"unknown top-level key {key!r}{hint}"))
    defaults = data.get("defaults", {})
    reviews = data.get("review", [])
    if not isinstance(reviews, list):
        problems.append(Problem("'review' must be an array of tables ([[review]] entries)"))
        reviews = []
    return defaults, reviews, lines, problems


def _parse_jsonl(text: str) -> tuple[Any, list[Any], _TomlLines, list[Problem]]:
    lines = _TomlLines()
    problems: list[Problem] = []
    defaults: Any = {}
    reviews: list[Any] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        try:
            obj = safejson.loads(raw, what="line")
        except safejson.JSONRefused as exc:
            problems.append(Problem(str(exc), line=number))
            continue
        except ValueError as exc:
            problems.append(Problem(f"not a JSON object: {exc}", line=number))
            continue
        if isinstance(obj, dict) and list(obj) == ["defaults"]:
            if reviews or lines.defaults is not None:
                problems.append(
                    Problem('a {"defaults": ...} line must be the first line', line=number)
                )
                continue
            defaults = obj["defaults"]
            lines.defaults = number
            if isinstance(defaults, dict):
                lines.default_keys = dict.fromkeys(defaults, number)
            continue
        reviews.append(obj)
        lines.reviews.append(number)
        lines.review_keys.append(dict.fromkeys(obj, number) if isinstance(obj, dict) else {})
    return defaults, reviews, lines, problems


def read_manifest(path: Path, fmt: str | None = None) -> tuple[Manifest, list[Problem]]:
    """Parse and check the structure of every entry; problems are returned, not raised.

    Raises :class:`InputError` only when the file cannot be read at all.
    """
    fmt = detect_format(path, fmt)
    shown = str(path)
    text = _read_text(path, shown)
    if fmt == "toml":
        defaults_raw, reviews, lines, problems = _parse_toml(text, shown)
    else:
        defaults_raw, reviews, lines, problems = _parse_jsonl(text)
    defaults = _checked_defaults(defaults_raw, lines, problems)
    has_default_context = "context" in defaults or "context" in (
        defaults_raw if isinstance(defaults_raw, dict) else {}
    )
    entries = _checked_entries(reviews, lines, problems, has_default_context=has_default_context)
    if not reviews and not problems:
        what = "[[review]] entries" if fmt == "toml" else "review lines"
        problems.append(Problem(f"no reviews: the manifest holds no {what}"))
    manifest = Manifest(
        path=path,
        format=fmt,
        defaults=defaults,
        entries=tuple(entries),
        defaults_line=lines.defaults,
        default_key_lines=lines.default_keys,
    )
    return manifest, problems


def _read_text(path: Path, shown: str) -> str:
    """The manifest's text (bounded, UTF-8), or a one-line refusal naming it."""
    try:
        raw = safejson.read_stream(path, max_bytes=safejson.MAX_FILE_BYTES)
    except FileNotFoundError:
        raise InputError(f"manifest {shown}: no such file") from None
    except OSError as exc:
        raise InputError(f"manifest {shown}: cannot read ({exc.strerror or exc})") from None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"manifest {shown}: not UTF-8 (byte {exc.start})") from None


def _checked_defaults(
    defaults_raw: Any, lines: _TomlLines, problems: list[Problem]
) -> dict[str, Any]:
    """The ``[defaults]`` table without the keys that have a problem (added to ``problems``)."""
    if not isinstance(defaults_raw, dict):
        problems.append(
            Problem("[defaults] must be a table", line=lines.defaults, in_defaults=True)
        )
        return {}
    defaults = _given(defaults_raw)
    bad = table_problems(defaults, "defaults")
    for key, why in bad.items():
        line = lines.default_keys.get(key or "", lines.defaults)
        problems.append(Problem(why, line=line, in_defaults=True))
        defaults.pop(key or "", None)
    return defaults


def _checked_entries(
    reviews: list[Any], lines: _TomlLines, problems: list[Problem], *, has_default_context: bool
) -> list[Entry]:
    """The entries without a problem; each problem of the others is added to ``problems``
    (bad keys, no context, a topic already used), located at its line."""
    entries: list[Entry] = []
    first_seen: dict[str, Entry] = {}
    for i, obj in enumerate(reviews, start=1):
        line = lines.reviews[i - 1] if i - 1 < len(lines.reviews) else None
        key_lines = lines.review_keys[i - 1] if i - 1 < len(lines.review_keys) else {}
        if not isinstance(obj, dict):
            problems.append(
                Problem(f"an entry must be a table (JSON object), not {describe(obj)}", i, line)
            )
            continue
        values = _given(obj)
        bad = table_problems(values, "entry")
        named = values.get("topic") if isinstance(values.get("topic"), str) else None
        topic = named if "topic" not in bad else None  # a topic that can name files
        entry_problems = [
            Problem(why, i, key_lines.get(key or "", line), named) for key, why in bad.items()
        ]
        if "context" not in values and "diff" not in values and not has_default_context:
            entry_problems.append(
                Problem("missing 'context' (a path or glob, or a list)", i, line, named)
            )
        if topic is not None:
            if topic in first_seen:
                first = first_seen[topic]
                at = f", line {first.line}" if first.line is not None else ""
                entry_problems.append(
                    Problem(
                        f"duplicate topic {topic!r} (first used by entry {first.index}{at}); "
                        "topics name the output files and must be unique",
                        i,
                        key_lines.get("topic", line),
                        topic,
                    )
                )
            else:
                first_seen[topic] = Entry(i, line, topic, values, key_lines)
        problems.extend(entry_problems)
        if not entry_problems and topic is not None:
            entries.append(Entry(i, line, topic, values, key_lines))
    return entries


def _given(table: Mapping[str, Any]) -> dict[str, Any]:
    """A table without its ``null`` values (JSON Lines: "not given")."""
    return {k: v for k, v in table.items() if v is not None}
