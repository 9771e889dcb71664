"""The one rebuild of a request from its record: verify's fast path agrees with the reference.

``Rebuilder.digest`` hashes the rebuilt request without re-serialising file texts; only a
match with ``prompt_sha256`` counts from it. On every fixture record and on many mutations of
them (texts, references, extra fields, look-alikes, awkward file contents) it must give the
hash of ``rebuild_body``'s bytes, or None; and ``check`` must accept exactly what the
reference rebuilds to the wanted hash.
"""

from __future__ import annotations

import copy
import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.errors import InputError
from deepseek_review.records.rebuild import Rebuilder, rebuild_body, repo_reader
from tests.support.builders import sha

HERE = Path(__file__).parents[1]
TAMPERED = HERE / "fixtures" / "tampered"
FIXTURE_RECORDS = sorted(TAMPERED.rglob("*.request.json"))
UNTOUCHED = TAMPERED / "untouched"
SPEC = "docs/spec.md"
Body = dict[str, Any]


def case_root(record: Path) -> Path:
    return TAMPERED / record.relative_to(TAMPERED).parts[0]


def body_of(record: Path) -> Body:
    body: Body = json.loads(record.read_text(encoding="utf-8"))["body"]
    return body


def reference(body: Body, root: Path) -> str | None:
    """The hash of what the reference rebuilds, None when it cannot (or refuses)."""
    try:
        rebuilt = rebuild_body(body, repo_reader(root))
    except InputError:
        return None
    return sha(rebuilt.body_bytes) if rebuilt.body_bytes is not None else None


def assert_agree(body: Body, root: Path, *, fast_expected: bool) -> None:
    want = reference(body, root)
    rebuilder = Rebuilder(repo_reader(root))
    fast = rebuilder.digest(body)
    if fast is not None:
        assert fast == want, "the fast path hashed bytes the reference does not rebuild"
    if fast_expected:
        assert fast == want
    if want is not None:
        assert rebuilder.check(body, want) is None
    try:
        rebuild_body(body, repo_reader(root))
    except InputError as exc:  # a malformed body: refused alike, with the same words
        with pytest.raises(InputError, match=re.escape(exc.message)):
            rebuilder.check(body, "sha256:" + "0" * 64)
    else:
        assert rebuilder.check(body, "sha256:" + "0" * 64) is not None


@pytest.mark.parametrize(
    "record", FIXTURE_RECORDS, ids=[str(p.relative_to(TAMPERED)) for p in FIXTURE_RECORDS]
)
def test_fast_and_reference_agree_on_every_fixture_record(record: Path) -> None:
    body = body_of(record)
    root = case_root(record)
    assert_agree(body, root, fast_expected=reference(body, root) is not None)


def _first_ref(body: Body) -> dict[str, Any]:
    for m in body["messages"]:
        if isinstance(m["content"], dict):
            for p in m["content"]["$parts"]:
                if isinstance(p, dict):
                    ref: dict[str, Any] = next(iter(p.values()))
                    return ref
    raise AssertionError("no reference")


def _user_parts(body: Body) -> list[Any]:
    parts: list[Any] = next(
        m["content"]["$parts"] for m in body["messages"] if isinstance(m["content"], dict)
    )
    return parts


Mutation = Callable[[Body], None]
#: (name, mutation, whether the fast path must still find the hash itself)
MUTATIONS: list[tuple[str, Mutation, bool]] = [
    ("text-part", lambda b: _user_parts(b).__setitem__(0, "changed text"), True),
    ("system-text", lambda b: b["messages"][0].__setitem__("content", "é\n\t\"\\\x01"), True),
    ("extra-message-field", lambda b: b["messages"][-1].__setitem__("prefix", True), True),
    ("odd-role", lambda b: b["messages"][0].__setitem__("role", 'sy"s\\\n中\x01'), True),
    ("extra-body-field", lambda b: b.__setitem__("seed", 7), True),
    ("unicode-extra", lambda b: b.__setitem__("x", "\u2028 中 \x00"), True),
    ("ref-hash", lambda b: _first_ref(b).__setitem__("sha256", "sha256:" + "1" * 64), False),
    ("ref-missing", lambda b: _first_ref(b).__setitem__("path", "docs/none.md"), False),
    ("ref-outside", lambda b: _first_ref(b).__setitem__("path", "../outside.md"), False),
    ("ref-without-bytes", lambda b: _first_ref(b).pop("bytes"), False),
    ("ref-bytes-bool", lambda b: _first_ref(b).__setitem__("bytes", True), False),
    ("content-extra-key", lambda b: b["messages"][1]["content"].__setitem__("x", 1), False),
    ("part-two-keys", lambda b: _user_parts(b).append({"$file": {}, "$answer": {}}), False),
    ("part-unknown", lambda b: _user_parts(b).append({"$blob": {"path": SPEC}}), False),
    ("part-number", lambda b: _user_parts(b).append(7), False),
    ("content-number", lambda b: b["messages"][0].__setitem__("content", 7), False),
    ("no-role", lambda b: b["messages"][0].pop("role"), False),
    ("no-messages", lambda b: b.pop("messages"), False),
    ("empty-messages", lambda b: b.__setitem__("messages", []), False),
    ("message-not-object", lambda b: b["messages"].append("hi"), False),
    ("look-alike-in-text", lambda b: _user_parts(b).append("\x00deepseek-review-content-1\x00"),
     True),
    ("look-alike-in-frame", lambda b: b.__setitem__("x", "\x00deepseek-review-content-0\x00"),
     False),
    ("many-messages", lambda b: b["messages"].extend({"role": "user", "content": "x"}
                                                    for _ in range(70)), False),
    ("same-file-twice-other-hash", lambda b: _user_parts(b).append(
        {"$file": {**_first_ref(b), "sha256": "sha256:" + "2" * 64}}), False),
    ("same-file-twice", lambda b: _user_parts(b).append({"$file": dict(_first_ref(b))}), True),
]  # fmt: skip


