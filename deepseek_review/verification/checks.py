"""The five checks of one receipt (``Verifier``); the record-reading ones are in
:mod:`.record_checks`."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, Literal

from deepseek_review.context.pins import FilePin, file_pins
from deepseek_review.records.index import Break, Entry, ReceiptIndex
from deepseek_review.records.naming import name_order
from deepseek_review.records.receipt import CONTINUATION, PRIMARY, parse_receipt, schema_problems
from deepseek_review.records.request_record import RequestRecord
from deepseek_review.verification.files import Problem, RepoFiles
from deepseek_review.verification.record_checks import RecordChecks
from deepseek_review.verification.reports import (
    CHECKS,
    PASSED,
    CheckResult,
    ReceiptReport,
    ReceiptStatus,
    listing,
    soft,
)

# --------------------------------------------------------------------------- checking


@dataclass(slots=True)
class _Receipt:
    """A receipt as loaded: its data when it passed ``schema``, else the problems."""

    rel: str
    data: dict[str, Any] | None
    problems: list[str]
    continues: str | None = None
    """The ``previous_answer_path`` it names, even when it failed ``schema``."""

    @property
    def continuation(self) -> bool:
        return self.data is not None and self.data["schema"] == CONTINUATION


#: What the chain check needs of a receipt (all a worker process sends back of it).
_CHAIN_KEYS = ("schema", "answer_path", "previous_answer_path", "context_files")
#: Set (to True) in a ``LocalChecked``'s data when its request record says the answer was cut off
#: at the token cap (not a receipt key: the schema is closed).
_CUT_OFF = "$cut_off"


@dataclass(slots=True)
class LocalChecked:
    """A receipt after the checks that need no other receipt (picklable, for workers)."""

    rel: str
    data: dict[str, Any] | None
    """The receipt's ``_CHAIN_KEYS``; None when it failed ``schema``."""
    problems: list[str]
    checks: list[CheckResult]
    continues: str | None = None
    """The ``previous_answer_path`` it names, even when it failed ``schema``."""


def _pins(record: RequestRecord | str | None) -> dict[str, FilePin] | None:
    """The file pins of a record pinned to git, read once for every check that needs them;
    None for any other record."""
    if not isinstance(record, RequestRecord) or record.git is None:
        return None
    return file_pins(record.git)


def _pinned(record: RequestRecord | str | None, pins: dict[str, FilePin] | None) -> set[str]:
    """The receipt's paths git holds for its record (none unless the record is pinned to
    git)."""
    if pins is None:
        return set()
    from deepseek_review.verification.pins import pinned_paths

    return pinned_paths(record, pins)


def _entry_of(r: _Receipt) -> Entry[_Receipt]:
    """What the index needs of a receipt: a valid one claims its answer."""
    return Entry(r.rel, None if r.data is None else r.data["answer_path"], r.continues, r)


def _chain_problem(broken: Break, prev: str) -> str:
    """The chain check's words for where the walk back from ``prev`` broke."""
    if broken.kind == "loop":
        return f"the chain loops back on itself at {broken.at}"
    if broken.kind == "link":
        problem = broken.detail
    elif broken.kind == "unclaimed":
        problem = f"previous answer {broken.at} is not covered by any valid receipt"
    else:
        n, rels = len(broken.rels), listing(broken.rels)
        problem = f"previous answer {broken.at} is claimed by {n} receipts ({rels})"
    return problem if broken.at == prev else f"the chain is broken further back: {problem}"


def _unless(
    exclude: frozenset[str], load: Callable[[str], Entry[_Receipt]], rel: str
) -> Entry[_Receipt] | None:
    """``load``, except for receipts the trust rule set aside (:mod:`trust.rule`): those are not
    in the index, so they neither claim nor continue an answer."""
    return None if rel in exclude else load(rel)


