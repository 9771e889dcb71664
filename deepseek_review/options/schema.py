"""JSON Schemas derived from the option table: a manifest entry, its ``[defaults]``, the whole
manifest (published as ``schemas/deepseek-review-manifest.schema.json`` for editors), and
the config file; and :func:`table_problems`, which checks a manifest's entry against them.

Built from :data:`options.table.OPTIONS` only (types, checks, help as descriptions, and the keys a
file under review may not set, with the reason), so a schema cannot disagree with the command
line. ``scripts/option_schemas.py`` writes the published files; a test fails when they are stale.
"""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from deepseek_review.options.table import (
    CONFIG_FILE,
    DEFAULT_KEYS,
    DEFAULTS,
    ENTRY,
    ENTRY_KEYS,
    OPTIONS,
    Option,
    in_scope,
)
from deepseek_review.options.values import BadValue

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

MANIFEST_SCHEMA_NAME = "deepseek-review-manifest.schema.json"
CONFIG_SCHEMA_NAME = "deepseek-review-config.schema.json"
#: Draft 4: what taplo (Even Better TOML) reads in full; jsonschema too.
DRAFT = "http://json-schema.org/draft-04/schema#"
_CONFIG_PLACE = "the repository's config"

#: Entry keys that are per review only: ``[defaults]`` refuses them.
ENTRY_ONLY = tuple(o.key for o in in_scope(ENTRY) if DEFAULTS not in o.scopes)


def property_schema(option: Option) -> dict[str, Any]:
    """The schema of one option's value."""
    kind = option.kind
    schema: dict[str, Any]
    if kind == "paths":
        path = {"type": "string"}
        schema = {"anyOf": [path, {"type": "array", "minItems": 1, "items": path}]}
    else:
        names = {"str": "string", "path": "string", "int": "integer", "float": "number"}
        names |= {"bool": "boolean", "json": "object"}
        schema = {"type": names[kind]}
        if option.check is not None:
            schema |= option.check.schema()
    schema["description"] = option.help_text()
    return schema


def _refused(why: str) -> dict[str, Any]:
    """A key that is known but may not be set here: editors show ``why`` on it (and taplo
    leaves it out of its completions)."""
    return {"not": {}, "description": why, "x-taplo": {"hidden": True}}


def _table(scope: str, place: str) -> dict[str, Any]:
    """An object whose keys are the options of ``scope``; the table's other options are
    refused with their reason."""
    props: dict[str, Any] = {}
    for o in OPTIONS.values():
        if scope in o.scopes:
            props[o.key] = property_schema(o)
        elif scope == DEFAULTS and o.key in ENTRY_ONLY:
            props[o.key] = _refused(f"belongs in each [[review]] entry, not in {place}")
        elif o.refusal or ("batch" in o.scopes and not o.argument):
            props[o.key] = _refused(f"{o.key} {o.not_here(place)}")
    return {"type": "object", "properties": props, "additionalProperties": False}


def entry_schema() -> dict[str, Any]:
    """One ``[[review]]`` entry (a JSON Lines line). ``context`` may come from ``[defaults]``,
    so it is not required here."""
    schema = _table(ENTRY, "a manifest")
    schema["required"] = ["topic"]
    schema["oneOf"] = [{"required": ["prompt"]}, {"required": ["prompt_file"]}]
    return schema


def defaults_schema() -> dict[str, Any]:
    return _table(DEFAULTS, "[defaults]")


def manifest_schema() -> dict[str, Any]:
    """The whole TOML manifest, for editors (``#:schema`` in taplo / Even Better TOML)."""
    return {
        "$schema": DRAFT,
        "title": "deepseek-review batch manifest",
        "description": "A [defaults] table and [[review]] entries; an entry's keys are run's "
        "options in snake_case (a JSON Lines manifest: one entry a line, validated by "
        '#/definitions/entry, or a first line {"defaults": ...}).',
        "type": "object",
        "properties": {
            "defaults": {"$ref": "#/definitions/defaults"},
            "review": {"type": "array", "items": {"$ref": "#/definitions/entry"}},
        },
        "additionalProperties": False,
        "definitions": {"entry": entry_schema(), "defaults": defaults_schema()},
    }


