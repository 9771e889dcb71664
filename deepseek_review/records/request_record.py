"""The request record ``<stem>.request.json``: what a segment's request was, typed.

Written beside every answer (after the answer, before the receipt), it holds the request body
with every file text replaced by a reference (:mod:`.parts`), so the exact bytes whose hash is
``prompt_sha256`` can be rebuilt, and what the server answered beyond the receipt's fields.
Its JSON Schema is ``schemas/deepseek-review-request-record-v<N>.schema.json``, one file per
version (:data:`RECORD_VERSIONS`). Version 2 adds line ranges: a ``$file`` reference, a
``context_files`` entry and a ``git.files`` pin may say ``"lines": [first, last]`` (only those
lines of the file were sent). A record is written in the oldest version that can say what it
holds (:func:`version_for`, as git writes its index): a record without a range is version 1,
byte for byte as before, so every reader of version 1 still reads it; one with a range is
version 2, which a reader of version 1 refuses rather than rebuilding the whole file. Version 3
adds runs of hunks: the ``git.diff`` of a part of a change reviewed in parts (``run --split``)
may list ``"hunks"``, the only hunks of those files the change shows; a reader of version 2
refuses it rather than making the whole change again.

:meth:`RequestRecord.load` accepts every version written so far. A reader is tolerant of
what is absent (``None``: records of hand or of other tools check what they can) and of
unknown keys, and strict about the types of what is there: a field of the wrong type makes
the whole record invalid, named with its JSON path.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from deepseek_review.errors import InputError
from deepseek_review.records.canonical import RECORD_DECODER, pretty_json
from deepseek_review.records.lines import Lines, valid_lines
from deepseek_review.records.parts import RecordedMessage, parse_messages
from deepseek_review.util import safejson

RECORD_V1 = "deepseek_review_request_record_v1"
#: Version 1 and line ranges (``"lines": [first, last]``).
RECORD_V2 = "deepseek_review_request_record_v2"
#: The newest version: version 2 and runs of hunks (a part of a change: ``git.diff.hunks``).
RECORD_SCHEMA = "deepseek_review_request_record_v3"
#: Every record version this tool wrote, oldest first: each stays readable.
RECORD_VERSIONS = (RECORD_V1, RECORD_V2, RECORD_SCHEMA)


def version_for(ranged: bool, hunked: bool = False) -> str:
    """The version a record is written in: the oldest that can say what it holds (version 3
    only when a change was sent in part, version 2 only when a file was)."""
    if hunked:
        return RECORD_SCHEMA
    return RECORD_V2 if ranged else RECORD_V1


_Types = frozenset[type]
_STR: _Types = frozenset({str})
_OPT_STR: _Types = frozenset({str, type(None)})
_INT: _Types = frozenset({int})
_NUMBER: _Types = frozenset({int, float})
_BOOL: _Types = frozenset({bool})
_LIST: _Types = frozenset({list})
_OPT_OBJECT: _Types = frozenset({dict, type(None)})
_OBJECT: _Types = frozenset({dict})
_NAMES = {
    _STR: "a string",
    _OPT_STR: "a string or null",
    _INT: "an integer",
    _NUMBER: "a number",
    _BOOL: "true or false",
    _LIST: "a list",
    _OPT_OBJECT: "an object or null",
    _OBJECT: "an object",
}


class _Absent:
    """What an absent field reads as while its type is checked (absent is allowed where
    null is not)."""


_ABSENT = _Absent()


class _Shape:
    """The typed fields of one kind of JSON object in a record, in order.

    :meth:`values` checks every field's type (a bool is not an integer; absent is allowed,
    null only where the table says so). A verify run reads thousands of records that share
    a handful of type signatures, so each signature found valid is remembered (with where
    its absent fields are): most records cost one tuple to check.
    """

    def __init__(self, path: str, fields: tuple[tuple[str, _Types], ...]) -> None:
        self.path = path
        self.keys = tuple(k for k, _ in fields)
        self.fields = fields
        self._absents = (_ABSENT,) * len(fields)
        self._valid: dict[tuple[type, ...], tuple[int, ...]] = {}

    def values(self, data: Mapping[str, Any], where: str, path: str | None = None) -> list[Any]:
        """The fields' values (None where absent); :class:`InputError` naming a bad one."""
        got = list(map(data.get, self.keys, self._absents))
        signature = tuple(map(type, got))
        absent = self._valid.get(signature)
        if absent is None:
            absent = self._check(signature, where, path or self.path)
        for i in absent:
            got[i] = None
        return got

    def _check(self, signature: tuple[type, ...], where: str, path: str) -> tuple[int, ...]:
        for (key, types), t in zip(self.fields, signature, strict=True):
            if t not in types and t is not _Absent:
                raise _invalid(where, f"{path}.{key}", _NAMES[types])
        absent = tuple(i for i, t in enumerate(signature) if t is _Absent)
        if len(self._valid) < 256:
            self._valid[signature] = absent
        return absent


