"""The five checks of one receipt (``Verifier``) and the record agreement rules."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..errors import InputError
from ..records.canonical import sha256_tag
from ..records.index import Break, Entry, ReceiptIndex
from ..records.naming import name_order, sibling
from ..records.parts import AnswerRef, RecordedMessage, answer_paths, file_refs
from ..records.rebuild import FileHashes, Rebuilder, rebuild_body
from ..records.receipt import CONTINUATION, PRIMARY, parse_receipt, schema_problems
from ..records.request_record import RequestRecord
from .files import Problem, RepoFiles
from .reports import _OK, CHECKS, CheckResult, ReceiptReport, ReceiptStatus

# --------------------------------------------------------------------------- checking


@dataclass
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
#: Set (to True) in a ``_Local``'s data when its request record says the answer was cut off
#: at the token cap (not a receipt key: the schema is closed).
_CUT_OFF = "$cut_off"


@dataclass
class _Local:
    """A receipt after the checks that need no other receipt (picklable, for workers)."""

    rel: str
    data: dict[str, Any] | None
    """The receipt's ``_CHAIN_KEYS``; None when it failed ``schema``."""
    problems: list[str]
    checks: list[CheckResult]
    continues: str | None = None
    """The ``previous_answer_path`` it names, even when it failed ``schema``."""


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
        n, rels = len(broken.rels), _join(broken.rels)
        problem = f"previous answer {broken.at} is claimed by {n} receipts ({rels})"
    return problem if broken.at == prev else f"the chain is broken further back: {problem}"


