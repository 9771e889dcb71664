"""Running a split review (``run --split``), its parts each an ordinary review, then the
synthesis.

Each part is an ordinary review (:func:`.plan.plan_review` of the part's files, sent by
:func:`.pipeline.send_review`: primary, continuations, receipts, records, signing, findings),
its topic ``<topic>-part-01-of-05``, its request saying which part it is and what the others
cover. Once every part is done, one synthesis review (topic ``<topic>-synthesis``, the bundled
``synthesis`` template) gets exactly the parts' answer files as its context. The split record
(:mod:`deepseek_review.records.split_record`) is written at the end, also when a part failed.

Re-running the same command resumes: a part (or the synthesis) whose exact request a chain
in the output folder already answered to its end, a chain the trust rule admits
(:mod:`deepseek_review.trust.rule`, as ``--since-last-review`` reads reviews), is not sent
again. After a re-plan (a file changed size, a calibrated count), a part whose request is
an earlier plan's part's but for its note and topic (the same files, ranges, bytes, model
and options) reuses that part's chain; the split record says so (``reused_from``).

A batch entry with ``split = true`` runs the same way (:func:`run_split` with the batch's
``send``: its request slots, events and halts).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepseek_review.context.gather import ContextFile
from deepseek_review.context.git_plan import GitOptions
from deepseek_review.errors import (
    InputError,
    Interrupted,
    PromptDoesNotFit,
    ReviewError,
    TruncatedReview,
)
from deepseek_review.options.table import name_of
from deepseek_review.records.canonical import sha256_tag
from deepseek_review.records.naming import check_topic, model_slug, stem_for, topic_of, utc_stamp
from deepseek_review.records.split_record import SPLIT_SUFFIX, split_version_for, write_split
from deepseek_review.reviewing.plan import (
    ReviewPlan,
)
from deepseek_review.reviewing.split import (
    count_tokens,
    counting,
)
from deepseek_review.reviewing.split_plan import (
    SYNTHESIS_TEMPLATE,
    PlannedPart,
    SplitReview,
    framing_tokens,
    planned_within,
)
from deepseek_review.reviewing.split_reuse import by_content, reused
from deepseek_review.util.logs import log
from deepseek_review.util.textsafe import plural

if TYPE_CHECKING:
    from deepseek_review.chat.client import ChatClient
    from deepseek_review.chat.types import ProgressFn
    from deepseek_review.records.stored import ChainSegment
    from deepseek_review.reviewing.pipeline import ReviewResult
    from deepseek_review.reviewing.pool import PoolSender
    from deepseek_review.trust.rule import TrustPolicy

#: How a part, a merge or the synthesis is sent: its plan and the progress callback in, its
#: result out; None when it was not started (a batch's gate refused: halted).
SendFn = Callable[["ReviewPlan", "ProgressFn | None"], "ReviewResult | None"]


@dataclass
class PartOutcome:
    """A part's, a merge's or the synthesis's review: what it is, and how far it got."""

    number: int
    topic: str
    status: str = "not run"
    round: int = 0
    """A merge's round (1, 2, ...); 0 for a part and for the synthesis."""
    context: list[str] = field(default_factory=list)
    """A merge's or the synthesis's context files: the answers it merges."""
    chain: list[tuple[str, str, str]] = field(default_factory=list)
    """(receipt, answer, answer sha256) of each segment of the chain that reviewed it."""
    resumed: bool = False
    reused_from: str | None = None
    """The topic of the earlier plan's part whose chain it reuses (its content the same)."""
    error: ReviewError | None = None


@dataclass(frozen=True)
class SplitOutcome:
    review: SplitReview
    parts: tuple[PartOutcome, ...]
    synthesis: PartOutcome
    record_path: str | None
    merges: tuple[PartOutcome, ...] = ()
    """The rounds of merges before the synthesis, when the answers did not fit one."""

    @property
    def failure(self) -> ReviewError | None:
        for o in (*self.parts, *self.merges, self.synthesis):
            if o.error is not None:
                return o.error
        return None


# --------------------------------------------------------------------------- resuming