_TOP = _Shape(
    "$",
    (
        ("tool", _STR),
        ("kind", _STR),
        ("created_at", _STR),
        ("answer_path", _STR),
        ("receipt_path", _STR),
        ("endpoint", _STR),
        ("prompt_sha256", _STR),
        ("prompt_token_estimate", _INT),
        ("response", _OBJECT),
        ("continuation", _OBJECT),
        ("template", _OPT_OBJECT),
        ("context_files", _LIST),
        ("findings", _OPT_OBJECT),
        ("git", _OBJECT),
    ),
)
_RESPONSE = _Shape(
    "$.response",
    (
        ("finish_reason", _OPT_STR),
        ("usage", _OPT_OBJECT),
        ("usage_reported", _BOOL),
        ("message_keys", _LIST),
        ("model", _OPT_STR),
        ("attempts", _INT),
        ("elapsed_seconds", _NUMBER),
        ("content_sha256", _STR),
        ("echo_stripped_chars", _INT),
        ("reasoning_chars", _INT),
        ("reasoning_path", _OPT_STR),
        ("reasoning_sha256", _OPT_STR),
        ("usage_details", _OPT_OBJECT),
    ),
)
_CONTINUATION = _Shape(
    "$.continuation",
    (
        ("index", _INT),
        ("style", _STR),
        ("server", _STR),
        ("primary_answer_path", _STR),
        ("previous_answer_path", _STR),
    ),
)
_USAGE_KEYS = ("prompt_tokens", "completion_tokens", "total_tokens")
_USAGE_TYPES = (int, int, int)
_ENTRY = _Shape(
    "$.context_files[]", (("path", _STR), ("sha256", _STR), ("bytes", _INT), ("lines", _LIST))
)
_TEMPLATE = _Shape("$.template", (("name", _STR), ("sha256", _STR)))
_FINDINGS = _Shape("$.findings", (("path", _STR), ("sha256", _STR)))


def _invalid(where: str, path: str, expected: str) -> InputError:
    return InputError(f"{where}: not a valid request record: {path} is not {expected}")


def _template(data: Any, where: str) -> tuple[str, str]:
    got = _TEMPLATE.values(data, where) if isinstance(data, dict) else [None]
    if None in got:
        raise _invalid(where, "$.template", "an object with name and sha256")
    return cast(tuple[str, str], (got[0], got[1]))


def _findings(data: Any, where: str) -> tuple[str, str]:
    got = _FINDINGS.values(data, where) if isinstance(data, dict) else [None]
    if None in got:
        raise _invalid(where, "$.findings", "an object with path and sha256")
    return cast(tuple[str, str], (got[0], got[1]))


