"""Receipts: building them, validating them against the frozen schema, reading them back.

The schema (``schemas/deepseek-review-receipt.schema.json``) is frozen and closed
(``additionalProperties: false``): a receipt holds exactly what it allows, and everything else
goes into the request record beside it. The validator is compiled once per process, with
format checking on, so ``date-time`` and ``uri`` are really checked.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from functools import cache, lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .errors import InputError, OutputError
from .resources import schema_path

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

PRIMARY = "ollama_deepseek_review_receipt_v1"
CONTINUATION = "ollama_deepseek_review_continuation_receipt_v1"
RECEIPT_SUFFIX = ".receipt.json"


@cache
def validator() -> Validator:
    """The schema validator, compiled once (verifying 10,000 receipts must not re-parse it)."""
    from jsonschema import Draft202012Validator

    schema = json.loads(schema_path().read_text(encoding="utf-8"))
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema, format_checker=Draft202012Validator.FORMAT_CHECKER)


def schema_errors(data: Any) -> list[str]:
    """Every schema violation, each as ``<json path>: <message>``; empty when valid."""
    errors = []
    for err in validator().iter_errors(data):
        # oneOf failures hide the useful detail in their context: report the closest branch.
        leaves = [err]
        if err.context:
            best = _best_branch(data, err)
            leaves = best or leaves
        for leaf in leaves:
            where = "$" + "".join(
                f"[{p}]" if isinstance(p, int) else f".{p}" for p in leaf.absolute_path
            )
            errors.append(f"{where}: {leaf.message}")
    return sorted(set(errors))


def _best_branch(data: Any, err: Any) -> list[Any]:
    """For a oneOf over primary/continuation, the errors of the branch the receipt claims."""
    kind = data.get("schema") if isinstance(data, dict) else None
    index = {PRIMARY: 0, CONTINUATION: 1}.get(kind) if isinstance(kind, str) else None
    if index is None:
        return []
    return [e for e in err.context if e.schema_path and e.schema_path[0] == index]


# --------------------------------------------------------------------------- fast path


@lru_cache(maxsize=8192)
def _is_date_time(value: str) -> bool:
    # jsonschema's own "date-time" check (format-nongpl): RFC 3339 after upper-casing.
    from rfc3339_validator import validate_rfc3339  # type: ignore[import-untyped]

    return bool(validate_rfc3339(value.upper()))


@lru_cache(maxsize=1024)
def _is_uri(value: str) -> bool:
    # jsonschema prefers rfc3987 when it is installed, else rfc3986-validator: so do we.
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


@cache
def fast_validators() -> dict[str, Callable[[Any], Any]]:
    """The schema compiled once per process with fastjsonschema, one function per receipt kind.

    The schema's top level is ``oneOf`` over the two kinds, told apart by the ``schema``
    ``const``, so a receipt is valid exactly when the branch its ``schema`` names accepts it;
    running only that branch spares an exception per receipt. ``tests/test_verify_schema.py``
    proves this agrees with jsonschema on valid receipts and many single-field mutations.
    """
    import fastjsonschema

    from .resources import schema_path

    schema = json.loads(schema_path().read_text(encoding="utf-8"))
    formats = {"date-time": _is_date_time, "uri": _is_uri}
    out = {}
    for kind, branch in ((PRIMARY, "primaryReceipt"), (CONTINUATION, "continuationReceipt")):
        sub = {"$id": schema["$id"], "$defs": schema["$defs"], "$ref": f"#/$defs/{branch}"}
        out[kind] = fastjsonschema.compile(sub, formats=formats)
    return out


def fast_valid(data: Any) -> bool:
    """True when the compiled validator accepts ``data`` (a decision, never a message)."""
    import fastjsonschema

    if not isinstance(data, dict):
        return False
    kind = data.get("schema")
    fn = fast_validators().get(kind) if isinstance(kind, str) else None
    if fn is None:
        return False
    try:
        fn(data)
    except fastjsonschema.JsonSchemaException:
        return False
    return True


def schema_problems(data: Any) -> list[str]:
    """Empty when valid; else jsonschema's messages (the authority), ``<json path>: <msg>``."""
    if fast_valid(data):
        return []
    problems = schema_errors(data)
    if problems and isinstance(data, dict) and data.get("schema") not in (PRIMARY, CONTINUATION):
        # jsonschema can only say "not valid under any of the given schemas" and quote it all.
        what = repr(data["schema"]) if "schema" in data else "missing"
        return [f"$.schema: {what}, not {PRIMARY} or {CONTINUATION}"]
    return [p if len(p) <= 300 else p[:297] + "..." for p in problems]


