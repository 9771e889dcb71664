"""The checks ``verify`` makes of a split record (``<stem>.split.json``,
:mod:`deepseek_review.records.split_record`).

A split record checks out when it is one by its schema; every part's and the synthesis's
receipts exist, verify (:func:`deepseek_review.verification.verify`) and form one whole
chain, primary first; the parts together name each file once, none of them also listed as not
reviewed; a done part's primary receipt names exactly the part's files and its request
record holds each with the plan's sha256; and a done synthesis's context is exactly the
parts' answers, part by part, each with the hash its receipt gives it. Of a change
(version 2), every file it shows is reviewed exactly once, whole or in runs of hunks that
follow each other from the first to the last (or listed as not reviewed), and each done
part's request record shows exactly the part's files and hunks of the change's commits
(whose bytes ``verify`` makes again from those commits).
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any

from deepseek_review.errors import InputError, ReviewError
from deepseek_review.git.runner import read_regular_file, resolve_inside
from deepseek_review.records.naming import sibling
from deepseek_review.records.request_record import RequestRecord
from deepseek_review.records.split_record import SPLIT_SUFFIX, load_split


@dataclass
class SplitReport:
    path: str
    problems: list[str] = field(default_factory=list)
    summary: str = ""

    @property
    def ok(self) -> bool:
        return not self.problems


def split_records(root: Path, paths: Sequence[str]) -> list[str]:
    """The split records ``paths`` name: themselves, or found below the folders (symlinked
    folders not entered), repo-relative, sorted."""
    out: set[str] = set()
    for p in paths:
        real, rel = resolve_inside(root, p, what="PATH")
        if not real.exists() and not real.is_symlink():
            from deepseek_review.records.stored import no_such_path

            raise no_such_path(p)
        if rel.endswith(SPLIT_SUFFIX) and not real.is_dir():
            out.add(rel)
            continue
        if not real.is_dir() or real.is_symlink():
            continue
        for top, dirs, files in os.walk(real):
            dirs[:] = sorted(d for d in dirs if not os.path.islink(os.path.join(top, d)))
            base = Path(top).relative_to(root).as_posix()
            out.update(f"{base}/{f}" for f in files if f.endswith(SPLIT_SUFFIX))
    return sorted(out)


def check_split_record(root: Path, rel: str, *, strict: bool = False) -> SplitReport:
    """The problems of the split record ``rel`` (a malformed one: its one problem)."""
    report = SplitReport(rel)
    try:
        data = load_split(root, rel)
    except ReviewError as exc:
        message = exc.message
        report.problems.append(message.removeprefix(f"{rel}: "))
        return report
    problems = report.problems
    parts: list[dict[str, Any]] = data["parts"]
    merges: list[dict[str, Any]] = data["merges"]
    synthesis: dict[str, Any] = data["synthesis"]
    _check_plan(data, problems)
    chains = [(f"part {p['number']}", p) for p in parts]
    chains += [(f"merge {m['number']} of round {m['round']}", m) for m in merges]
    chains.append(("the synthesis", synthesis))
    _check_receipts(root, chains, strict, problems)
    answers: list[tuple[str, str]] = []  # (path, sha256) of the parts' answers, in order
    for p in parts:
        if p["status"] in ("done", "truncated") and not problems:
            _check_part(root, p, problems, data.get("change"))
        answers += _answer_hashes(root, p)
    merged = [m for m in [*merges, synthesis] if m["status"] in ("done", "truncated")]
    if merged and not problems and any(p["status"] != "done" for p in parts):
        problems.append("the answers were merged although some part is not done")
    for r in sorted({m["round"] for m in merges}):
        if problems:
            break
        answers = _check_round(root, r, [m for m in merges if m["round"] == r], answers, problems)
    if synthesis["status"] in ("done", "truncated") and not problems:
        _check_merge(root, "the synthesis", synthesis, answers, problems)
    if "change" in data and not problems:
        _check_change_made(root, data, problems)
    done = sum(p["status"] == "done" for p in parts)
    report.summary = (
        f"{done} of {len(parts)} parts done, synthesis {synthesis['status']}, "
        f"{len(data['not_reviewed'])} not reviewed"
    )
    return report


def _check_plan(data: dict[str, Any], problems: list[str]) -> None:
    plan = data["plan"]
    cap = plan["context_window"] - plan["max_tokens"] - plan["margin"]
    if plan["part_cap"] != cap:
        problems.append(f"plan: part_cap {plan['part_cap']} is not {cap}")
    seen: dict[str, int] = {}
    spans: dict[str, list[tuple[int, int, int]]] = {}  # a file cut into ranges: (first, last, part)
    for i, p in enumerate(data["parts"], start=1):
        if p["number"] != i:
            problems.append(f"parts: part {i} is numbered {p['number']}")
        if p["estimated_tokens"] > cap:
            problems.append(f"part {i}: ~{p['estimated_tokens']} tokens, over part_cap {cap}")
        for f in p["files"]:
            if f.get("change"):
                continue  # a change's coverage: _check_change_coverage
            if "lines" in f:
                spans.setdefault(f["path"], []).append((*f["lines"], i))
                continue
            if f["path"] in seen:
                problems.append(f"{f['path']}: in part {seen[f['path']]} and part {i}")
            seen[f["path"]] = i
    for path, ranges in spans.items():
        if path in seen:
            problems.append(f"{path}: whole in part {seen[path]} and in ranges too")
        ranges.sort()
        if ranges[0][0] != 1 or any(b[0] != a[1] + 1 for a, b in pairwise(ranges)):
            problems.append(f"{path}: its ranges do not follow each other from line 1")
        seen.setdefault(path, ranges[0][2])
    for n in data["not_reviewed"]:
        if n["path"] in seen and "hunks" not in n:
            problems.append(f"{n['path']}: in part {seen[n['path']]} and not reviewed too")
    if "change" in data:
        _check_change_coverage(data, problems)


def _check_change_coverage(data: dict[str, Any], problems: list[str]) -> None:
    """Every file the change shows is reviewed once: its whole change in one part, or its
    hunks in runs (in parts, or not reviewed) that follow each other from the first to the
    last; or it is listed as not reviewed."""
    counts = {f["path"]: f["hunks"] for f in data["change"]["files"]}
    whole: dict[str, list[str]] = {}
    runs: dict[str, list[tuple[int, int, str]]] = {}
    for p in data["parts"]:
        for f in p["files"]:
            if not f.get("change"):
                continue
            where = f"part {p['number']}"
            if "hunks" in f:
                runs.setdefault(f["path"], []).append((*f["hunks"], where))
            else:
                whole.setdefault(f["path"], []).append(where)
    for n in data["not_reviewed"]:
        if "hunks" in n:
            runs.setdefault(n["path"], []).append((*n["hunks"], "not reviewed"))
        elif n["path"] in counts:
            whole.setdefault(n["path"], []).append("not reviewed")
    for path in sorted({*whole, *runs} - set(counts)):
        problems.append(f"{path}: reviewed as part of the change, which does not show it")
    for path, count in counts.items():
        places = whole.get(path, [])
        spans = sorted(runs.get(path, []))
        if len(places) + bool(spans) != 1:
            shown = ", ".join([*places, *(w for *_, w in spans)]) or "nowhere"
            problems.append(f"{path}: its change is not reviewed exactly once ({shown})")
        elif spans and (
            spans[0][0] != 1
            or spans[-1][1] != count
            or any(b[0] != a[1] + 1 for a, b in pairwise(spans))
        ):
            problems.append(f"{path}: its runs of hunks do not follow each other from 1 to {count}")


def _check_receipts(
    root: Path, chains: list[tuple[str, dict[str, Any]]], strict: bool, problems: list[str]
) -> None:
    """Every receipt named exists and verifies; a done or truncated chain names some."""
    from deepseek_review.verification import verify

    named: list[str] = []
    for what, c in chains:
        if c["status"] in ("done", "truncated") and not c["receipts"]:
            problems.append(f"{what}: {c['status']} but names no receipt")
        if len(c["receipts"]) != len(c["answers"]):
            n, k = len(c["receipts"]), len(c["answers"])
            problems.append(f"{what}: {n} receipts for {k} answers")
        for r in c["receipts"]:
            try:
                real, _ = resolve_inside(root, r, what=f"{what}: receipt")
            except ReviewError as exc:
                problems.append(exc.message)
                continue
            if not real.is_file():
                problems.append(f"{what}: {r}: no such receipt")
            else:
                named.append(r)
    if problems or not named:
        return
    report = verify(named, root=root, strict=strict)
    for r in report.receipts:
        if r.status == "fail":
            problems.append(f"{r.receipt_path}: does not verify ({', '.join(r.failed)})")


def _chain_of(root: Path, what: str, c: dict[str, Any], problems: list[str]) -> list[Any]:
    """The whole chain the first receipt begins, which must be exactly the receipts named."""
    from deepseek_review.records.chain import find_chain

    try:
        chain = find_chain(root, c["receipts"][0])
    except InputError as exc:
        problems.append(f"{what}: {exc.message}")
        return []
    if [s.receipt_path for s in chain] != c["receipts"]:
        problems.append(f"{what}: its receipts are not one whole chain, primary first")
    elif [s.answer_path for s in chain] != c["answers"]:
        problems.append(f"{what}: its answers are not its receipts' answers")
    return chain


def _record(root: Path, receipt: str) -> RequestRecord | None:
    rel = sibling(receipt, "record")
    try:
        return RequestRecord.load(read_regular_file(root / rel), rel)
    except (InputError, OSError):
        return None


def _check_part(
    root: Path, part: dict[str, Any], problems: list[str], change: dict[str, Any] | None
) -> None:
    """A part's chain reviewed its files and (of a change) exactly its part of the change:
    its request record pins the change's commits and shows the part's files and hunks."""
    what = f"part {part['number']}"
    planned = [(f["path"], f["sha256"]) for f in part["files"] if not f.get("change")]
    changed = [f for f in part["files"] if f.get("change")]
    shown = list(dict.fromkeys(f["path"] for f in changed))
    paths = list(dict.fromkeys([*shown, *(p for p, _ in planned)]))
    record = _check_reviewed(root, what, part, planned, "the part's files", problems, paths)
    if record is None or change is None:
        return
    git = record.git if isinstance(record.git, dict) else {}
    diff = git.get("diff") if shown else None
    got = git.get("commits")
    commits: dict[str, Any] = got if isinstance(got, dict) else {}
    hunks = [{"path": f["path"], "hunks": f["hunks"]} for f in changed if "hunks" in f]
    if shown and (
        not isinstance(diff, dict)
        or diff.get("shown") != shown
        or diff.get("hunks", []) != hunks
        or any(commits.get(k) != change[k] for k in ("base", "head", "merge_base"))
    ):
        problems.append(
            f"{what}: its request record's change is not the part's (commits, files, hunks)"
        )


def _check_reviewed(
    root: Path,
    what: str,
    reviewed: dict[str, Any],
    files: list[tuple[str, str]],
    named: str,
    problems: list[str],
    paths: list[str] | None = None,
) -> RequestRecord | None:
    """A part's, a merge's or the synthesis's chain: one whole chain whose primary's receipt
    names exactly ``paths`` (default: ``files``' paths; a change's files come first) and
    whose request record names ``files`` with their sha256; its primary's record."""
    chain = _chain_of(root, what, reviewed, problems)
    if not chain:
        return None
    if list(chain[0].receipt.context_files or ()) != (paths or [p for p, _ in files]):
        problems.append(f"{what}: its receipt's context_files are not {named}")
        return None
    record = _record(root, chain[0].receipt_path)
    if record is None or record.context_files is None:
        problems.append(f"{what}: no request record names the hashes of {named}")
        return None
    if [(e.path, e.sha256) for e in record.context_files] != files:
        problems.append(f"{what}: its request record's files are not {named} (path, sha256)")
        return None
    return record