def _join(items: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


class Verifier:
    """One verification run: its caches (files, receipts, chain index) live as long as it."""

    def __init__(self, root: Path, *, strict: bool = False) -> None:
        self.root = root
        self.strict = strict
        self.files = RepoFiles(root)
        self.receipts: ReceiptIndex[_Receipt] = ReceiptIndex(root, self._entry)
        self._chain_memo: dict[str, Break | None] = {}
        self.rebuilder = Rebuilder(self._reference, self._reference_digest)

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
        return (name_order(head), depth, name_order(rel))

    # -- one receipt

    def check(self, rel: str) -> ReceiptReport:
        """Every check of one receipt (the index must hold the receipts verified with it)."""
        return self.finish(self.local(rel))

    def local(self, rel: str) -> _Local:
        """The checks that need no other receipt: schema, answer, context, prompt."""
        r = self.load(rel)
        if r.data is None:
            detail = "; ".join(r.problems[:5])
            if len(r.problems) > 5:
                detail += f" (+{len(r.problems) - 5} more)"
            fail = CheckResult("schema", "fail", detail)
            return _Local(rel, None, r.problems, [fail], r.continues)
        d = r.data
        record = self._record(rel)
        answer = self._answer_file(d)
        checks = [
            _OK[d["schema"]],
            self._reasoning(rel, record) if answer.status == "ok" else answer,
            self._context(d),
            self._prompt(rel, d, record, answer_ok=answer.status == "ok"),
        ]
        kept = {k: d[k] for k in _CHAIN_KEYS if k in d}
        if isinstance(record, RequestRecord) and record.response.finish_reason == "length":
            kept[_CUT_OFF] = True
        return _Local(rel, kept, [], checks, r.continues)

    def adopt(self, done: _Local) -> None:
        """Index a receipt that another process loaded and checked (see :func:`verify`)."""
        r = _Receipt(done.rel, done.data, done.problems, done.continues)
        self.receipts.add(_entry_of(r))
        if r.data is not None and done.checks[1] is _OK["answer"]:
            self.files.known_file(r.data["answer_path"])  # the worker read it: inside the root

    def finish(self, done: _Local) -> ReceiptReport:
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
        status: ReceiptStatus = "ok"
        if any(c.status == "fail" for c in checks):
            status = "fail"
        elif any(c.status == "warn" for c in checks):
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
        """A missing or changed context file, or an answer still cut off: a warning, a
        failure under ``strict``."""
        return CheckResult(name, "fail" if self.strict else "warn", detail)

    def _reasoning(self, rel: str, record: RequestRecord | str | None) -> CheckResult:
        """The answer check, its file already matched: now the reasoning file the record
        names (``--keep-reasoning``), whose hash it holds."""
        if not isinstance(record, RequestRecord):
            return _OK["answer"]
        path, digest = record.response.reasoning_path, record.response.reasoning_sha256
        if path is None and digest is None:
            return _OK["answer"]
        expected = sibling(rel, "reasoning")
        if path != expected or digest is None:
            problem = (
                f"the request record names reasoning_path {path!r} with reasoning_sha256 "
                f"{digest!r}; the tool writes {expected} and its hash"
            )
        else:
            got = self.files.hash(path, what="reasoning_path", keep=False)
            if isinstance(got, Problem):
                problem = f"reasoning file {got.detail}"
                problem += " (not read)" if got.kind == "outside" else ""
            elif got != digest:
                problem = (
                    f"{path} hashes to {got}, not the record's reasoning_sha256 (the "
                    "reasoning was changed after the review)"
                )
            else:
                return CheckResult("answer", "ok", "hash matches; reasoning file hash matches")
        return CheckResult("answer", "fail", problem)

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
        return _OK["answer"]

    def _chain(self, rel: str, d: dict[str, Any]) -> CheckResult:
        problems: list[str] = []
        answer = d["answer_path"]
        others = [o for o in self.receipts.owners(answer) if o != rel]
        if others:
            problems.append(f"{answer} is also claimed by {_join(others)}")
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
        return _OK["chain-primary" if d["schema"] == PRIMARY else "chain"]

    def _link(self, answer: str) -> str | None:
        """Why ``answer`` (an answer some continuation continues) is not there to continue."""
        missing = self.files.file_problem(answer, what="previous_answer_path")
        if missing is None:
            return None
        if missing.kind == "outside":
            return f"previous_answer_path: {missing.detail}"
        return f"previous answer {missing.detail}"

    def _context(self, d: dict[str, Any]) -> CheckResult:
        if d["schema"] == CONTINUATION:
            return _OK["context-continuation"]
        outside: list[str] = []
        missing: list[str] = []
        for path in d["context_files"]:
            problem = self.files.file_problem(path, what="context file")
            if problem is None:
                continue
            (outside if problem.kind == "outside" else missing).append(path)
        total = len(d["context_files"])
        if outside:
            more = f"; {len(missing)} missing: {_join(missing)}" if missing else ""
            return CheckResult(
                "context", "fail", f"outside the repository root (not read): {_join(outside)}{more}"
            )
        if missing:
            return self._soft("context", f"{len(missing)} of {total} missing: {_join(missing)}")
        return CheckResult("context", "ok", f"{total} present")

    # -- the request record

    def _record(self, rel: str) -> RequestRecord | str | None:
        """The request record beside the receipt: the record, a problem, or None if absent."""
        record_rel = sibling(rel, "record")
        raw = self.files.read_once(record_rel, what="request record")
        if isinstance(raw, Problem):
            return None if raw.kind == "missing" else f"request record {raw.detail}"
        try:
            return RequestRecord.load(raw, record_rel)
        except InputError as exc:
            return exc.message

    def _prompt(
        self, rel: str, d: dict[str, Any], record: RequestRecord | str | None, *, answer_ok: bool
    ) -> CheckResult:
        if record is None:
            return CheckResult("prompt", "info", "not re-checkable: no request record")
        if isinstance(record, str):
            return CheckResult("prompt", "fail", record)
        disagree = _disagreements(rel, d, record)
        if disagree:
            return CheckResult(
                "prompt", "fail", f"the request record disagrees with the receipt on {disagree}"
            )
        files: FileHashes = {}  # filled when the request is rebuilt on the fast path
        try:
            rebuilt = self._rebuild(d, record, files)
        except InputError as exc:  # a malformed body
            return CheckResult("prompt", "fail", exc.message)
        if rebuilt.status == "fail":
            return rebuilt
        # The record's other hashes: its list of context files, and the server's content
        # (checked against the answer only when the answer check passed: no double report).
        problem = _context_list_problem(record, files)
        if problem is None and answer_ok:
            problem = self._content_problem(d, record)
        return rebuilt if problem is None else CheckResult("prompt", "fail", problem)

    def _content_problem(self, d: dict[str, Any], record: RequestRecord) -> str | None:
        """Why the record's ``content_sha256`` (the server's content, before an echoed
        prefill was cut off it) does not fit the answer file; None when it does."""
        want = record.response.content_sha256
        if want is None:  # records of hand
            return None
        echoed = record.response.echo_stripped_chars or 0
        if not echoed:
            if want == d["answer_sha256"]:
                return None
            return "the request record's content_sha256 is not the answer's answer_sha256"
        prefill = self._prefill(record.messages)
        answer = self.files.read(d["answer_path"], keep=False)
        if prefill is None or not isinstance(answer, bytes):
            return None  # unreadable: the answer and prompt checks say why
        if (
            len(prefill.decode("utf-8", "replace")) == echoed
            and sha256_tag(prefill + answer) == want
        ):
            return None
        return (
            "the request record's content_sha256 is not the hash of the echoed answer so far "
            "plus this answer"
        )

    def _prefill(self, messages: list[RecordedMessage]) -> bytes | None:
        """The text of the request's last assistant message (the answer so far), from the
        files its references name when they still hash as recorded; None otherwise."""
        answers = [m for m in messages if m.role == "assistant"]
        if not answers:
            return None
        last = answers[-1]
        out = []
        for p in last.parts:
            if isinstance(p, str):
                out.append(p.encode("utf-8"))
                continue
            data = self._reference(p.path) if isinstance(p, AnswerRef) else None
            if data is None or self.files.digest(p.path, data) != p.sha256:
                return None
            out.append(data)
        return b"".join(out)

    def _reference(self, path: str) -> bytes | None:
        """A file a record references (kept: other records reference it too), or None."""
        data = self.files.read(path, what="reference")
        return data if isinstance(data, bytes) else None

    def _reference_digest(self, path: str) -> str | None:
        digest = self.files.hash(path, what="reference")
        return digest if isinstance(digest, str) else None

    def _outside(self, path: str) -> bool:
        got = self.files.read(path, what="reference")
        return isinstance(got, Problem) and got.kind == "outside"

    def _rebuild(self, d: dict[str, Any], record: RequestRecord, files: FileHashes) -> CheckResult:
        """The request rebuilt from the record; :class:`InputError` if its body is malformed.
        ``files``: see :meth:`.records.rebuild.Rebuilder.digest`."""
        body = record.body
        rebuilt = self.rebuilder.check(body, d["prompt_sha256"], files)
        if rebuilt is None:
            return _OK["prompt"]
        outside = [p for p in rebuilt.missing if self._outside(p)]
        if outside:
            return CheckResult(
                "prompt",
                "fail",
                f"the request record names files outside the repository root (not read): "
                f"{_join(outside)}",
            )
        if rebuilt.body_bytes is not None:
            return CheckResult(
                "prompt",
                "fail",
                f"the rebuilt request hashes to {sha256_tag(rebuilt.body_bytes)}, not "
                "prompt_sha256 (the request record was altered)",
            )
        answers = answer_paths(record.messages)
        bad = [p for p in rebuilt.changed + rebuilt.missing if p in answers]
        if bad:
            what = [f"{p} ({'changed' if p in rebuilt.changed else 'missing'})" for p in bad]
            return CheckResult(
                "prompt", "fail", f"an earlier answer segment it continued: {_join(what)}"
            )
        if rebuilt.missing:
            return self._soft(
                "prompt",
                f"cannot rebuild the request: context file missing: {_join(rebuilt.missing)}",
            )
        as_they_are = rebuild_body(body, self._reference, unchecked=rebuilt.changed)
        if as_they_are.body_bytes and sha256_tag(as_they_are.body_bytes) == d["prompt_sha256"]:
            return CheckResult(
                "prompt",
                "fail",
                f"the request record's hash of {_join(rebuilt.changed)} is wrong (the file is "
                "as it was; the record was altered)",
            )
        return self._soft(
            "prompt", f"context file changed since the review: {_join(rebuilt.changed)}"
        )


def _context_list_problem(record: RequestRecord, files: FileHashes) -> str | None:
    """Why the record's ``context_files`` list (path, sha256, bytes per file) does not match
    the ``$file`` references its body was rebuilt from (``files``, when the fast path listed
    them); None when it does."""
    if record.context_files is None:
        return None
    refs = files or {p: (r.sha256, r.size) for p, r in file_refs(record.messages).items()}
    for f in record.context_files:
        if refs.get(f.path) != (f.sha256, f.size):
            return (
                f"the request record's context_files entry for {f.path} does not match the "
                "file reference in its body (sha256 and bytes)"
            )
    return None


def _disagreements(rel: str, d: dict[str, Any], record: RequestRecord) -> str:
    """The fields on which a request record and its receipt disagree, comma-separated.

    ``prompt_sha256`` and ``answer_path`` must be in the record; the rest is compared where
    the record has it (so records of hand still check what they can).
    """
    bad = [k for k in ("prompt_sha256", "answer_path") if getattr(record, k) != d[k]]
    is_cont = d["schema"] == CONTINUATION
    response = record.response
    expected: list[tuple[str, Any, Any]] = [
        ("receipt_path", record.receipt_path, rel),
        ("kind", record.kind, "continuation" if is_cont else "primary"),
        ("created_at", record.created_at, d["created_at"]),
        ("endpoint", record.endpoint, d["endpoint"]),
        ("model", record.body.get("model"), d["model"]),
    ]
    if response.usage is not None or response.usage_reported is False:
        expected.append(("usage", response.usage or _NO_USAGE, d["usage"]))
    if is_cont:
        if response.message_keys is not None:
            keys = list(dict.fromkeys(k for k in response.message_keys if k))
            expected.append(("message_keys", keys, d.get("message_keys")))
        if record.continuation is not None:
            expected.append(
                (
                    "previous_answer_path",
                    record.continuation.previous_answer_path,
                    d["previous_answer_path"],
                )
            )
    elif record.context_files is not None:
        paths = [f.path for f in record.context_files]
        expected.append(("context_files", paths, d["context_files"]))
    for name, got, want in expected:
        if got is not None and got != want:
            bad.append(name)
    return ", ".join(bad)


_NO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
