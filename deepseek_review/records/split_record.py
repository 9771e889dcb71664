"""The split record ``<stem>.split.json``: what a ``run --split`` planned and what reviewed it.

Written beside the reviews at the end of every split run that did something (also when a
part failed: it says which are done), never over an existing one. It lists the plan's
parameters (window, answer cap, margin, the token estimator), every part with its files
(path, sha256, bytes, estimated tokens) and the receipts of the chain that reviewed it, the
synthesis's receipts and context, and every file not reviewed with why. Its JSON Schema is
``schemas/deepseek-review-split-v<N>.schema.json``, one a version; :func:`load_split` is its
one reader, of every version. Version 2 is version 1 with a change (``--diff``, ``--staged``):
its commits and files with their counts of hunks, and the hunks of each part; a record is
written in the oldest version that can say what it holds (:func:`split_version_for`).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from deepseek_review.errors import VerificationFailed
from deepseek_review.records.canonical import RECEIPT_DECODER, DuplicateKey, pretty_json
from deepseek_review.records.storage import write_output
from deepseek_review.util import safejson
from deepseek_review.util.resources import resource_dir

SPLIT_SCHEMA = "deepseek_review_split_v1"
#: Version 1 and a change: its commits, its files' hunks, each part's.
SPLIT_V2 = "deepseek_review_split_v2"
#: Every version written so far, oldest first: each stays readable.
SPLIT_VERSIONS = (SPLIT_SCHEMA, SPLIT_V2)
SPLIT_SUFFIX = ".split.json"
#: What a part or the synthesis can be: reviewed to the end, cut off at the token cap after
#: every continuation allowed, failed (an error), or not sent (the synthesis, while a part is
#: not done).
STATUSES = ("done", "truncated", "failed", "not run")


def split_version_for(change: bool) -> str:
    """The version a split record is written in: 2 only for a change."""
    return SPLIT_V2 if change else SPLIT_SCHEMA


def split_schema_path(version: str = SPLIT_SCHEMA) -> Path:
    """The schema file of ``version`` (a name of :data:`SPLIT_VERSIONS`)."""
    n = version.rpartition("_")[2]
    return resource_dir("schemas") / f"deepseek-review-split-{n}.schema.json"


@cache
def _validator(version: str) -> Any:
    import json

    import jsonschema

    schema = json.loads(split_schema_path(version).read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(schema)


def check_split(data: Any, where: str) -> dict[str, Any]:
    """``data`` if it is a split record by its version's schema, else
    :class:`VerificationFailed` naming the first problem and its place."""
    version = data.get("schema") if isinstance(data, dict) else None
    validator = _validator(version if version in SPLIT_VERSIONS else SPLIT_SCHEMA)
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        e = errors[0]
        at = "/".join(str(p) for p in e.absolute_path) or "the top"
        raise VerificationFailed(f"{where}: not a split record: at {at}: {e.message}")
    assert isinstance(data, dict)
    return data


def load_split(root: Path, rel: str) -> dict[str, Any]:
    """The split record at ``rel`` (repo-relative), read and checked against its schema."""
    from deepseek_review.git.runner import resolve_inside

    path, _ = resolve_inside(root, rel, what="split record")
    try:
        raw = safejson.read_file(path, nofollow=True)
        data = safejson.loads(raw, what=rel, decoder=RECEIPT_DECODER)
    except FileNotFoundError:
        raise VerificationFailed(f"{rel}: no such split record") from None
    except OSError as exc:
        raise VerificationFailed(f"{rel}: cannot read ({exc.strerror or exc})") from None
    except DuplicateKey as exc:
        raise VerificationFailed(f"{rel}: not a split record: key {exc} given twice") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise VerificationFailed(f"{rel}: not JSON ({exc})") from None
    return check_split(data, rel)


def write_split(path: Path, data: dict[str, Any], *, shown: str) -> None:
    """Write a split record (checked first: the tool never writes one its schema refuses);
    never over an existing file."""
    check_split(data, shown)
    write_output(path, pretty_json(data), shown=shown)
