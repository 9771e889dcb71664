"""Receipts: building them, validating them against the frozen schema, reading them back.

The schema (``schemas/deepseek-review-receipt.schema.json``) is frozen and closed
(``additionalProperties: false``): a receipt holds exactly what it allows, and everything else
goes into the request record beside it. The validator is compiled once per process, with
format checking on, so ``date-time`` and ``uri`` are really checked.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepseek_review.errors import ConfigError, InputError, OutputError
from deepseek_review.git.runner import read_regular_file
from deepseek_review.options.table import name_of
from deepseek_review.records.canonical import RECEIPT_DECODER, DuplicateKey, pretty_json
from deepseek_review.records.receipt_fast import (
    CONTINUATION as CONTINUATION,  # the receipt kinds, named here too
)
from deepseek_review.records.receipt_fast import PRIMARY as PRIMARY
from deepseek_review.records.receipt_fast import as_written as as_written  # created_at's own form
from deepseek_review.records.receipt_fast import plainly_valid
from deepseek_review.util import safejson
from deepseek_review.util.resources import schema_path

if TYPE_CHECKING:
    from jsonschema.protocols import Validator


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


def fast_valid(data: Any) -> bool:
    """True when ``data`` is a valid receipt (a decision, never a message): the tool's own
    forms are accepted in plain Python (:func:`.receipt_fast.plainly_valid`, held to
    jsonschema by ``tests/verification/test_verify_schema.py``), everything else is jsonschema's
    call."""
    if not isinstance(data, dict):
        return False
    return plainly_valid(data) or validator().is_valid(data)


def schema_problems(data: Any) -> list[str]:
    """Empty when valid; else jsonschema's messages (the authority), ``<json path>: <msg>``."""
    if isinstance(data, dict) and plainly_valid(data):
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
        return pretty_json(self.to_json())

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
        raw = read_file(path, shown)
        if raw is None:
            raise InputError(f"{shown}: no such receipt")
        data, problem = parse_receipt(raw)
        if problem is not None:
            raise InputError(f"{shown}: {problem}")
        return cls.from_json(data, where=shown)


def read_file(path: Path, shown: str) -> bytes | None:
    """The bytes of a receipt or record (a regular file), None when there is none."""
    try:
        return read_regular_file(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(f"{shown}: cannot read ({exc.strerror or exc})") from None


def parse_receipt(raw: bytes) -> tuple[Any, str | None]:
    """The receipt's JSON value, or a problem: strict UTF-8 JSON, one value per key, and
    neither too big nor nested too deeply."""
    try:
        return safejson.loads(raw, what="receipt", decoder=RECEIPT_DECODER), None
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 (byte {exc.start})"
    except safejson.JSONRefused as exc:
        return None, str(exc)
    except DuplicateKey as exc:
        return None, f"not valid JSON: duplicate key {exc.args[0]!r}"
    except ValueError as exc:
        return None, f"not JSON ({exc})"


def created_at(now: datetime) -> str:
    """ISO-8601 UTC with seconds, as the seed receipts write it (``…T03:35:51+00:00``)."""
    return now.isoformat(timespec="seconds")


_PLACEHOLDER_SHA = "sha256:" + "0" * 64


def check_recordable(
    *, model: str, endpoint: str, folder: str, context_files: Sequence[str] | None
) -> None:
    """Refuse, before anything is sent, a review whose receipt could not be written.

    The frozen schema is strict (an RFC 3986 ``uri`` endpoint, non-empty fields, relative
    paths); a receipt refused after the answer arrived would leave a paid answer without one.
    A draft receipt with the review's real fields (and placeholder hashes) is validated now:
    a primary's when ``context_files`` is given, else a continuation's.
    """
    answer = "x.md" if folder in ("", ".") else f"{folder}/x.md"
    draft = Receipt(
        schema=CONTINUATION if context_files is None else PRIMARY,
        created_at="2000-01-01T00:00:00+00:00",
        model=model,
        endpoint=endpoint,
        prompt_sha256=_PLACEHOLDER_SHA,
        answer_sha256=_PLACEHOLDER_SHA,
        usage={"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
        answer_path=answer,
        context_files=None if context_files is None else tuple(context_files),
        previous_answer_path=answer if context_files is None else None,
    )
    problems = schema_problems(draft.to_json())
    if problems:
        raise ConfigError(
            f"the receipt of this review would not validate, so nothing is sent: {problems[0]}",
            hint="the receipt's schema is frozen: check "
            f"{name_of('endpoint')} and {name_of('model')}",
        )


def validated_bytes(receipt: Receipt, *, shown: str) -> bytes:
    """The receipt's bytes, refused (never written) if they do not validate."""
    data = receipt.to_json()
    problems = schema_problems(data)
    if problems:
        raise OutputError(f"{shown}: receipt would not validate: {problems[0]}")
    return receipt.to_bytes()