@pytest.mark.parametrize(
    "record",
    sorted(UNTOUCHED.rglob("*.request.json")),
    ids=lambda p: p.name.split("_")[-1],
)
@pytest.mark.parametrize(("name", "mutate", "fast"), MUTATIONS, ids=[m[0] for m in MUTATIONS])
def test_fast_and_reference_agree_on_mutations(
    record: Path, name: str, mutate: Mutation, fast: bool
) -> None:
    body = copy.deepcopy(body_of(record))
    mutate(body)
    assert_agree(body, UNTOUCHED, fast_expected=fast)


@pytest.mark.parametrize(
    "text",
    ["", "plain\n", "\x00\x01\x1f\x7f", "\b\f\r\n\t", 'q"uote \\ back', "é中😀\u2028\u2029",
     "x" * 100_000, "```\n" * 10],
)  # fmt: skip
def test_fast_and_reference_agree_on_awkward_file_contents(text: str, tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(UNTOUCHED, root)
    data = text.encode("utf-8")
    (root / SPEC).write_bytes(data)
    for record in sorted(root.rglob("*.request.json")):
        body = body_of(record)
        for m in body["messages"]:
            for p in m["content"]["$parts"] if isinstance(m["content"], dict) else []:
                ref = p.get("$file") if isinstance(p, dict) else None
                if ref and ref["path"] == SPEC:
                    ref.update(sha256=sha(data), bytes=len(data))
        assert_agree(body, root, fast_expected=True)


def test_a_file_that_is_not_utf8_is_changed_for_both(tmp_path: Path) -> None:
    root = tmp_path / "root"
    shutil.copytree(UNTOUCHED, root)
    (root / SPEC).write_bytes(b"\xff\xfe not utf-8")
    record = next(p for p in sorted(root.rglob("*.request.json")) if "continuation" not in p.name)
    body = body_of(record)
    _first_ref(body).update(sha256=sha(b"\xff\xfe not utf-8"))
    rebuilt = rebuild_body(body, repo_reader(root))
    assert rebuilt.body_bytes is None and rebuilt.changed == [SPEC]
    assert Rebuilder(repo_reader(root)).digest(body) is None


#: Values equal in Python to the fixture's own (0.0, 8192, true) but written otherwise.
TYPE_TWINS: list[tuple[str, Any]] = [
    ("temperature", 0), ("temperature", False), ("max_tokens", 8192.0), ("max_tokens", True),
    ("stream", 1), ("stream_options", {"include_usage": 1}),
]  # fmt: skip


def test_one_rebuilder_hashes_each_records_own_bytes_over_a_whole_run() -> None:
    """verify keeps one Rebuilder per run, which encodes the body around the messages once
    for all the records that share it: a record whose values differ from an earlier one's
    only in type (0 for 0.0, 1 for true) must still be hashed as its own bytes."""
    rebuilder = Rebuilder(repo_reader(UNTOUCHED))
    for record in sorted(UNTOUCHED.rglob("*.request.json")):
        body = body_of(record)
        assert rebuilder.digest(body) == reference(body, UNTOUCHED) is not None
        for key, value in TYPE_TWINS:
            twin = {**copy.deepcopy(body), key: value}
            assert (
                rebuilder.digest(twin) == reference(twin, UNTOUCHED) != reference(body, UNTOUCHED)
            )