def _file_entries(files: list[Any], where: str) -> tuple[FileEntry, ...]:
    out = []
    for i, f in enumerate(files):
        path = None if isinstance(f, dict) else f"$.context_files[{i}]"
        got = [None] if path else _ENTRY.values(f, where, "$.context_files[]")
        if None in got[:3]:
            raise _invalid(where, f"$.context_files[{i}]", "an object with path, sha256 and bytes")
        if got[3] is not None:
            got[3] = valid_lines(got[3])
            if got[3] is None:
                raise _invalid(
                    where, f"$.context_files[{i}].lines", "[first, last] (1 <= first <= last)"
                )
        out.append(FileEntry(*got))
    return tuple(out)


@dataclass(slots=True)
class FileEntry:
    """A context file of a primary request: what the record's ``context_files`` lists."""

    path: str
    sha256: str
    """Of what was sent: the whole file, or its lines."""
    size: int
    lines: Lines | None = None
    """Only these lines of the file were sent (version 2)."""

    def to_json(self) -> dict[str, Any]:
        d: dict[str, Any] = {"path": self.path, "sha256": self.sha256, "bytes": self.size}
        if self.lines is not None:
            d["lines"] = list(self.lines)
        return d


@dataclass(slots=True)
class Response:
    """What the server answered, beyond the receipt's fields (None: not recorded)."""

    finish_reason: str | None = None
    usage: Mapping[str, int] | None = None
    usage_reported: bool | None = None
    message_keys: tuple[str, ...] | None = None
    model: str | None = None
    attempts: int | None = None
    elapsed_seconds: float | None = None
    content_sha256: str | None = None
    """The server's content before an echoed prefill was cut off it."""
    echo_stripped_chars: int | None = None
    reasoning_chars: int | None = None
    reasoning_path: str | None = None
    reasoning_sha256: str | None = None
    usage_details: Mapping[str, int] | None = None
    """Counts the server reported beyond ``usage`` (reasoning tokens, prompt-cache hits and
    misses); absent from records written before them, and when there were none."""

    def to_json(self) -> dict[str, Any]:
        details = {} if not self.usage_details else {"usage_details": dict(self.usage_details)}
        return {
            "finish_reason": self.finish_reason,
            "usage": None if self.usage is None else dict(self.usage),
            "usage_reported": self.usage_reported,
            "message_keys": None if self.message_keys is None else list(self.message_keys),
            "model": self.model,
            "attempts": self.attempts,
            "elapsed_seconds": self.elapsed_seconds,
            "content_sha256": self.content_sha256,
            "echo_stripped_chars": self.echo_stripped_chars,
            "reasoning_chars": self.reasoning_chars,
            "reasoning_path": self.reasoning_path,
            "reasoning_sha256": self.reasoning_sha256,
            **details,
        }

    @classmethod
    def read(cls, data: Mapping[str, Any], where: str) -> Response:
        v = _RESPONSE.values(data, where)
        usage, keys = v[1], v[3]
        if usage is not None and tuple(map(type, map(usage.get, _USAGE_KEYS))) != _USAGE_TYPES:
            raise _invalid(where, "$.response.usage", "a usage object of three integers")
        if keys is not None:
            try:
                "".join(keys)  # fails unless every item is a string
            except TypeError:
                raise _invalid(where, "$.response.message_keys", "a list of strings") from None
            v[3] = tuple(keys)
        details = v[12]
        if details is not None and not all(type(n) is int and n >= 0 for n in details.values()):
            raise _invalid(where, "$.response.usage_details", "an object of token counts")
        return cls(*v)


@dataclass(slots=True)
class Continuation:
    """Where a continuation request stands in its chain."""

    index: int | None = None
    style: str | None = None
    server: str | None = None
    primary_answer_path: str | None = None
    previous_answer_path: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "style": self.style,
            "server": self.server,
            "primary_answer_path": self.primary_answer_path,
            "previous_answer_path": self.previous_answer_path,
        }

    @classmethod
    def read(cls, data: Mapping[str, Any], where: str) -> Continuation:
        return cls(*_CONTINUATION.values(data, where))


