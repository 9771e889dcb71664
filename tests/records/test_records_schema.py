"""The request record: a published, versioned JSON Schema, and one typed reader of it.

Every record the tool writes validates against the schema and reads back to the same bytes;
every record of the fixtures (written by earlier versions, some tampered with) still loads;
and a field of the wrong type is refused by the reader exactly where the schema refuses it.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.errors import InputError
from deepseek_review.records.request_record import (
    RECORD_SCHEMA,
    RECORD_V2,
    RECORD_VERSIONS,
    RequestRecord,
)
from deepseek_review.util.resources import record_schema_path
from tests.support.cli import files_under, review
from tests.support.schema import record_validator, schema_errors, validator_of

HERE = Path(__file__).parents[1]
FIXTURE_RECORDS = sorted((HERE / "fixtures").rglob("*.request.json"))
UNTOUCHED = sorted((HERE / "fixtures" / "tampered" / "untouched").rglob("*.request.json"))


def records_under(folder: Path) -> list[Path]:
    return [folder / rel for rel in files_under(folder) if rel.endswith(".request.json")]


def test_the_schema_is_versioned_and_names_the_version_records_carry() -> None:
    schema = json.loads(record_schema_path().read_text(encoding="utf-8"))
    assert schema["properties"]["record"] == {"const": RECORD_SCHEMA}
    assert schema["$id"].endswith(
        f"/deepseek-review-request-record-{RECORD_SCHEMA[-2:]}.schema.json"
    )
    assert RECORD_VERSIONS[-1] == RECORD_SCHEMA
    for version in RECORD_VERSIONS:  # one schema file per version, none dropped
        path = record_schema_path(version.rsplit("_", 1)[1])
        assert json.loads(path.read_text("utf-8"))["properties"]["record"] == {"const": version}


def test_version_2_is_version_1_with_line_ranges_and_nothing_else() -> None:
    """Every record of version 1 would be a valid record of version 2 but for its name: so a
    record is written as version 2 only when it holds a range, and reads the same either way."""
    v1, v2 = (json.loads(record_schema_path(v).read_text("utf-8")) for v in ("v1", "v2"))
    for path in FIXTURE_RECORDS:
        data = json.loads(path.read_text("utf-8"))
        if data["record"] == RECORD_VERSIONS[0]:
            assert [e.message for e in record_validator(RECORD_SCHEMA).iter_errors(data)] == [
                f"'{RECORD_SCHEMA}' was expected"
            ], path.name
    assert set(v2["$defs"]) - set(v1["$defs"]) == {"lines", "fileReference"}


def test_version_3_is_version_2_with_runs_of_hunks_and_nothing_else() -> None:
    """A record is written as version 3 only when a part of a change shows some hunks of a
    file (``run --split --diff``): the schemas differ in the version's name and in
    ``git.diff.hunks`` alone."""
    v2, v3 = (json.loads(record_schema_path(v).read_text("utf-8")) for v in ("v2", "v3"))

    def diff_of(schema: dict[str, Any]) -> dict[str, Any]:
        found: dict[str, Any] = schema["properties"]["git"]["properties"]["diff"]["oneOf"][1]
        return found

    hunks = diff_of(v3)["properties"].pop("hunks")
    assert hunks["items"]["required"] == ["path", "hunks"]
    for key in ("$id", "title", "description"):
        v2.pop(key), v3.pop(key)
    v2["properties"].pop("record"), v3["properties"].pop("record")
    assert v2 == v3


@pytest.mark.parametrize(
    "args",
    [
        ("--max-tokens", "20", "--keep-reasoning"),
        ("--max-tokens", "20", "--continuation-style", "directive", "--no-stream"),
        ("--max-tokens", "20", "--server", "deepseek", "--extra-body", '{"seed": 7}'),
    ],
    ids=["prefill-reasoning", "directive-no-stream", "deepseek-prefix-extra-body"],
)
def test_every_record_a_review_writes_validates_and_reads_back_to_its_bytes(
    repo, make_simulator, cli, args
):
    sim = make_simulator(answer_words=60, reasoning_words=5, echo_prefill=True)
    r = review(cli, sim, *args)
    assert r.code == 0, r.err
    written = records_under(repo / "reviews")
    assert len(written) == len(r.json()["segments"]) >= 2
    for path in written:
        raw = path.read_bytes()
        assert schema_errors(json.loads(raw)) == [], path.name
        assert RequestRecord.load(raw, path.name).to_bytes() == raw


def test_a_record_without_usage_validates(repo, make_simulator, cli):
    r = review(cli, make_simulator(omit_usage=True))
    assert r.code == 0, r.err
    (path,) = records_under(repo / "reviews")
    raw = path.read_bytes()
    assert schema_errors(json.loads(raw)) == []
    record = RequestRecord.load(raw, path.name)
    assert record.response.usage is None and record.response.usage_reported is False


def test_a_record_with_a_line_range_validates_as_version_2_and_reads_back_to_its_bytes(
    repo, make_simulator, cli
):
    (repo / "docs" / "long.md").write_text("".join(f"line {i}\n" for i in range(50)), "utf-8")
    sim = make_simulator(answer_words=60)
    r = review(cli, sim, "-c", "docs/long.md#L10-L20", "--max-tokens", "20")
    assert r.code == 0, r.err
    written = records_under(repo / "reviews")
    assert len(written) == len(r.json()["segments"]) >= 2
    for path in written:
        raw = path.read_bytes()
        data = json.loads(raw)
        assert data["record"] == RECORD_V2
        assert schema_errors(data) == [], path.name
        assert RequestRecord.load(raw, path.name).to_bytes() == raw


@pytest.mark.parametrize(
    "lines", [[0, 3], [5, 4], [1], [1, 2, 3], ["1", "2"], [1.0, 2], None, "1-2"]
)
def test_a_reference_with_lines_that_are_no_range_is_refused_by_reader_and_schema(
    lines: Any,
) -> None:
    ref = {"path": "a.py", "sha256": "sha256:" + "0" * 64, "bytes": 1, "lines": lines}
    body = {"messages": [{"role": "user", "content": {"$parts": [{"$file": ref}]}}]}
    record = RequestRecord.from_json({"record": RECORD_SCHEMA, "body": body}, "x")
    with pytest.raises(InputError) as exc:
        record.messages  # noqa: B018
    assert "has lines that are not [first, last] of a $file" in exc.value.message
    full = {**_minimal_valid(), "body": {**_minimal_valid()["body"], **body}}
    # JSON Schema cannot say first <= last, and takes 1.0 for an integer: the reader can.
    if lines not in ([5, 4], [1.0, 2]):
        assert schema_errors(full)


def _minimal_valid() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(UNTOUCHED[0].read_text("utf-8"))
    data["record"] = RECORD_SCHEMA
    return data


@pytest.mark.parametrize(
    "path", FIXTURE_RECORDS, ids=[str(p.relative_to(HERE / "fixtures")) for p in FIXTURE_RECORDS]
)
def test_records_written_by_earlier_versions_still_load(path: Path) -> None:
    raw = path.read_bytes()
    record = RequestRecord.load(raw, path.name)
    assert record.record in RECORD_VERSIONS
    assert schema_errors(json.loads(raw)) == []
    assert record.to_bytes() == raw


def test_a_minimal_record_of_hand_loads_with_what_it_lacks_as_none() -> None:
    record = RequestRecord.load(json.dumps({"record": RECORD_SCHEMA, "body": {}}).encode(), "x")
    assert record.answer_path is None and record.response.finish_reason is None
    assert record.context_files is None and record.continuation is None


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"{", "x: request record is not JSON ("),
        (b'{"record": "other", "body": {}}', "x: not a request record of a known version ("),
        (b'{"record": "' + RECORD_SCHEMA.encode() + b'"}', "not a request record of a known"),
        (b'{"record": "' + RECORD_SCHEMA.encode() + b'", "body": {}, "x": NaN}', "not JSON"),
        (b"[" * 200 + b"]" * 200, "x: request record is nested too deeply"),
    ],
    ids=["not-json", "other-version", "no-body", "nan", "deep"],
)
def test_what_is_not_a_record_is_refused_naming_the_file(raw: bytes, problem: str) -> None:
    with pytest.raises(InputError) as exc:
        RequestRecord.load(raw, "x")
    assert problem in exc.value.message


# --------------------------------------------------------------------------- types


def _typed_fields(record: dict[str, Any]) -> list[tuple[str, ...]]:
    """Every field the reader types: (key,) at the top, (object, key) one level down."""
    out: list[tuple[str, ...]] = [(k,) for k in record if k not in ("record", "body")]
    for outer in ("response", "continuation", "template"):
        if isinstance(record.get(outer), dict):
            out += [(outer, k) for k in record[outer]]
    if record.get("context_files"):
        out += [("context_files", "0", k) for k in record["context_files"][0]]
    return out


def _with(record: dict[str, Any], where: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(record)
    node: Any = out
    for k in where[:-1]:
        node = node[int(k)] if isinstance(node, list) else node[k]
    node[where[-1]] = value
    return out


WRONG = ["text", 7, 2.5, True, None, [], {}, ["x", 1]]


def _ranged(path: Path) -> dict[str, Any]:
    """A record of version 2 made of a fixture's: its first context file sent in part (for
    the types of ``lines``; its body no longer matches, which types do not care about)."""
    record: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    record["record"] = RECORD_SCHEMA
    record["context_files"][0]["lines"] = [1, 2]
    return record


def _mutations() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path, record in [
        *((p, json.loads(p.read_text(encoding="utf-8"))) for p in UNTOUCHED),
        (UNTOUCHED[0].with_name("v2-" + UNTOUCHED[0].name), _ranged(UNTOUCHED[0])),
    ]:
        for where in _typed_fields(record):
            for value in WRONG:
                out.append(
                    (f"{path.name[-20:]}:{'.'.join(where)}={value!r}", _with(record, where, value))
                )
    return out


MUTATIONS = _mutations()


def test_the_mutations_cover_every_typed_field_and_most_are_invalid() -> None:
    invalid = [name for name, data in MUTATIONS if schema_errors(data)]
    assert len(MUTATIONS) > 500 and len(invalid) > 0.7 * len(MUTATIONS)


def _is_type_error(e: Any) -> bool:
    """A value of the wrong JSON type (a missing field is allowed; formats are not types)."""
    if e.validator == "oneOf":
        return all(_is_type_error(c) for c in e.context)
    return bool(e.validator == "type")


def _reader_disagrees(name: str, data: dict[str, Any]) -> str | None:
    """Where the reader parts from the schema on ``data``: it refuses what the schema accepts,
    words the refusal otherwise, or accepts a wrong type the schema refuses."""
    type_errors = [e for e in validator_of(data).iter_errors(data) if _is_type_error(e)]
    try:
        RequestRecord.from_json(data, "x")
    except InputError as exc:
        if not schema_errors(data):
            return f"{name}: the reader refused what the schema accepts: {exc.message}"
        if "x: not a valid request record: $." not in exc.message:
            return f"{name}: refused without naming the field: {exc.message}"
    else:
        if type_errors:
            return f"{name}: the reader accepted a wrong type"
    return None


def test_a_field_of_the_wrong_type_is_refused_where_the_schema_refuses_it() -> None:
    """The reader checks types, the schema also formats and ranges: whatever the reader
    accepts, the schema accepts but for those; whatever it refuses, the schema refuses.
    Every mutation in one test: the message lists each one judged otherwise."""
    failing = [f for name, data in MUTATIONS if (f := _reader_disagrees(name, data))]
    assert not failing, f"{len(failing)} of {len(MUTATIONS)} mutations:\n" + "\n".join(failing)
