"""Batch manifests: reading, checking and planning every review of a ``batch`` run.

A manifest is TOML (a ``[defaults]`` table and ``[[review]]`` entries, read with the standard
library) or JSON Lines (one review object a line; an optional first line
``{"defaults": {...}}``). An entry's keys are ``run``'s options in snake_case; ``[defaults]``
may hold any of them but ``topic``, ``prompt`` and ``prompt_file``. Precedence: the entry, then
the flags given to ``batch``, then ``[defaults]``, then the built-in defaults.

Nothing is sent and nothing is written unless the whole manifest checks out: every problem
(unknown keys, missing or mistyped fields, bad or duplicate topics, context that matches
nothing or lies outside the repository, bad endpoints and templates) is collected with its
entry and line, and one :class:`ManifestError` carries them all. The structure of every entry
is checked; only the entries of the selected shard are planned (their context gathered).
"""

from __future__ import annotations

import difflib
import hashlib
import re
import threading
import tomllib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import safejson
from .client import RetryPolicy, Timeouts
from .config import Setting, configured_review_values
from .context import ContextLimits, Gathered, Output, gather_context
from .errors import ConfigError, InputError, ReviewError
from .pipeline import (
    DEFAULT_OUTPUT_DIR,
    ContinuationOptions,
    GatherFn,
    ReviewOptions,
    ReviewPlan,
    plan_review,
)
from .repo import find_repo_root, resolve_inside
from .storage import check_topic

FORMATS = ("toml", "jsonl")
_EXTENSIONS = {".toml": "toml", ".jsonl": "jsonl", ".ndjson": "jsonl"}

_STR_KEYS = frozenset(
    {
        "topic",
        "prompt",
        "prompt_file",
        "model",
        "endpoint",
        "api_key_env",
        "template",
        "template_file",
        "continuation_style",
        "continuation_model",
        "server",
        "output_dir",
    }
)
_INT_KEYS = frozenset(
    {
        "max_tokens",
        "max_file_bytes",
        "max_context_bytes",
        "max_continuations",
        "continuation_max_tokens",
        "context_window",
    }
)
_FLOAT_KEYS = frozenset({"temperature"})
_BOOL_KEYS = frozenset({"stream", "keep_reasoning", "allow_truncated_prompt", "allow_secrets"})
_TABLE_KEYS = frozenset({"extra_body", "continuation_extra_body"})

#: Every key an entry may hold (``run``'s options in snake_case).
ENTRY_KEYS: tuple[str, ...] = (
    "topic",
    "prompt",
    "prompt_file",
    "context",
    "model",
    "endpoint",
    "api_key_env",
    "template",
    "template_file",
    "temperature",
    "max_tokens",
    "stream",
    "extra_body",
    "max_file_bytes",
    "max_context_bytes",
    "keep_reasoning",
    "max_continuations",
    "continuation_style",
    "continuation_model",
    "continuation_max_tokens",
    "server",
    "continuation_extra_body",
    "context_window",
    "allow_truncated_prompt",
    "allow_secrets",
    "output_dir",
)
#: Keys only an entry may hold (each review has its own).
ENTRY_ONLY_KEYS = frozenset({"topic", "prompt", "prompt_file"})
DEFAULT_KEYS: tuple[str, ...] = tuple(k for k in ENTRY_KEYS if k not in ENTRY_ONLY_KEYS)
#: Keys whose file paths are relative to the manifest's folder.
_MANIFEST_RELATIVE = ("prompt_file", "template_file")
#: Keys a manifest may not hold, though ``batch`` flags may: a manifest is a file in the
#: repository under review, and must not choose which secret is sent or switch the secret
#: scan off.
OPERATOR_ONLY: dict[str, str] = {
    "api_key_env": (
        "'api_key_env' cannot be set in a manifest (a file under review must not choose which "
        "secret is sent); use --api-key-env or DEEPSEEK_REVIEW_API_KEY_ENV"
    ),
    "allow_secrets": (
        "'allow_secrets' cannot be set in a manifest; only the --allow-secrets flag switches "
        "the secret scan off"
    ),
}