def config_schema() -> dict[str, Any]:
    """``.deepseek-review.toml`` (or ``[tool.deepseek-review]`` of ``pyproject.toml``)."""
    props: dict[str, Any] = {}
    for o in OPTIONS.values():
        if CONFIG_FILE in o.scopes:
            props[o.key] = property_schema(o)
        elif o.refusal:
            props[o.key] = _refused(f"{o.key} {o.not_here(_CONFIG_PLACE)}")
    for key in [k for k in props if "_" in k]:  # a config file may spell keys with dashes
        props[key.replace("_", "-")] = props[key]
    return {
        "$schema": DRAFT,
        "title": "deepseek-review settings",
        "type": "object",
        "properties": props,
        "additionalProperties": False,
    }


# --------------------------------------------------------------------------- checking


def table_schemas() -> dict[str, dict[str, Any]]:
    """The schemas a manifest's tables are checked against, by kind (entry, defaults)."""
    return {"entry": entry_schema(), "defaults": defaults_schema()}


def with_draft(schema: dict[str, Any]) -> dict[str, Any]:
    return {"$schema": DRAFT, **schema}


@functools.cache
def _schemas() -> dict[str, tuple[dict[str, Any], Validator]]:
    """The entry and ``[defaults]`` schemas, each with its validator, built once a process."""
    from jsonschema import Draft4Validator

    return {k: (s, Draft4Validator(with_draft(s))) for k, s in table_schemas().items()}


def _unknown_key(key: str, allowed: Sequence[str]) -> str:
    close = difflib.get_close_matches(key, allowed, n=1)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown key {key!r}{hint}"


def _key_problem(key: str, value: Any, kind: str) -> str:
    """Why ``key`` cannot be in a ``kind`` table (entry, defaults), or cannot hold ``value``."""
    allowed = ENTRY_KEYS if kind == "entry" else DEFAULT_KEYS
    option = OPTIONS.get(key)
    if key in allowed and option is not None:
        try:
            option.checked(value)
        except BadValue as exc:
            return f"{key} {exc.why}"
        return f"{key}: not valid here"  # the schema refused what the table allows: a bug
    if kind == "defaults" and key in ENTRY_ONLY:
        return f"{key!r} belongs in each [[review]] entry, not in [defaults]"
    refused = _schemas()[kind][0]["properties"].get(key)
    if option is not None and refused is not None:
        return f"{key!r} {option.not_here('a manifest')}"
    return _unknown_key(key, allowed)


def table_problems(table: Mapping[str, Any], kind: str) -> dict[str | None, str]:
    """Every problem of one entry or ``[defaults]`` (``kind``), by the key at fault (None:
    the table as a whole); empty when it checks out."""
    schema, validator = _schemas()[kind]
    problems: dict[str | None, str] = {}
    if not validator.is_valid(dict(table)):  # jsonschema finds each key at fault
        for error in validator.iter_errors(dict(table)):
            if error.absolute_path:
                key = str(error.absolute_path[0])
                problems.setdefault(key, _key_problem(key, table[key], kind))
            elif error.validator == "additionalProperties":
                for key in table:
                    if key not in schema["properties"]:
                        problems.setdefault(key, _key_problem(key, table[key], kind))
            elif error.validator == "required":
                problems.setdefault("topic", "missing 'topic'")
            elif error.validator == "oneOf":
                both = "prompt" in table and "prompt_file" in table
                why = (
                    "give 'prompt' or 'prompt_file', not both"
                    if both
                    else ("missing 'prompt' (or 'prompt_file')")
                )
                problems.setdefault(None, why)
    for key, value in table.items():  # the table's own checks (NaN, say) have the last word
        if key not in problems and OPTIONS.get(key) is not None and key in schema["properties"]:
            try:
                OPTIONS[key].checked(value)
            except BadValue as exc:
                problems[key] = f"{key} {exc.why}"
    order = [k for k in problems if k not in table] + [k for k in table if k in problems]
    return {k: problems[k] for k in order}


def rendered(schema: dict[str, Any]) -> str:
    """The published text of a schema (stable: a test compares it byte for byte)."""
    return json.dumps(schema, indent=2, ensure_ascii=False) + "\n"