class Verifier:
    """One verification run: its caches (files, receipts, chain index) live as long as it."""

    def __init__(
        self, root: Path, *, strict: bool = False, exclude: frozenset[str] = frozenset()
    ) -> None:
        self.root = root
        self.strict = strict
        self.files = RepoFiles(root)
        load = self._entry if not exclude else partial(_unless, exclude, self._entry)
        self.receipts: ReceiptIndex[_Receipt] = ReceiptIndex(root, load)
        self._chain_memo: dict[str, Break | None] = {}
        self.records = RecordChecks(self.files, strict=strict, exclude=exclude)
        self._orders: dict[str, tuple[str, str, int, str]] = {}

    def close(self) -> None:
        """Stop what the run started (git's blob reader)."""
        self.records.close()

    # -- loading and indexing

    def _entry(self, rel: str) -> Entry[_Receipt]:
        """A receipt read and validated: it claims its answer only when valid."""
        raw = self.files.read_once(rel, what="receipt")
        if isinstance(raw, Problem):
            got = _Receipt(rel, None, [f"cannot read the receipt: {raw.detail}"])
        else:
            data, problem = parse_receipt(raw)
            if problem is not None:
                got = _Receipt(rel, None, [problem])
            else:
                problems = schema_problems(data)
                prev = data.get("previous_answer_path") if isinstance(data, dict) else None
                continues = prev if isinstance(prev, str) else None
                got = _Receipt(rel, None if problems else data, problems, continues)
        return _entry_of(got)

    def load(self, rel: str) -> _Receipt:
        entry = self.receipts.get(rel)
        assert entry is not None  # _entry indexes every receipt, valid or not
        return entry.item

    def index(self, receipts: Sequence[str], scanned: set[str]) -> None:
        """Load ``receipts``; ``scanned``: folders whose every receipt is among them."""
        for rel in receipts:
            self.receipts.get(rel)
        self.receipts.mark_scanned(scanned)

    def mark_scanned(self, folders: set[str]) -> None:
        self.receipts.mark_scanned(folders)

    def chain_order(self, rel: str) -> tuple[Any, ...]:
        """A sort key listing receipts chain by chain, each primary first and then its
        continuations in chain order (file names do not sort that way: ``-10`` before ``-2``);
        chains by their primary's name (:func:`.records.naming.name_order`). A broken or
        forked chain is listed from where it breaks."""
        head, depth = self.receipts.head(rel)
        orders = self._orders
        return (orders.get(head) or name_order(head), depth, orders.get(rel) or name_order(rel))

    # -- one receipt

    def check(self, rel: str) -> ReceiptReport:
        """Every check of one receipt (the index must hold the receipts verified with it)."""
        return self.finish(self.local(rel))

    def local(self, rel: str) -> LocalChecked:
        """The checks that need no other receipt: schema, answer, context, prompt."""
        r = self.load(rel)
        if r.data is None:
            detail = "; ".join(r.problems[:5])
            if len(r.problems) > 5:
                detail += f" (+{len(r.problems) - 5} more)"
            fail = CheckResult("schema", "fail", detail)
            return LocalChecked(rel, None, r.problems, [fail], r.continues)
        d = r.data
        record = self.records.record(rel)
        answer = self._answer_file(d)
        pins = _pins(record)
        checks = [
            PASSED[d["schema"]],
            self.records.findings(rel, record, self.records.reasoning(rel, record))
            if answer.status == "ok"
            else answer,
            self._context(d, _pinned(record, pins)),
            self.records.prompt(rel, d, record, answer_ok=answer.status == "ok", pins=pins),
        ]
        kept = {k: d[k] for k in _CHAIN_KEYS if k in d}
        if isinstance(record, RequestRecord) and record.response.finish_reason == "length":
            kept[_CUT_OFF] = True
        return LocalChecked(rel, kept, [], checks, r.continues)

    def adopt(self, done: LocalChecked, order: tuple[str, str, int, str] | None = None) -> None:
        """Index a receipt that another process loaded and checked (see :func:`verify`);
        ``order``: its :func:`name_order`, if that process made it."""
        if order is not None:
            self._orders[done.rel] = order
        r = _Receipt(done.rel, done.data, done.problems, done.continues)
        self.receipts.add(_entry_of(r))
        if r.data is not None and done.checks[1] is PASSED["answer"]:
            self.files.known_file(r.data["answer_path"])  # the worker read it: inside the root

    def finish(self, done: LocalChecked) -> ReceiptReport:
        """Add the ``chain`` check, which needs the index of every receipt."""
        d = done.data
        if d is None:
            skipped = [CheckResult(n, "skip", "not checked: schema failed") for n in CHECKS[1:]]
            return ReceiptReport(done.rel, "fail", [*done.checks, *skipped])
        schema, answer, context, prompt = done.checks
        chain = self._chain(done.rel, d)
        if chain.status == "ok" and d.get(_CUT_OFF) and not self._is_continued(d["answer_path"]):
            chain = self._soft(
                "chain",
                "the answer is still cut off at the token cap (finish_reason length): "
                f"`deepseek-review continue` goes on from {d['answer_path']}",
            )
        checks = [schema, answer, chain, context, prompt]
        statuses = {schema.status, answer.status, chain.status, context.status, prompt.status}
        status: ReceiptStatus = "ok"
        if "fail" in statuses:
            status = "fail"
        elif "warn" in statuses:
            status = "warn"
        kind: Literal["primary", "continuation"] = (
            "continuation" if d["schema"] == CONTINUATION else "primary"
        )
        return ReceiptReport(done.rel, status, checks, kind, d["answer_path"])

    def _is_continued(self, answer: str) -> bool:
        """Whether a receipt, valid or not, says it continues ``answer`` (its folder scanned
        on a miss: ``continue`` writes next to the segment it continues). An invalid one
        counts: it fails on its own, and ``continue`` would refuse to fork the chain."""
        return bool(self.receipts.continuers(answer))

    def _soft(self, name: str, detail: str) -> CheckResult:
        return soft(self.strict, name, detail)

    def _answer_file(self, d: dict[str, Any]) -> CheckResult:
        path = d["answer_path"]
        # Keep the bytes only of answers that a continuation goes on from: its record
        # references them (and every earlier segment), so its rebuild needs them.
        digest = self.files.hash(path, what="answer_path", keep=self.receipts.continued(path))
        if isinstance(digest, Problem):
            if digest.kind == "outside":
                return CheckResult("answer", "fail", f"{digest.detail} (not read)")
            return CheckResult("answer", "fail", f"answer file {digest.detail}")
        if digest != d["answer_sha256"]:
            return CheckResult(
                "answer",
                "fail",
                f"{path} hashes to {digest}, not answer_sha256 (changed after the review)",
            )
        return PASSED["answer"]

    def _chain(self, rel: str, d: dict[str, Any]) -> CheckResult:
        problems: list[str] = []
        answer = d["answer_path"]
        others = [o for o in self.receipts.owners(answer) if o != rel]
        if others:
            problems.append(f"{answer} is also claimed by {listing(others)}")
        if d["schema"] == PRIMARY:
            if not d.get("context_files"):
                problems.append("a primary receipt must name its context files")
            if "previous_answer_path" in d:
                problems.append("a primary receipt has no previous_answer_path")
        else:
            if "context_files" in d:
                problems.append("a continuation receipt names no context files")
            prev = d["previous_answer_path"]
            if prev == answer:
                problems.append("it continues itself")
            else:
                _, broken = self.receipts.walk_back(prev, link=self._link, memo=self._chain_memo)
                if broken is not None:
                    problems.append(_chain_problem(broken, prev))
        if problems:
            return CheckResult("chain", "fail", "; ".join(problems))
        return PASSED["chain-primary" if d["schema"] == PRIMARY else "chain"]

    def _link(self, answer: str) -> str | None:
        """Why ``answer`` (an answer some continuation continues) is not there to continue."""
        missing = self.files.file_problem(answer, what="previous_answer_path")
        if missing is None:
            return None
        if missing.kind == "outside":
            return f"previous_answer_path: {missing.detail}"
        return f"previous answer {missing.detail}"

    def _context(self, d: dict[str, Any], pinned: set[str]) -> CheckResult:
        """Every context file is there (those the record pins in git are read from it)."""
        if d["schema"] == CONTINUATION:
            return PASSED["context-continuation"]
        outside: list[str] = []
        missing: list[str] = []
        for path in d["context_files"]:
            if path in pinned:
                continue
            problem = self.files.file_problem(path, what="context file")
            if problem is None:
                continue
            (outside if problem.kind == "outside" else missing).append(path)
        total = len(d["context_files"])
        if outside:
            more = f"; {len(missing)} missing: {listing(missing)}" if missing else ""
            return CheckResult(
                "context",
                "fail",
                f"outside the repository root (not read): {listing(outside)}{more}",
            )
        if missing:
            return self._soft("context", f"{len(missing)} of {total} missing: {listing(missing)}")
        if pinned:
            return CheckResult("context", "ok", f"{total - len(pinned)} present, the rest in git")
        return CheckResult("context", "ok", f"{total} present")