@dataclass(slots=True)
class RequestRecord:
    """One request record. ``body`` is the request body with ``$parts`` contents.

    Read-only by convention, not frozen: ``verify`` builds one per receipt.
    """

    body: Mapping[str, Any]
    tool: str | None = None
    kind: str | None = None
    """``primary`` or ``continuation``."""
    created_at: str | None = None
    answer_path: str | None = None
    receipt_path: str | None = None
    endpoint: str | None = None
    prompt_sha256: str | None = None
    prompt_token_estimate: int | None = None
    response: Response = field(default_factory=Response)
    continuation: Continuation | None = None
    template: tuple[str, str] | None = None
    """A primary's template: (name, sha256)."""
    context_files: tuple[FileEntry, ...] | None = None
    record: str = RECORD_V1
    """The version (:func:`version_for`)."""
    findings: tuple[str, str] | None = None
    """The findings file written beside the answer (``run --findings``): (path, sha256)."""
    git: Mapping[str, Any] | None = None
    """A chain's pins in git (:mod:`context.pins`), its primary's in every record of the chain:
    commits, the diff's settings and hash,
    each context file's blob or working-tree hash. Absent from records before pinning."""
    _messages: list[RecordedMessage] | None = field(
        default=None, init=False, repr=False, compare=False
    )

    @property
    def is_continuation(self) -> bool:
        return self.kind == "continuation"

    @property
    def messages(self) -> list[RecordedMessage]:
        """The body's messages, parsed (:class:`InputError` when malformed; parsed once)."""
        if self._messages is None:
            self._messages = parse_messages(self.body)
        return self._messages

    def to_json(self) -> dict[str, Any]:
        """The record as the tool writes it (key order included, so records diff cleanly)."""
        d: dict[str, Any] = {
            "record": self.record,
            "tool": self.tool,
            "kind": self.kind,
            "created_at": self.created_at,
            "answer_path": self.answer_path,
            "receipt_path": self.receipt_path,
            "endpoint": self.endpoint,
            "prompt_sha256": self.prompt_sha256,
            "prompt_token_estimate": self.prompt_token_estimate,
            "body": self.body,
            "response": self.response.to_json(),
        }
        if self.is_continuation:
            d["continuation"] = (self.continuation or Continuation()).to_json()
        else:
            t = self.template
            d["template"] = None if t is None else {"name": t[0], "sha256": t[1]}
            d["context_files"] = [f.to_json() for f in self.context_files or ()]
        if self.git is not None:
            d["git"] = self.git
        if self.findings is not None:
            d["findings"] = {"path": self.findings[0], "sha256": self.findings[1]}
        return d

    def to_bytes(self) -> bytes:
        return pretty_json(self.to_json())

    @classmethod
    def load(cls, raw: bytes, where: str) -> RequestRecord:
        """The record in ``raw``; :class:`InputError` naming ``where`` when it is not JSON,
        not a request record of a known version, or a field has the wrong type."""
        try:
            data = safejson.loads(raw, what="request record", decoder=RECORD_DECODER)
        except safejson.JSONRefused as exc:
            raise InputError(f"{where}: {exc}") from None
        except ValueError as exc:
            raise InputError(f"{where}: request record is not JSON ({exc})") from None
        return cls.from_json(data, where)

    @classmethod
    def from_json(cls, data: Any, where: str) -> RequestRecord:
        if (
            not isinstance(data, dict)
            or data.get("record") not in RECORD_VERSIONS
            or not isinstance(data.get("body"), dict)
        ):
            raise InputError(
                f"{where}: not a request record of a known version ({' or '.join(RECORD_VERSIONS)})"
            )
        v = _TOP.values(data, where)
        response, cont, template, files, found = v[8], v[9], v[10], v[11], v[12]
        git = v[13]
        return cls(  # positional, in field order
            data["body"],
            v[0],
            v[1],
            v[2],
            v[3],
            v[4],
            v[5],
            v[6],
            v[7],
            Response() if response is None else Response.read(response, where),
            None if cont is None else Continuation.read(cont, where),
            None if template is None else _template(template, where),
            None if files is None else _file_entries(files, where),
            data["record"],
            None if found is None else _findings(found, where),
            git,
        )
