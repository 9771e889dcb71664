"""The quick yes of receipt validation: the forms the tool itself writes, checked in plain
Python. Each function here only ever says "valid" sooner: anything it does not accept goes
on to the validators that decide (:func:`.receipt.fast_valid`, then jsonschema), so a
receipt it accepts is one they accept too (``tests/verification/test_verify_schema.py`` holds it to
jsonschema on every valid receipt and mutation, ``tests/verification/test_verify_speed.py`` the
formats
to their RFC validators).

Why: ``verify`` asks this of every receipt, and the generated validator spends most of its
time naming fields it will never report and matching patterns on strings whose form a
length and a prefix already decide.
"""

from __future__ import annotations

import re
from datetime import date, datetime
from functools import lru_cache
from typing import Any

PRIMARY = "ollama_deepseek_review_receipt_v1"
CONTINUATION = "ollama_deepseek_review_continuation_receipt_v1"

_COMMON = ("schema", "created_at", "model", "endpoint", "prompt_sha256", "answer_sha256")
_PRIMARY_KEYS = frozenset((*_COMMON, "usage", "context_files", "answer_path"))
_CONTINUATION_KEYS = frozenset((*_COMMON, "usage", "previous_answer_path", "answer_path"))
_CONTINUATION_KEYS_MK = _CONTINUATION_KEYS | {"message_keys"}
_USAGE_KEYS = frozenset(("prompt_tokens", "completion_tokens", "total_tokens"))
_HEX = "0123456789abcdef"

_PLAIN_DATE_TIME = re.compile(
    r"[0-9]{4}-(?:0[1-9]|1[0-2])-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    r"(?:\.[0-9]+)?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
)
_PLAIN_URI = re.compile(
    r"https?://[A-Za-z0-9._~-]+(?::[0-9]*)?"
    r"(?:/[A-Za-z0-9._~!$&'()*+,;=:@-]*)*"
    r"(?:\?[A-Za-z0-9._~!$&'()*+,;=:@/?-]*)?"
)


def plain_date_time(value: str) -> bool:
    """A date-time of the RFC 3339 form whose day exists in its month (year 1 on)."""
    if _PLAIN_DATE_TIME.fullmatch(value) is None:
        return False
    try:
        return date(int(value[:4]), int(value[5:7]), int(value[8:10])) is not None
    except ValueError:
        return False


def plainly_uri(url: str) -> bool:
    """True when ``url`` is certainly an RFC 3986 URI (the shape of every endpoint URL
    :mod:`deepseek_review.chat.endpoint` builds); False means only "ask the full check"."""
    return _PLAIN_URI.fullmatch(url) is not None


def as_written(value: str) -> bool:
    """True when ``value`` is exactly what :func:`.receipt.created_at` writes for some
    instant: a UTC RFC 3339 date-time, certainly (False only means "ask the full check")."""
    if not value.endswith("+00:00"):
        return False
    try:
        return datetime.fromisoformat(value).isoformat(timespec="seconds") == value
    except ValueError:
        return False


@lru_cache(maxsize=8192)
def is_date_time(value: str) -> bool:
    """jsonschema's own "date-time" check (format-nongpl): RFC 3339 after upper-casing."""
    if as_written(value) or plain_date_time(value.upper()):
        return True
    from rfc3339_validator import validate_rfc3339  # type: ignore[import-untyped]

    return bool(validate_rfc3339(value.upper()))


@lru_cache(maxsize=1024)
def is_uri(value: str) -> bool:
    """jsonschema's "uri" check: rfc3987 when it is installed, else rfc3986-validator."""
    if plainly_uri(value):
        return True
    try:
        import rfc3987  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        from rfc3986_validator import validate_rfc3986  # type: ignore[import-untyped]

        return bool(validate_rfc3986(value, rule="URI"))
    try:
        rfc3987.parse(value, rule="URI")
    except ValueError:
        return False
    return True


def _path(p: Any) -> bool:
    """A ``repoRelativePath``: a non-empty string not starting with ``/``."""
    return type(p) is str and p != "" and p[0] != "/"


def _answer(p: Any) -> bool:
    return _path(p) and p.endswith(".md")


def _hash(h: Any) -> bool:
    """``^sha256:[0-9a-f]{64}$`` (without the final newline Python's ``$`` would allow)."""
    return type(h) is str and len(h) == 71 and h.startswith("sha256:") and not h[7:].strip(_HEX)


def _count(n: Any) -> bool:
    return type(n) is int and n >= 0


def _distinct(items: Any, each: Any) -> bool:
    return type(items) is list and all(map(each, items)) and len(set(items)) == len(items)


def _key(k: Any) -> bool:
    return type(k) is str and k != ""


def plainly_valid(data: dict[str, Any]) -> bool:
    """True when ``data`` is a receipt of the form the tool writes (False: not decided)."""
    kind = data.get("schema")
    keys = data.keys()
    if kind == PRIMARY:
        files = data.get("context_files")
        if keys != _PRIMARY_KEYS or not files or not _distinct(files, _path):
            return False
    elif kind == CONTINUATION:
        if keys == _CONTINUATION_KEYS_MK:
            if not _distinct(data["message_keys"], _key):
                return False
        elif keys != _CONTINUATION_KEYS:
            return False
        if not _answer(data["previous_answer_path"]):
            return False
    else:
        return False
    usage = data["usage"]
    model, created, endpoint = data["model"], data["created_at"], data["endpoint"]
    return (
        _answer(data["answer_path"])
        and _hash(data["prompt_sha256"])
        and _hash(data["answer_sha256"])
        and type(model) is str
        and model != ""
        and type(usage) is dict
        and usage.keys() == _USAGE_KEYS
        and _count(usage["prompt_tokens"])
        and _count(usage["completion_tokens"])
        and _count(usage["total_tokens"])
        and type(created) is str
        and is_date_time(created)
        and type(endpoint) is str
        and is_uri(endpoint)
    )