def _answer_hashes(root: Path, part: dict[str, Any]) -> list[tuple[str, str]]:
    """(answer, its receipt's answer_sha256) of each segment of a chain."""
    out = []
    for r, a in zip(part["receipts"], part["answers"], strict=False):
        try:
            from deepseek_review.records.stored import load_segment

            out.append((a, load_segment(root, r).receipt.answer_sha256))
        except (InputError, OSError):
            out.append((a, ""))
    return out


def _check_round(
    root: Path,
    r: int,
    merges: list[dict[str, Any]],
    inputs: list[tuple[str, str]],
    problems: list[str],
) -> list[tuple[str, str]]:
    """A round of merges: their contexts, one after another, are exactly ``inputs`` (the
    parts' answers, or the round before's); returns the round's answers."""
    given = [a for m in merges for a in m["context_files"]]
    if given != [a for a, _ in inputs]:
        what = "the parts'" if r == 1 else f"round {r - 1}'s"
        problems.append(f"round {r} of merges: its contexts are not {what} answers, in order")
        return []
    at = 0
    out: list[tuple[str, str]] = []
    for m in merges:
        mine = inputs[at : at + len(m["context_files"])]
        at += len(m["context_files"])
        if m["status"] == "done":
            _check_merge(root, f"merge {m['number']} of round {r}", m, mine, problems)
        out += _answer_hashes(root, m)
    return out


