"""Receipts: building them, validating them against the frozen schema, reading them back.

The schema (``schemas/deepseek-review-receipt.schema.json``) is frozen and closed
(``additionalProperties: false``): a receipt holds exactly what it allows, and everything else
goes into the request record beside it. The validator is compiled once per process, with
format checking on, so ``date-time`` and ``uri`` are really checked.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import date, datetime
from functools import cache, lru_cache, partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import safejson
from ..errors import ConfigError, InputError, OutputError
from ..options import name_of
from ..repo import read_regular_file
from ..resources import schema_path
from .canonical import RECEIPT_DECODER, DuplicateKey, pretty_json

if TYPE_CHECKING:
    from jsonschema.protocols import Validator

PRIMARY = "ollama_deepseek_review_receipt_v1"
CONTINUATION = "ollama_deepseek_review_continuation_receipt_v1"


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


#: Forms the tool writes, which are surely valid: they spare importing (and compiling) the
#: RFC validators in every ``verify`` process. Anything else goes to the validators, so these
#: only ever say yes sooner (``tests/test_verify_speed.py`` holds them to the validators).
_PLAIN_DATE_TIME = re.compile(
    r"[0-9]{4}-(?:0[1-9]|1[0-2])-[0-9]{2}T(?:[01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]"
    r"(?:\.[0-9]+)?(?:Z|[+-](?:[01][0-9]|2[0-3]):[0-5][0-9])"
)
_PLAIN_URI = re.compile(r"https?://[A-Za-z0-9._~-]+(?::[0-9]*)?(?:/[A-Za-z0-9._~-]*)*")


def _plain_date_time(value: str) -> bool:
    """A date-time of the RFC 3339 form whose day exists in its month (year 1 on)."""
    if _PLAIN_DATE_TIME.fullmatch(value) is None:
        return False
    try:
        return date(int(value[:4]), int(value[5:7]), int(value[8:10])) is not None
    except ValueError:
        return False


@lru_cache(maxsize=8192)
def _is_date_time(value: str) -> bool:
    if _as_written(value):  # what created_at writes: no validator to load for it
        return True
    # jsonschema's own "date-time" check (format-nongpl): RFC 3339 after upper-casing.
    if _plain_date_time(value.upper()):
        return True
    from rfc3339_validator import validate_rfc3339  # type: ignore[import-untyped]

    return bool(validate_rfc3339(value.upper()))


def _as_written(value: str) -> bool:
    """True when ``value`` is exactly what :func:`created_at` writes for some instant: a UTC
    RFC 3339 date-time, certainly (False only means "ask the full check")."""
    if not value.endswith("+00:00"):
        return False
    try:
        return datetime.fromisoformat(value).isoformat(timespec="seconds") == value
    except ValueError:
        return False


@lru_cache(maxsize=1024)
def _is_uri(value: str) -> bool:
    from ..endpoint import plainly_uri

    if plainly_uri(value):  # an endpoint URL as this tool builds them: certainly a URI
        return True
    # jsonschema prefers rfc3987 when it is installed, else rfc3986-validator: so do we.
    if _PLAIN_URI.fullmatch(value) is not None:
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


@cache
def fast_validators() -> dict[str, Callable[[Any], Any]]:
    """The schema as Python, one function per receipt kind, compiled once.

    The schema's top level is ``oneOf`` over the two kinds, told apart by the ``schema``
    ``const``, so a receipt is valid exactly when the branch its ``schema`` names accepts it;
    running only that branch spares an exception per receipt. ``tests/test_verify_schema.py``
    proves this agrees with jsonschema on valid receipts and many single-field mutations.

    The functions come from ``_compiled_schema.py``, generated by fastjsonschema at
    development time (``scripts/compile_receipt_schema.py``), which saves every process about
    100 ms; if that file does not match the bundled schema's hash, the schema is compiled
    here instead, so a stale file can never decide anything.
    """
    import hashlib

    formats = {"date-time": _is_date_time, "uri": _is_uri}
    raw = schema_path().read_bytes()
    from .. import _compiled_schema as compiled

    if hashlib.sha256(raw).hexdigest() == compiled.SCHEMA_SHA256:
        fns = {PRIMARY: compiled.validate_primary, CONTINUATION: compiled.validate_continuation}
        return {k: partial(fn, custom_formats=formats) for k, fn in fns.items()}
    import fastjsonschema  # pragma: no cover  (only when the generated file is stale)

    schema = json.loads(raw)
    out = {}
    for kind, branch in ((PRIMARY, "primaryReceipt"), (CONTINUATION, "continuationReceipt")):
        sub = {"$id": schema["$id"], "$defs": schema["$defs"], "$ref": f"#/$defs/{branch}"}
        out[kind] = fastjsonschema.compile(sub, formats=formats)
    return out


def fast_valid(data: Any) -> bool:
    """True when the compiled validator accepts ``data`` (a decision, never a message)."""
    if not isinstance(data, dict):
        return False
    kind = data.get("schema")
    fn = fast_validators().get(kind) if isinstance(kind, str) else None
    if fn is None:
        return False
    try:
        fn(data)
    except ValueError:  # both fastjsonschema's and the generated module's errors are ValueErrors
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