def _finished_chains(
    root: Path,
    folder: str,
    topics: set[str],
    prefix: str | tuple[str, ...],
    policy: TrustPolicy | None = None,
) -> dict[str, list[list[ChainSegment]]]:
    """The chains of ``topics`` (or of a topic starting with ``prefix``: the synthesis and
    its merges) in ``folder`` that the trust rule believes every segment of and that ended
    (not at the token cap), by topic."""
    from deepseek_review.records.chain import find_chain
    from deepseek_review.records.index import receipts_in
    from deepseek_review.trust.rule import TrustPolicy, admit

    def wanted(topic: str | None) -> bool:
        return topic is not None and (topic in topics or topic.startswith(prefix))

    receipts = [
        rel for rel in receipts_in(root, folder) if wanted(topic_of(rel.rpartition("/")[2]))
    ]
    if not receipts:
        return {}
    admission, _ = admit(root, receipts, policy or TrustPolicy.configured())
    note = admission.note()
    if note is not None:
        log.warning("%s: %s", name_of("split"), note)
    out: dict[str, list[list[ChainSegment]]] = {}
    for rel in receipts:
        if "_continuation_" in rel or not admission.believed(rel):
            continue
        try:
            chain = find_chain(root, rel)
        except InputError:
            continue
        if all(admission.believed(s.receipt_path) for s in chain) and (
            chain[-1].finish_reason != "length"
        ):
            topic = topic_of(rel.rpartition("/")[2]) or ""
            out.setdefault(topic, []).append(chain)
    return out


def _done_chain(
    chains: dict[str, list[list[ChainSegment]]], topic: str, prompt_sha256: str
) -> list[ChainSegment] | None:
    """The newest finished chain of ``topic`` whose primary sent exactly ``prompt_sha256``."""
    from deepseek_review.records.naming import name_order

    found = [c for c in chains.get(topic, []) if c[0].receipt.prompt_sha256 == prompt_sha256]
    if not found:
        return None
    return max(found, key=lambda c: name_order(c[0].receipt_path))


def _from_chain(chain: Sequence[ChainSegment]) -> list[tuple[str, str, str]]:
    return [(s.receipt_path, s.answer_path, s.receipt.answer_sha256) for s in chain]


# --------------------------------------------------------------------------- running


def run_split(
    review: SplitReview,
    client: ChatClient | PoolSender,
    *,
    progress: ProgressFn | None = None,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
    send: SendFn | None = None,
    policy: TrustPolicy | None = None,
    resume: bool = True,
) -> SplitOutcome:
    """Review every part not done yet, then the synthesis once all are; write the split
    record. A part that fails is reported and the others still run; the first failure is
    the outcome's (the caller raises it). ``send``: how each review is sent (default: as
    ``run`` sends one, on ``client``); ``policy``: the trust rule finished chains are
    adopted by (default: the configured one); ``resume`` False adopts none."""
    stamp = utc_stamp(now())
    folder = review.out_dir.relative_to(review.root).as_posix()
    topics = {p.topic for p in review.parts}
    prefixes = (review.synthesis_topic, review.options.topic + "-part-")
    chains = _finished_chains(review.root, folder, topics, prefixes, policy) if resume else {}
    send = send or _sent_by(client)
    outcomes: list[PartOutcome] = []
    merges: list[PartOutcome] = []
    synthesis = PartOutcome(0, review.synthesis_topic)
    sent = False
    try:
        sent = _run_parts(review, send, chains, outcomes, progress)
        if all(o.status == "done" for o in outcomes):
            merging = _Merging(review, send, chains, progress, merges)
            sent = merging.run(outcomes, synthesis) or sent
    finally:  # also when interrupted: the record says what is done
        record = None
        if sent:
            missing = review.parts[len(outcomes) :]
            outcomes += [PartOutcome(p.part.number, p.topic) for p in missing]
            record = _write_record(review, outcomes, synthesis, stamp, merges)
    return SplitOutcome(review, tuple(outcomes), synthesis, record, tuple(merges))


def _sent_by(via: ChatClient | PoolSender) -> SendFn:
    """How ``run`` sends each review: at once, on the one server or on the pool's choice."""

    def send(plan: ReviewPlan, progress: ProgressFn | None) -> ReviewResult:
        from deepseek_review.reviewing.pipeline import send_review
        from deepseek_review.reviewing.pool import PoolSender

        if isinstance(via, PoolSender):
            return via.send(plan, progress)
        return send_review(plan, via, progress=progress)

    return send