def _check_merge(
    root: Path,
    what: str,
    merge: dict[str, Any],
    answers: list[tuple[str, str]],
    problems: list[str],
) -> None:
    """The synthesis or a merge: its context is exactly ``answers`` (path, sha256), in order."""
    if merge["context_files"] != [a for a, _ in answers]:
        problems.append(f"{what}: its context_files are not the answers it merges, in order")
        return
    _check_reviewed(root, what, merge, answers, "the answers it merges", problems)


def _check_change_made(root: Path, data: dict[str, Any], problems: list[str]) -> None:
    """The files the split record says the change shows, with their counts of hunks, are the
    ones git shows between its commits (with the settings and the files left out that a done
    part's request record pins): so no file of the change is missing from the plan. Nothing
    is said when git cannot make it (the parts' receipts say why)."""
    from deepseek_review.context.git_hunks import file_changes
    from deepseek_review.git.diff import Change, DiffSettings, Range, make_diff

    change = data["change"]
    pinned = None
    for p in data["parts"]:
        if p["status"] == "done" and any(f.get("change") for f in p["files"]):
            record = _record(root, p["receipts"][0])
            pinned = None if record is None or record.git is None else record.git.get("diff")
            break
    if not isinstance(pinned, dict):
        return
    why = {x[0]: x[1] for x in pinned.get("left_out") or () if isinstance(x, list) and len(x) == 2}
    try:
        settings = DiffSettings(
            pinned["context_lines"], pinned["function_context"], pinned["renames"]
        )
        rng = Range(change["base"], change["head"], change["merge_base"])

        def decide(c: Change, binary: bool) -> str | None:
            return why.get(c.path)

        made = make_diff(root, rng, settings, lambda _changes: decide)
        shown = [{"path": fc.path, "hunks": len(fc.hunks)} for fc in file_changes(made)]
    except (ReviewError, KeyError, TypeError):
        return
    if shown != change["files"]:
        problems.append(
            f"change: its files are not the ones git shows from {rng.label} (path, hunks)"
        )
