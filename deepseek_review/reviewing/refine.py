"""What follows a review's chain when its findings are asked for: the findings extraction
(:mod:`.extraction`) and the self-check (:mod:`deepseek_review.finding.self_check`), each a
receipted request of its own, sent through the job's gate and written by its writer."""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Protocol

from deepseek_review.chat.types import Completion
from deepseek_review.errors import BadResponse, InputError
from deepseek_review.finding.self_check import SCORES_SCHEMA, SELF_CHECK_TEMPLATE, findings_of
from deepseek_review.finding.self_check import prompt_text as self_check_prompt
from deepseek_review.finding.sidecar import checked_bytes
from deepseek_review.options.table import name_of
from deepseek_review.reviewing.extraction import (
    Extraction,
    Request,
    SelfCheck,
    answer_files,
    enforces_schema,
    probed_kind,
    repo_file,
    structured_request,
)
from deepseek_review.reviewing.extraction import request as extraction_request
from deepseek_review.reviewing.job_spec import Job, JobResult
from deepseek_review.reviewing.request import BodyOptions, PreparedRequest
from deepseek_review.reviewing.segment import Segment, SegmentSpec, write_segment
from deepseek_review.util.logs import log

if TYPE_CHECKING:
    from deepseek_review.chat.client import ChatClient


class Runner(Protocol):
    """What of a running job (the one :func:`.job.run_job` runs) these requests use: its
    public methods, so a request of its own passes the same gate, checks and writer."""

    job: Job
    client: ChatClient
    result: JobResult
    now: Callable[[], datetime]

    def ask(
        self, prepared: PreparedRequest, body: BodyOptions, note: str | None, *, primary: bool
    ) -> Completion | None: ...

    def check_answer(self, completion: Completion, estimate: int) -> None: ...

    def log(self, level: int, msg: str, *args: object) -> None: ...

    @property
    def first_spec(self) -> Callable[..., SegmentSpec]:
        """:meth:`.job._Run.first_spec` (its signature is there)."""


def self_check(run: Runner, sc: SelfCheck, findings_path: str) -> None:
    """The self-check of the findings file ``findings_path`` (:mod:`.finding.self_check`):
    asked at most twice; a reply that does not validate twice is a warning, and the
    findings stay as they are."""
    job = run.job
    found = repo_file(job.root, findings_path)
    if not findings_of(found.text.encode("utf-8"), findings_path)["findings"]:
        run.log(logging.INFO, "%s holds no findings: nothing to self-check", findings_path)
        return
    server = _server(run, sc.server, sc.declared)
    req = structured_request(
        job.body, server, sc.topic, [found], SELF_CHECK_TEMPLATE, self_check_prompt(),
        SCORES_SCHEMA, "scores",
    )  # fmt: skip
    data = found.text.encode("utf-8")
    for _ in (1, 2):
        note = f"self-check of {findings_path} ({sc.topic})"
        failed: list[str] = []
        made = partial(_self_checked, data, findings_path, sc.threshold, failed=failed)
        seg = _exchange(run, req, sc.topic, note, made)
        run.result.self_check.append(seg)
        if seg.findings_path is not None:
            return
        why = failed[0] if failed else "cut off at the token cap"
        run.log(logging.WARNING, "%s: %s", seg.answer_path, why)
    run.log(
        logging.WARNING,
        "the self-check did not validate twice: %s keeps every finding unchecked",
        findings_path,
    )


def extract(run: Runner, ex: Extraction) -> None:
    """The findings extraction (:mod:`.extraction`): asked at most twice; the findings
    file is written beside the answer whose findings are used."""
    job, segments = run.job, run.result.segments
    review, text = segments[-1].answer_path, "".join(s.content for s in segments)
    ex = ex._replace(server=_server(run, ex.server, ex.declared))
    req = extraction_request(job.body, ex.server, ex.topic, answer_files(job.root, segments))
    why = ""
    for attempt in (1, 2):
        fallback = attempt == 2 and ex.mode == "auto"
        note = f"findings extraction of {review} ({ex.topic})"
        failed: list[str] = []
        made = partial(_extracted, ex, review=review, text=text, failed=failed, fallback=fallback)
        seg = _exchange(run, req, ex.topic, note, made, cut_off_too=fallback)
        run.result.extraction.append(seg)
        if seg.findings_path is not None and not failed:
            return
        why = failed[0] if failed else "cut off at the token cap"
        if seg.findings_path is not None or fallback:
            return  # the block's findings, or none: said by _extracted
        run.log(logging.WARNING, "%s: %s; asking once more", seg.answer_path, why)
    raise BadResponse(
        f"{run.result.extraction[-1].answer_path}: the findings extraction's answer "
        f"did not validate twice: {why}",
        hint=f"{name_of('findings_from')} block reads the review's ```json block instead; "
        f"the review itself is written ({review})",
    )


def _server(run: Runner, server: str, declared: bool) -> str:
    """The kind of the server the request goes to: as declared, else as it answers."""
    if declared:
        return server
    found = probed_kind(run.client, run.job.body.model, server)
    run.log(logging.INFO, "the server answers as %s: its structured output is asked so", found)
    return found


def _exchange(
    run: Runner,
    req: Request,
    topic: str,
    note: str,
    made: Callable[[Completion], Callable[[str], bytes | None]],
    *,
    cut_off_too: bool = False,
) -> Segment:
    """One request of its own sent and written as the first segment of its chain;
    ``made``: given the answer, the maker of the findings file beside it (``cut_off_too``:
    asked also when the answer is cut off at the token cap)."""
    completion = run.ask(req.prepared, req.prepared.options, note, primary=True)
    assert completion is not None, "a job's later request is refused by raising"
    run.check_answer(completion, req.estimate)
    template = (req.template.name, req.template.sha256)
    findings = made(completion)
    spec = run.first_spec(
        req.prepared, completion, topic, req.files, template, req.estimate, findings
    )
    return write_segment(spec._replace(findings_when_cut_off=cut_off_too), run.now())


def _extracted(
    ex: Extraction,
    completion: Completion,
    *,
    review: str,
    text: str,
    failed: list[str],
    fallback: bool,
) -> Callable[[str], bytes | None]:
    """The findings file maker of an extraction's answer: bytes, or None with why in
    ``failed``; ``fallback``: then from the review's block (``auto``'s last attempt)."""

    def make(answer: str) -> bytes | None:
        if completion.finish_reason == "length":
            failed.append("cut off at the token cap")
        else:
            try:
                return ex.make(completion.content, review, "structured")
            except InputError as exc:
                failed.append(exc.message)
        if not fallback:
            return None
        enforced = "" if enforces_schema(ex.server, ex.url) else " (not enforced by this server)"
        log.warning(
            "%s: %s%s; the findings are taken from the review's block", answer, failed[0], enforced
        )
        try:
            return ex.make(text, review, "block")
        except InputError as exc:
            log.warning("%s: %s", review, exc.message)
            return None

    return make


def _self_checked(
    data: bytes, where: str, threshold: int, completion: Completion, *, failed: list[str]
) -> Callable[[str], bytes | None]:
    """The findings file maker of a self-check's answer: bytes, or None with why in
    ``failed``."""

    def make(answer: str) -> bytes | None:
        try:
            return checked_bytes(data, where, completion.content, threshold)
        except InputError as exc:
            failed.append(exc.message)
            return None

    return make