def _run_parts(
    review: SplitReview,
    send: SendFn,
    chains: dict[str, list[list[ChainSegment]]],
    outcomes: list[PartOutcome],
    progress: ProgressFn | None,
) -> bool:
    """Each part not done yet sent, ``review.jobs`` at a time (its outcome appended in part
    order, before it is sent); whether any was."""
    todo: list[tuple[PlannedPart, PartOutcome]] = []
    same: dict[str, list[list[ChainSegment]]] | None = None
    for p in review.parts:
        o = PartOutcome(p.part.number, p.topic)
        outcomes.append(o)
        done = _done_chain(chains, p.topic, p.plan.prepared.prompt_sha256)
        if done is None and chains:
            same = by_content(chains, review) if same is None else same
            done = reused(same, p)
            if done is not None:
                o.reused_from = topic_of(done[0].answer_path.rpartition("/")[2])
        if done is None:
            todo.append((p, o))
            continue
        o.status, o.chain, o.resumed = "done", _from_chain(done), True
        n, first = len(review.parts), done[0].receipt_path
        log.info("part %d of %d: done already (%s)", o.number, n, first)
    if review.jobs <= 1 or len(todo) <= 1:
        for p, o in todo:
            _send_part(review, send, p, o, progress)
        return bool(todo)
    from concurrent.futures import ThreadPoolExecutor, wait

    # One client for all (as a batch's workers share theirs); no live progress line: the
    # parts' streams would write over each other.
    pool = ThreadPoolExecutor(max_workers=review.jobs, thread_name_prefix="split-part")
    try:
        futures = [pool.submit(_send_part, review, send, p, o, None) for p, o in todo]
        wait(futures)
        for f in futures:
            f.result()  # an Interrupted in a worker, raised here
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return True


def _send_part(
    review: SplitReview,
    send: SendFn,
    p: PlannedPart,
    o: PartOutcome,
    progress: ProgressFn | None,
) -> None:
    """Send one part as an ordinary review; a failure is the outcome's, not raised (but an
    interruption is)."""
    n = len(review.parts)
    files = plural(len(p.part.files), "file")
    log.info("part %d of %d: %s (~%d tokens)", o.number, n, files, p.plan.token_estimate)
    o.status = "failed"  # until it is done
    try:
        result = send(p.plan, progress)
    except Interrupted:
        raise
    except ReviewError as exc:
        o.error = exc
        log.error("part %d of %d failed: %s", o.number, n, exc.message)
        return
    if result is None:
        o.status = "not run"
        return
    o.chain = [(s.receipt_path, s.answer_path, s.answer_sha256) for s in result.segments]
    o.status = "truncated" if result.truncated else "done"
    if result.truncated:
        o.error = TruncatedReview(
            f"part {o.number} is still truncated; last segment: {result.segments[-1].answer_path}",
            hint=f"raise {name_of('max_continuations')} or "
            f"{name_of('continuation_max_tokens')} and run again",
        )


def _answers(root: Path, outcomes: Sequence[PartOutcome]) -> list[ContextFile]:
    """The parts' answer files as context files, part by part, read from the disk and checked
    against their receipts' ``answer_sha256``."""
    files = []
    for o in outcomes:
        for _, answer, sha in o.chain:
            from deepseek_review.git.runner import read_regular_file

            try:
                data = read_regular_file(root / answer)
            except OSError as exc:
                raise InputError(f"{answer}: cannot read ({exc.strerror or exc})") from None
            if sha256_tag(data) != sha:
                raise InputError(f"{answer}: changed since its receipt was written")
            files.append(ContextFile(answer, data.decode("utf-8"), sha, len(data)))
    return files


