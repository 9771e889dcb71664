"""The checks that read a receipt's request record: the reasoning file it names (part of
``answer``) and ``prompt``, the request rebuilt from the record and the repository.

The record must agree with its receipt and rebuild, byte for byte, the request whose hash is
``prompt_sha256`` (:class:`.records.rebuild.Rebuilder`: a fast path, and the reference to
decide and explain anything else). A context file changed or missing since the review is a
warning (a failure with ``strict``); anything else that does not add up is a failure.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from deepseek_review.context.pins import FilePin, TreeHashes
from deepseek_review.errors import InputError
from deepseek_review.git.objects import BlobStore
from deepseek_review.records.canonical import sha256_tag
from deepseek_review.records.index import ReceiptIndex
from deepseek_review.records.naming import sibling
from deepseek_review.records.parts import AnswerRef, RecordedMessage, answer_paths, file_refs
from deepseek_review.records.rebuild import FileHashes, Reader, Rebuilder, rebuild_body
from deepseek_review.records.receipt import CONTINUATION
from deepseek_review.records.request_record import RequestRecord
from deepseek_review.verification.files import Problem, RepoFiles
from deepseek_review.verification.reports import PASSED, CheckResult, listing, soft


class RecordChecks:
    """The record-reading checks of one verify run (its rebuilder's caches live as long)."""

    def __init__(
        self, files: RepoFiles, *, strict: bool, exclude: frozenset[str] = frozenset()
    ) -> None:
        self.files = files
        self.strict = strict
        self.exclude = exclude
        """Receipts the trust rule set aside: no chain walk sees them."""
        self.rebuilder = Rebuilder(self._reference, self._reference_digest)
        self._chains: ReceiptIndex[None] | None = None
        #: Every pinned blob the run needs, through one ``git cat-file --batch``.
        self.blobs = BlobStore(files.root)
        self.tree_hashes = TreeHashes()

    def close(self) -> None:
        self.blobs.close()

    def reasoning(self, rel: str, record: RequestRecord | str | None) -> CheckResult:
        """The answer check, its file already matched: now the reasoning file the record
        names (``--keep-reasoning``), whose hash it holds."""
        if not isinstance(record, RequestRecord):
            return PASSED["answer"]
        path, digest = record.response.reasoning_path, record.response.reasoning_sha256
        if path is None and digest is None:
            return PASSED["answer"]
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

    def findings(
        self, rel: str, record: RequestRecord | str | None, answer: CheckResult
    ) -> CheckResult:
        """The answer check, its file matched: now the findings file the record names
        (``run --findings``), re-derived from the chain (:mod:`..finding.sidecar`)."""
        if not isinstance(record, RequestRecord) or not record.findings or answer.status != "ok":
            return answer
        from deepseek_review.finding.sidecar import check_sidecar
        from deepseek_review.records.chain import chain_index

        if self._chains is None:  # one index per run: each folder glanced at once
            self._chains = chain_index(self.files.root, exclude=self.exclude)
        status, detail = check_sidecar(self.files.root, rel, record, self._chains)
        if status == "soft":
            return soft(self.strict, "answer", detail)
        if status == "fail":
            return CheckResult("answer", "fail", detail)
        return CheckResult("answer", "ok", f"hash matches; {detail}")

    def record(self, rel: str) -> RequestRecord | str | None:
        """The request record beside the receipt: the record, a problem, or None if absent."""
        record_rel = sibling(rel, "record")
        raw = self.files.read_once(record_rel, what="request record")
        if isinstance(raw, Problem):
            return None if raw.kind == "missing" else f"request record {raw.detail}"
        try:
            return RequestRecord.load(raw, record_rel)
        except InputError as exc:
            return exc.message

    def prompt(
        self,
        rel: str,
        d: dict[str, Any],
        record: RequestRecord | str | None,
        *,
        answer_ok: bool,
        pins: Mapping[str, FilePin] | None = None,
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
            if record.git is not None:
                from deepseek_review.verification.pins import (
                    check_pinned,  # only now: the git modules are many
                )

                rebuilt = check_pinned(
                    self.files.root,
                    record,
                    self._reference,
                    lambda read: self._rebuild(d, record, files, read),
                    strict=self.strict,
                    blobs=self.blobs,
                    hashes=self.tree_hashes,
                    pins=pins,
                )
            else:
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

    def _rebuild(
        self,
        d: dict[str, Any],
        record: RequestRecord,
        files: FileHashes,
        read: Reader | None = None,
    ) -> CheckResult:
        """The request rebuilt from the record; :class:`InputError` if its body is malformed.
        ``files``: see :meth:`.records.rebuild.Rebuilder.digest`. ``read``: how the record's
        references are read (pinned ones from git), else from the working tree."""
        body = record.body
        reference = read or self._reference
        rebuilder = self.rebuilder if read is None else Rebuilder(read)
        rebuilt = rebuilder.check(body, d["prompt_sha256"], files)
        if rebuilt is None:
            return PASSED["prompt"]
        outside = [p for p in rebuilt.missing if self._outside(p)]
        if outside:
            return CheckResult(
                "prompt",
                "fail",
                f"the request record names files outside the repository root (not read): "
                f"{listing(outside)}",
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
                "prompt", "fail", f"an earlier answer segment it continued: {listing(what)}"
            )
        if rebuilt.missing:
            return soft(
                self.strict,
                "prompt",
                f"cannot rebuild the request: context file missing: {listing(rebuilt.missing)}",
            )
        as_they_are = rebuild_body(body, reference, unchecked=rebuilt.changed)
        if as_they_are.body_bytes and sha256_tag(as_they_are.body_bytes) == d["prompt_sha256"]:
            return CheckResult(
                "prompt",
                "fail",
                f"the request record's hash of {listing(rebuilt.changed)} is wrong (the file is "
                "as it was; the record was altered)",
            )
        return soft(
            self.strict,
            "prompt",
            f"context file changed since the review: {listing(rebuilt.changed)}",
        )


def _context_list_problem(record: RequestRecord, files: FileHashes) -> str | None:
    """Why the record's ``context_files`` list (path, sha256, bytes, lines per file) does not match
    the ``$file`` references its body was rebuilt from (``files``, when the fast path listed
    them); None when it does."""
    if record.context_files is None:
        return None
    refs = files or {p: (r.sha256, r.size, r.lines) for p, r in file_refs(record.messages).items()}
    for f in record.context_files:
        if refs.get(f.path) != (f.sha256, f.size, f.lines):
            return (
                f"the request record's context_files entry for {f.path} does not match the "
                "file reference in its body (sha256, bytes and lines)"
            )
    return None


def _disagreements(rel: str, d: dict[str, Any], record: RequestRecord) -> str:
    """The fields on which a request record and its receipt disagree, comma-separated.

    ``prompt_sha256`` and ``answer_path`` must be in the record; the rest is compared where
    the record has it (so records of hand still check what they can). Compared one by one,
    not through a table built per record: verify asks this of every record.
    """
    bad = [k for k in ("prompt_sha256", "answer_path") if getattr(record, k) != d[k]]
    is_cont = d["schema"] == CONTINUATION
    response = record.response
    if record.receipt_path is not None and record.receipt_path != rel:
        bad.append("receipt_path")
    if record.kind is not None and record.kind != ("continuation" if is_cont else "primary"):
        bad.append("kind")
    if record.created_at is not None and record.created_at != d["created_at"]:
        bad.append("created_at")
    if record.endpoint is not None and record.endpoint != d["endpoint"]:
        bad.append("endpoint")
    model = record.body.get("model")
    if model is not None and model != d["model"]:
        bad.append("model")
    reported = response.usage is not None or response.usage_reported is False
    if reported and (response.usage or _NO_USAGE) != d["usage"]:
        bad.append("usage")
    if is_cont:
        if response.message_keys is not None:
            keys = list(dict.fromkeys(k for k in response.message_keys if k))
            if keys != d.get("message_keys"):
                bad.append("message_keys")
        previous = None if record.continuation is None else record.continuation.previous_answer_path
        if previous is not None and previous != d["previous_answer_path"]:
            bad.append("previous_answer_path")
    elif record.context_files is not None and _listed(record) != d["context_files"]:
        bad.append("context_files")
    return ", ".join(bad)


def _listed(record: RequestRecord) -> list[str]:
    """The receipt's ``context_files`` as the record says them (each path once; a record
    pinned to git adds the paths its pins name)."""
    paths = [f.path for f in record.context_files or ()]
    if record.git is None:
        return list(dict.fromkeys(paths))  # what receipt_paths gives without git
    from deepseek_review.context.pins import receipt_paths

    return receipt_paths(paths, record.git)


_NO_USAGE = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