# --------------------------------------------------------------------------- shards


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (0-based): the entries whose topic hashes to it."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ConfigError(
                f"--shard {self.index}/{self.count}: need 0 <= K < N (K is 0-based), e.g. 0/4"
            )

    @classmethod
    def parse(cls, text: str) -> Shard:
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if not m:
            raise ConfigError(f"--shard {text!r}: expected K/N, e.g. 0/4 (K is 0-based)")
        return cls(int(m.group(1)), int(m.group(2)))

    def holds(self, topic: str) -> bool:
        return shard_of(topic, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_of(topic: str, count: int) -> int:
    """The shard of ``topic`` among ``count``: stable across machines, runs and Pythons."""
    return int(hashlib.sha256(topic.encode("utf-8")).hexdigest()[:16], 16) % count


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
            raise ConfigError(f"--format {fmt!r}: choose toml or jsonl")
        return fmt
    found = _EXTENSIONS.get(path.suffix.lower())
    if found is None:
        raise ConfigError(
            f"{path}: cannot tell the manifest format from its extension; name it .toml, "
            ".jsonl or .ndjson, or pass --format toml|jsonl"
        )
    return found


def _describe(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "a table"
    return type(value).__name__


def type_problem(key: str, value: Any) -> str | None:
    """Why ``value`` cannot be ``key``'s value, or None when its type is right."""
    if key in _STR_KEYS:
        ok, want = isinstance(value, str), "a string"
    elif key in _INT_KEYS:
        ok, want = isinstance(value, int) and not isinstance(value, bool), "an integer"
    elif key in _FLOAT_KEYS:
        ok, want = isinstance(value, int | float) and not isinstance(value, bool), "a number"
    elif key in _BOOL_KEYS:
        ok, want = isinstance(value, bool), "true or false"
    elif key in _TABLE_KEYS:
        ok, want = isinstance(value, dict), "a table (JSON object)"
    elif key == "context":
        if isinstance(value, str):
            return None if value.strip() else "'context' is an empty string"
        if not isinstance(value, list) or not value:
            return (
                "'context' must be a path or glob, or a non-empty list of them, "
                f"not {_describe(value)}"
            )
        bad = [v for v in value if not isinstance(v, str) or not v.strip()]
        return f"'context' holds {_describe(bad[0])} ({bad[0]!r}), not a path" if bad else None
    else:
        return f"unknown key {key!r}"
    if ok:
        return None
    return f"{key!r} must be {want}, not {_describe(value)} ({value!r})"


def _unknown_key(key: str, allowed: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, allowed, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown key {key!r}{hint}"


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


def _check_table(
    table: Mapping[str, Any], allowed: Sequence[str], forbidden: frozenset[str]
) -> tuple[dict[str, Any], list[tuple[str | None, str]]]:
    """The keys of ``table`` with the right types, and (key, problem) for the others."""
    good: dict[str, Any] = {}
    problems: list[tuple[str | None, str]] = []
    for key, value in table.items():
        if key in forbidden:
            problems.append((key, f"{key!r} belongs in each [[review]] entry, not in [defaults]"))
            continue
        if key in OPERATOR_ONLY:
            problems.append((key, OPERATOR_ONLY[key]))
            continue
        if key not in allowed:
            problems.append((key, _unknown_key(key, allowed)))
            continue
        if value is None:  # JSON null: not given
            continue
        why = type_problem(key, value)
        if why is not None:
            problems.append((key, why))
        else:
            good[key] = value
    return good, problems


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
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"manifest {shown}: no such file") from None
    except OSError as exc:
        raise InputError(f"manifest {shown}: cannot read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"manifest {shown}: not UTF-8 (byte {exc.start})") from None
    if fmt == "toml":
        defaults_raw, reviews, lines, problems = _parse_toml(text, shown)
    else:
        defaults_raw, reviews, lines, problems = _parse_jsonl(text)

    defaults: dict[str, Any] = {}
    if not isinstance(defaults_raw, dict):
        problems.append(
            Problem("[defaults] must be a table", line=lines.defaults, in_defaults=True)
        )
    else:
        defaults, bad = _check_table(defaults_raw, DEFAULT_KEYS, ENTRY_ONLY_KEYS)
        for key, why in bad:
            line = lines.default_keys.get(key or "", lines.defaults)
            problems.append(Problem(why, line=line, in_defaults=True))

    entries: list[Entry] = []
    first_seen: dict[str, Entry] = {}
    for i, obj in enumerate(reviews, start=1):
        line = lines.reviews[i - 1] if i - 1 < len(lines.reviews) else None
        key_lines = lines.review_keys[i - 1] if i - 1 < len(lines.review_keys) else {}
        if not isinstance(obj, dict):
            problems.append(
                Problem(f"an entry must be a table (JSON object), not {_describe(obj)}", i, line)
            )
            continue
        topic_value = obj.get("topic")
        topic = topic_value if isinstance(topic_value, str) else None
        values, bad = _check_table(obj, ENTRY_KEYS, frozenset())
        entry_problems = [
            Problem(why, i, key_lines.get(key or "", line), topic) for key, why in bad
        ]
        if "topic" not in obj or obj["topic"] is None:
            entry_problems.append(Problem("missing 'topic'", i, line))
        elif topic is not None:
            try:
                check_topic(topic)
            except ConfigError as exc:
                entry_problems.append(
                    Problem(_manifest_words(exc.message), i, key_lines.get("topic", line), topic)
                )
                topic = None
        given = [k for k in ("prompt", "prompt_file") if obj.get(k) is not None]
        if not given:
            entry_problems.append(Problem("missing 'prompt' (or 'prompt_file')", i, line, topic))
        elif len(given) == 2:
            entry_problems.append(
                Problem("give 'prompt' or 'prompt_file', not both", i, line, topic)
            )
        has_default_context = isinstance(defaults_raw, dict) and "context" in defaults_raw
        if obj.get("context") is None and not has_default_context:
            entry_problems.append(
                Problem("missing 'context' (a path or glob, or a list)", i, line, topic)
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


# --------------------------------------------------------------------------- options

_FLAG_RE = re.compile(r"--([a-z][a-z-]*[a-z])")


def _manifest_words(message: str) -> str:
    """``--max-tokens must be positive`` reads ``max_tokens must be positive`` in a manifest."""

    def sub(m: re.Match[str]) -> str:
        key = m.group(1).replace("-", "_")
        return key if key in ENTRY_KEYS else m.group(0)

    return _FLAG_RE.sub(sub, message)


def merged_values(
    manifest: Manifest,
    entry: Entry,
    overrides: Mapping[str, Any] | None = None,
    base: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """Entry > ``batch`` flags > ``[defaults]`` > ``base`` (environment and config file);
    built-in defaults fill the rest later."""
    return {**(base or {}), **manifest.defaults, **(overrides or {}), **entry.values}


def _inside_repo(manifest: Manifest, root: Path, key: str, value: str) -> Path:
    """A file a manifest names, relative to its folder; it must lie inside the repository
    (the manifest is a file under review: it must not send, or copy into a request record,
    a file from elsewhere on the machine)."""
    if value.startswith("~") or Path(value).is_absolute():
        raise InputError(
            f"{key} {value}: must be a path relative to the manifest's folder, inside the "
            "repository"
        )
    path, _ = resolve_inside(root, str(manifest.folder / value), what=key)
    return path


class _PromptFiles:
    """Prompt files read once each (many entries often share one)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._texts: dict[Path, str | InputError] = {}

    def read(self, path: Path, shown: str) -> str:
        with self._lock:
            cached = self._texts.get(path)
        if cached is None:
            try:
                cached = path.read_text(encoding="utf-8")
            except FileNotFoundError:
                cached = InputError(f"prompt_file {shown}: no such file")
            except UnicodeDecodeError:
                cached = InputError(f"prompt_file {shown}: not UTF-8")
            except OSError as exc:
                cached = InputError(f"prompt_file {shown}: cannot read ({exc.strerror or exc})")
            with self._lock:
                self._texts[path] = cached
        if isinstance(cached, InputError):
            raise cached
        return cached


def entry_options(
    manifest: Manifest,
    entry: Entry,
    *,
    overrides: Mapping[str, Any] | None = None,
    base: Mapping[str, Setting] | None = None,
    repo_root: str | None = None,
    retry: RetryPolicy | None = None,
    timeouts: Timeouts | None = None,
    prompt_files: _PromptFiles | None = None,
) -> ReviewOptions:
    """The entry as :class:`ReviewOptions` (what ``run`` would build from the same flags)."""
    overrides = overrides or {}
    base = base or {}
    v = merged_values(manifest, entry, overrides, {k: s.value for k, s in base.items()})
    root = find_repo_root(repo_root) if "prompt_file" in v or "template_file" in v else Path()
    if "prompt_file" in v:
        path = _inside_repo(manifest, root, "prompt_file", v["prompt_file"])
        prompt = (prompt_files or _PromptFiles()).read(path, v["prompt_file"])
    else:
        prompt = v["prompt"]
    context = v["context"]
    kwargs: dict[str, Any] = {
        "context": (context,) if isinstance(context, str) else tuple(context),
        "prompt": prompt,
        "topic": entry.topic,
        "repo_root": repo_root,
    }
    for key in (
        "model",
        "output_dir",
        "template",
        "temperature",
        "max_tokens",
        "stream",
        "keep_reasoning",
        "context_window",
        "allow_truncated_prompt",
        "allow_secrets",
        "endpoint",
        "api_key_env",
    ):
        if key in v:
            kwargs[key] = float(v[key]) if key == "temperature" else v[key]
    if "template_file" in v:
        kwargs["template_file"] = str(
            _inside_repo(manifest, root, "template_file", v["template_file"])
        )
    kwargs["endpoint_named_by"] = _endpoint_named_by(manifest, entry, overrides, base)
    if "endpoint" in overrides:
        kwargs["operator_endpoints"] = (overrides["endpoint"],)
    if "extra_body" in v:
        kwargs["extra_body"] = dict(v["extra_body"])
    limits = {k: v[k] for k in ("max_file_bytes", "max_context_bytes") if k in v}
    if limits:
        kwargs["limits"] = ContextLimits(**limits)
    cont_keys = {
        "max_continuations": "max_continuations",
        "continuation_style": "style",
        "continuation_model": "model",
        "continuation_max_tokens": "max_tokens",
        "server": "server",
        "continuation_extra_body": "extra_body",
    }
    cont = {field: v[key] for key, field in cont_keys.items() if key in v}
    if cont:
        kwargs["continuation"] = ContinuationOptions(**cont)
    if retry is not None:
        kwargs["retry"] = retry
    if timeouts is not None:
        kwargs["timeouts"] = timeouts
    return ReviewOptions(**kwargs)


def _endpoint_named_by(
    manifest: Manifest,
    entry: Entry,
    overrides: Mapping[str, Any],
    base: Mapping[str, Setting],
) -> str | None:
    """Which untrusted file chose the entry's endpoint (None: the operator, or nobody)."""
    if "endpoint" in entry.values or (
        "endpoint" not in overrides and "endpoint" in manifest.defaults
    ):
        return "the manifest"
    if "endpoint" in overrides or "endpoint" not in base:
        return None
    return base["endpoint"].named_by


# --------------------------------------------------------------------------- planning


_GatherKey = tuple[Path, tuple[str, ...], ContextLimits, tuple[Output, ...]]


class ContextCache:
    """Context gathered once per distinct (specs, limits, outputs) for the whole batch.

    Entries that name the same context share the same :class:`ContextFile` objects, so the
    bytes hashed into every receipt are the bytes sent. Refusals are cached too.
    """

    def __init__(self, gather: GatherFn = gather_context) -> None:
        self._gather = gather
        self._lock = threading.Lock()
        self._done: dict[_GatherKey, Gathered] = {}
        self._failed: dict[_GatherKey, ReviewError] = {}

    def __call__(
        self, root: Path, specs: Sequence[str], limits: ContextLimits, outputs: Sequence[Output]
    ) -> Gathered:
        key = (root, tuple(specs), limits, tuple(outputs))
        with self._lock:
            if key in self._done:
                done = self._done[key]
                return Gathered(done, done.skipped)
            if key in self._failed:
                raise self._failed[key]
        try:
            files = self._gather(root, specs, limits, outputs)
        except ReviewError as exc:
            with self._lock:
                self._failed.setdefault(key, exc)
            raise
        with self._lock:
            self._done.setdefault(key, files)
        return Gathered(files, files.skipped)


def _output_folders(
    manifest: Manifest, overrides: Mapping[str, Any], base: Mapping[str, Setting], root: Path
) -> list[Output]:
    """Every entry's output folder (every shard's): an entry's problem with its own is
    reported when it is planned, so such a folder is passed over here."""
    values = {k: s.value for k, s in base.items()}
    folders = []
    for entry in manifest.entries:
        named = merged_values(manifest, entry, overrides, values).get("output_dir")
        try:
            _, rel = resolve_inside(root, named if isinstance(named, str) else DEFAULT_OUTPUT_DIR)
        except ReviewError:
            continue
        folders.append(Output(rel, "an output folder of the batch"))
    return folders


@dataclass(frozen=True)
class PlannedEntry:
    entry: Entry
    plan: ReviewPlan

    @property
    def topic(self) -> str:
        return self.entry.topic


@dataclass(frozen=True)
class PlannedManifest:
    manifest: Manifest
    root: Path
    entries: tuple[PlannedEntry, ...]
    """The entries of the selected shard, in manifest order, each planned."""
    total_entries: int
    """Entries in the whole manifest (all shards)."""
    shard: Shard | None = None


def plan_manifest(
    path: Path,
    *,
    fmt: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    shard: Shard | None = None,
    repo_root: str | None = None,
    retry: RetryPolicy | None = None,
    timeouts: Timeouts | None = None,
    env: Mapping[str, str] | None = None,
    plan: Callable[..., ReviewPlan] = plan_review,
    outputs: Sequence[Output] = (),
) -> PlannedManifest:
    """Read, check and plan a manifest; raise one :class:`ManifestError` listing every problem.

    Nothing is sent or written. ``overrides`` are the flags given to ``batch`` (already typed).
    No entry's folders and globs send what the batch writes: any entry's output folder (all
    shards'), nor ``outputs`` (the report).
    """
    overrides = dict(overrides or {})
    for key, value in overrides.items():
        why = type_problem(key, value)
        if why is not None or key in ENTRY_ONLY_KEYS:
            raise ConfigError(f"batch override {key}: {why or 'not allowed'}")
    manifest, problems = read_manifest(path, fmt)
    root = find_repo_root(repo_root)
    base = configured_review_values(root, env)
    selected = [e for e in manifest.entries if shard is None or shard.holds(e.topic)]
    planned: list[PlannedEntry] = []
    # Problems with the file or [defaults] would make every plan's complaint misleading.
    if not any(p.entry is None for p in problems):
        prompt_files = _PromptFiles()
        gather = ContextCache()
        written = (*_output_folders(manifest, overrides, base, root), *outputs)
        for entry in selected:
            try:
                options = entry_options(
                    manifest,
                    entry,
                    overrides=overrides,
                    base=base,
                    repo_root=str(root),
                    retry=retry,
                    timeouts=timeouts,
                    prompt_files=prompt_files,
                )
                options = replace(options, outputs=written)
                planned.append(PlannedEntry(entry, plan(options, env, gather=gather)))
            except ReviewError as exc:
                problems.append(
                    Problem(_manifest_words(exc.message), entry.index, entry.line, entry.topic)
                )
    problems.sort(key=lambda p: (p.entry is not None, p.entry or 0))
    if problems:
        raise ManifestError(manifest.shown, problems)
    return PlannedManifest(
        manifest=manifest,
        root=root,
        entries=tuple(planned),
        total_entries=len(manifest.entries),
        shard=shard,
    )