class _Merging:
    """The synthesis, after rounds of merges while the answers do not fit one: each round
    merges consecutive answers (a part's chain never cut) into as few reviews as fit the
    window, with the synthesis template; the synthesis then merges the last round's."""

    def __init__(
        self,
        review: SplitReview,
        send: SendFn,
        chains: dict[str, list[list[ChainSegment]]],
        progress: ProgressFn | None,
        merges: list[PartOutcome],
    ) -> None:
        self.review, self.send, self.chains, self.progress = review, send, chains, progress
        self.merges = merges
        self.sent = False
        split = review.split
        self.room = split.window - review.options.max_tokens - split.margin

    def run(self, outcomes: Sequence[PartOutcome], synthesis: PartOutcome) -> bool:
        """Merge until one synthesis fits, then send it; whether anything was sent."""
        root = self.review.root
        try:
            groups = [_answers(root, [o]) for o in outcomes]
        except ReviewError as exc:
            synthesis.status, synthesis.error = "failed", exc
            return False
        what = plural(len(outcomes), "part")
        for round_ in range(1, 100):
            files = [f for g in groups for f in g]
            try:
                plan = self._plan(self.review.synthesis_topic, "", files)
            except ReviewError as exc:
                synthesis.status, synthesis.error = "failed", exc
                synthesis.context = [f.path for f in files]
                return self.sent
            if plan.token_estimate <= self.room:
                synthesis.context = [f.path for f in files]
                self._send(plan, synthesis, f"synthesis of {what}")
                return self.sent
            batches = self._batches(groups, round_)
            if batches is None:
                synthesis.status = "failed"
                synthesis.error = PromptDoesNotFit(
                    f"the answers of {what} cannot be merged within {name_of('context_window')} "
                    f"{self.review.split.window}: one answer alone leaves no room for another; "
                    "the parts are done",
                    hint=f"lower {name_of('max_tokens')} and run again (the parts are not sent "
                    "again)",
                )
                return self.sent
            merged = self._round(round_, batches)
            if merged is None:
                return self.sent
            groups = merged
            what = plural(len(groups), "merged review")
        raise AssertionError("rounds always shrink the answers")

    def _round(
        self, round_: int, batches: list[list[list[ContextFile]]]
    ) -> list[list[ContextFile]] | None:
        """Send one round's merges; their answers, or None when one failed."""
        topic = self.review.options.topic
        n = len(batches)
        width = max(2, len(str(n)))
        out: list[list[ContextFile]] = []
        failed = False
        first = 1
        total = sum(len(b) for b in batches)
        for j, batch in enumerate(batches, start=1):
            name = f"{topic}-synthesis-r{round_}-{j:0{width}d}-of-{n:0{width}d}"
            o = PartOutcome(j, name, round=round_)
            self.merges.append(o)
            files = [f for g in batch for f in g]
            o.context = [f.path for f in files]
            last = first + len(batch) - 1
            inputs = "parts" if round_ == 1 else f"round {round_ - 1}'s merged reviews"
            note = f"This review merges {inputs} {first} to {last} of {total}: merge only these."
            first = last + 1
            try:
                check_topic(name)
                plan = self._plan(name, note, files)
            except ReviewError as exc:
                o.status, o.error = "failed", exc
                failed = True
                continue
            self._send(plan, o, f"merge {j} of {n} (round {round_})")
            if o.status != "done":
                failed = True
                continue
            try:
                out.append(_answers(self.review.root, [o]))
            except ReviewError as exc:
                o.status, o.error = "failed", exc
                failed = True
        return None if failed else out

    def _batches(
        self, groups: list[list[ContextFile]], round_: int
    ) -> list[list[list[ContextFile]]] | None:
        """Consecutive groups packed into merges that fit; None when none holds two."""
        with counting(self.review.split.bytes_per_token):
            return self._packed(groups, round_)

    def _packed(
        self, groups: list[list[ContextFile]], round_: int
    ) -> list[list[list[ContextFile]]] | None:
        options = self.review.options
        longest = f"{options.topic}-synthesis-r{round_}-9999-of-9999"
        framing = framing_tokens(SYNTHESIS_TEMPLATE, "x" * 512 + "\n\n" + options.prompt, longest)
        room = self.room - framing
        batches: list[list[list[ContextFile]]] = []
        used = room + 1
        for g in groups:
            cost = sum(
                count_tokens(f.text) + count_tokens(f"## File 9999 of 9999: {f.path}") + 16
                for f in g
            )
            if cost > room:
                return None
            if used + cost > room:
                batches.append([])
                used = 0
            batches[-1].append(g)
            used += cost
        return None if len(batches) >= len(groups) else batches

    def _plan(self, topic: str, note: str, files: Sequence[ContextFile]) -> ReviewPlan:
        options = replace(
            self.review.options,
            topic=topic,
            prompt=(note + "\n\n" + self.review.options.prompt)
            if note
            else self.review.options.prompt,
            template=SYNTHESIS_TEMPLATE,
            template_file=None,
            split=False,
            context_window=self.review.split.window,
            git=GitOptions(),  # the answers, as the working tree has them: not the change
        )
        split = self.review.split
        return planned_within(options, self.review.env, files, split.window, split.margin)

    def _send(self, plan: ReviewPlan, out: PartOutcome, what: str) -> None:
        """Send a merge or the synthesis (unless a finished chain answered it already)."""
        done = _done_chain(self.chains, out.topic, plan.prepared.prompt_sha256)
        if done is not None:
            out.status, out.chain, out.resumed = "done", _from_chain(done), True
            return
        log.info("%s (~%d tokens)", what, plan.token_estimate)
        self.sent = True
        out.status = "failed"  # until it is done
        try:
            result = self.send(plan, self.progress)
        except Interrupted:
            raise
        except ReviewError as exc:
            out.error = exc
            log.error("%s failed: %s", what, exc.message)
            return
        if result is None:
            out.status = "not run"
            return
        out.chain = [(s.receipt_path, s.answer_path, s.answer_sha256) for s in result.segments]
        out.status = "truncated" if result.truncated else "done"
        if result.truncated:
            out.error = TruncatedReview(
                f"{what} is still truncated; last segment: {result.segments[-1].answer_path}"
            )