@dataclass(frozen=True)
class Receipt:
    """A receipt as the schema defines it (primary or continuation)."""

    schema: str
    created_at: str
    model: str
    endpoint: str
    prompt_sha256: str
    answer_sha256: str
    usage: dict[str, int]
    answer_path: str
    context_files: tuple[str, ...] | None = None
    previous_answer_path: str | None = None
    message_keys: tuple[str, ...] | None = None

    @property
    def is_continuation(self) -> bool:
        return self.schema == CONTINUATION

    def to_json(self) -> dict[str, Any]:
        """Key order as the seed repository writes them, so receipts diff cleanly."""
        d: dict[str, Any] = {
            "schema": self.schema,
            "created_at": self.created_at,
            "model": self.model,
            "endpoint": self.endpoint,
            "prompt_sha256": self.prompt_sha256,
            "answer_sha256": self.answer_sha256,
            "usage": dict(self.usage),
        }
        if self.is_continuation:
            if self.message_keys is not None:
                d["message_keys"] = list(self.message_keys)
            d["previous_answer_path"] = self.previous_answer_path
        else:
            d["context_files"] = list(self.context_files or ())
        d["answer_path"] = self.answer_path
        return d

    def to_bytes(self) -> bytes:
        return (json.dumps(self.to_json(), indent=2, ensure_ascii=False) + "\n").encode("utf-8")

    @classmethod
    def from_json(cls, data: Any, *, where: str = "receipt") -> Receipt:
        """A validated receipt, or :class:`InputError` listing what is wrong."""
        problems = schema_problems(data)
        if problems:
            more = f" (+{len(problems) - 1} more)" if len(problems) > 1 else ""
            raise InputError(f"{where}: not a valid receipt: {problems[0]}{more}")
        cf = data.get("context_files")
        mk = data.get("message_keys")
        return cls(
            schema=data["schema"],
            created_at=data["created_at"],
            model=data["model"],
            endpoint=data["endpoint"],
            prompt_sha256=data["prompt_sha256"],
            answer_sha256=data["answer_sha256"],
            usage=dict(data["usage"]),
            answer_path=data["answer_path"],
            context_files=tuple(cf) if cf is not None else None,
            previous_answer_path=data.get("previous_answer_path"),
            message_keys=tuple(mk) if mk is not None else None,
        )

    @classmethod
    def load(cls, path: Path, *, shown: str | None = None) -> Receipt:
        shown = shown or str(path)
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            raise InputError(f"{shown}: no such receipt") from None
        except OSError as exc:
            raise InputError(f"{shown}: cannot read ({exc.strerror or exc})") from None
        try:
            data = json.loads(raw)
        except (ValueError, UnicodeDecodeError) as exc:
            raise InputError(f"{shown}: not JSON ({exc})") from None
        return cls.from_json(data, where=shown)


def created_at(now: datetime) -> str:
    """ISO-8601 UTC with seconds, as the seed receipts write it (``…T03:35:51+00:00``)."""
    return now.isoformat(timespec="seconds")


def validated_bytes(receipt: Receipt, *, shown: str) -> bytes:
    """The receipt's bytes, refused (never written) if they do not validate."""
    data = receipt.to_json()
    problems = schema_problems(data)
    if problems:
        raise OutputError(f"{shown}: receipt would not validate: {problems[0]}")
    return receipt.to_bytes()