def record_data(
    review: SplitReview,
    parts: Sequence[PartOutcome],
    synthesis: PartOutcome,
    merges: Sequence[PartOutcome] = (),
) -> dict[str, Any]:
    """The split record's content (:mod:`deepseek_review.records.split_record`)."""
    split = review.split
    change = {} if review.change is None else {"change": dict(review.change)}
    return {
        "schema": split_version_for(review.change is not None),
        "topic": review.options.topic,
        "model": review.options.model,
        "endpoint": review.endpoint.url,
        "plan": {
            "context_window": split.window,
            "max_tokens": split.max_tokens,
            "margin": split.margin,
            "estimator": split.estimator,
            "base_tokens": split.base_tokens,
            "part_cap": split.part_cap,
        },
        "parts": [_part_data(p, o) for p, o in zip(review.parts, parts, strict=True)],
        "merges": [
            {
                "round": m.round,
                "number": m.number,
                "topic": m.topic,
                "context_files": m.context,
                **_chain_data(m),
            }
            for m in merges
        ],
        "synthesis": {
            "topic": review.synthesis_topic,
            "context_files": synthesis.context,
            **_chain_data(synthesis),
        },
        "not_reviewed": [
            {"path": n.path, "reason": n.reason}
            | ({} if n.hunks is None else {"hunks": list(n.hunks)})
            for n in split.not_reviewed
        ],
        **change,
    }


def _part_data(p: PlannedPart, o: PartOutcome) -> dict[str, Any]:
    files = [
        {"path": f.path, "sha256": f.sha256, "bytes": f.size, "estimated_tokens": f.tokens}
        | ({} if f.lines is None else {"lines": list(f.lines)})
        | ({"change": True} if f.change else {})
        | ({} if f.hunks is None else {"hunks": list(f.hunks[:2])})
        for f in p.part.files
    ]
    return {
        "number": p.part.number,
        "topic": p.topic,
        "estimated_tokens": p.plan.token_estimate,
        **({} if o.reused_from is None else {"reused_from": o.reused_from}),
        "files": files,
        **_chain_data(o),
    }


def _chain_data(o: PartOutcome) -> dict[str, Any]:
    """How far a part, merge or the synthesis got, and the chain that reviewed it."""
    d: dict[str, Any] = {
        "status": o.status,
        "receipts": [r for r, _, _ in o.chain],
        "answers": [a for _, a, _ in o.chain],
    }
    if o.error is not None:
        d["error"] = o.error.message
    return d


def _write_record(
    review: SplitReview,
    parts: Sequence[PartOutcome],
    synthesis: PartOutcome,
    stamp: str,
    merges: Sequence[PartOutcome],
) -> str:
    """Write the split record under a free name ``<topic>_deepseek_<model>_<stamp>[-N]``."""
    from deepseek_review.errors import OutputError

    data = record_data(review, parts, synthesis, merges)
    model = model_slug(review.options.model)
    stem = stem_for(review.options.topic, model, stamp, continuation=False)
    folder = review.out_dir.relative_to(review.root).as_posix()
    for n in range(1, 10_000):
        name = (stem if n == 1 else f"{stem}-{n}") + SPLIT_SUFFIX
        path = review.out_dir / name
        if path.exists():
            continue
        write_split(path, data, shown=f"{folder}/{name}")
        return f"{folder}/{name}"
    raise OutputError(f"{folder}: no free file name for {stem}{SPLIT_SUFFIX}")
