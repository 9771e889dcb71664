"""Findings derived from stored reviews: from the answer alone, so anyone can re-derive them.

A review is a chain (:func:`records.chain.find_chain`); its findings come from the stitched answer
(:func:`records.chain.stitched_text`, every segment's hash checked) and are anchored against the
files it reviewed as the request record references them: a context file's text is the
working tree's or ``HEAD``'s only when it hashes as recorded, so a finding is never anchored
to text the model did not see. A folder gives every chain found under it, merged and
deduplicated by fingerprint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from deepseek_review.errors import InputError
from deepseek_review.finding.anchor import Reviewed, anchor
from deepseek_review.finding.extract import extract, extract_structured
from deepseek_review.finding.fingerprint import normalised
from deepseek_review.finding.hunks import NewSide, change_in
from deepseek_review.finding.location import refusal, repo_path
from deepseek_review.finding.model import SEVERITIES, Anchored, rank
from deepseek_review.finding.self_check import SELF_CHECK_TEMPLATE
from deepseek_review.git.objects import blob_id, is_oid, object_format, short
from deepseek_review.git.runner import git_output, in_git_work_tree
from deepseek_review.records.canonical import sha256_tag
from deepseek_review.records.chain import read_answer
from deepseek_review.records.lines import Lines, describe, line_count, line_slice
from deepseek_review.records.naming import EXTRACTION_TEMPLATE
from deepseek_review.records.parts import file_refs
from deepseek_review.records.rebuild import repo_reader
from deepseek_review.records.stored import ChainSegment


@dataclass(frozen=True)
class ReviewFindings:
    """The findings of one chain, and the receipts they were derived from."""

    answer_path: str
    """The last segment's answer (where review-level findings are shown)."""
    receipts: tuple[dict[str, str], ...]
    findings: tuple[Anchored, ...]
    extents: Mapping[str, int] = field(default_factory=dict)
    """The number of lines of each file a finding is shown on as a whole (a finding demoted
    to its file or to the review's answer): a SARIF region covering the whole file."""
    sources: Mapping[str, Source] = field(default_factory=dict)
    """The reviewed version of each file a finding anchored to its lines suggests a change
    to: what the change is made against (:mod:`.patch`)."""
    rank: int = 0
    """How far its findings were refined: 0 the answer's block, 1 a findings extraction's,
    2 a self-check's (``answer_path``: the review's in every case); :func:`supersede`."""


@dataclass(frozen=True)
class Source:
    """The reviewed version of a file: its bytes, where they were read (``the working
    tree``, ``HEAD``, ``blob abc1234``, ``commit abc1234``), its blob id, and whether the
    working tree still holds it."""

    data: bytes
    how: str
    oid: str
    current: bool


def _extents(answer: str, seen: Reviewed, found: Sequence[Anchored]) -> dict[str, int]:
    """:attr:`ReviewFindings.extents` of the findings not shown on their lines: the lines of
    the reviewed file, or of the last segment's ``answer`` for a review-level finding."""
    out: dict[str, int] = {}
    for a in found:
        if a.anchored or a.where is None or a.where in out:
            continue
        text = answer if a.level == "review" else seen.texts.get(a.finding.path)
        if text is not None:
            out[a.where] = line_count(text)
    return out


@dataclass
class Collected:
    """Every chain's findings, merged: ``findings`` deduplicated by fingerprint (the most
    severe kept), ``problems`` the chains whose block could not be used, with why."""

    reviews: list[ReviewFindings] = field(default_factory=list)
    findings: list[Anchored] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    set_aside: dict[str, str] = field(default_factory=dict)
    """The segments the trust rule (:mod:`deepseek_review.trust.rule`) set aside, with why."""
    not_asked: set[str] = field(default_factory=set)
    """The chains (by last answer) made with a template that asks for no findings (the bundled
    ``default``) and holding none: not a problem, summed up in one line."""
    without_block: set[str] = field(default_factory=set)
    """The chains (by last answer) whose answer holds no findings block at all: a review made
    with a template that asks for none. A gate passes over them (nothing appended to a chain
    can remove a block); every other problem fails it."""
    baselined: bool = False
    """Whether the findings were compared with a baseline (each then has its state)."""
    absent: list[Anchored] = field(default_factory=list)
    """The baseline's findings not found now (state ``absent``): listed, never gated."""
    left_out: dict[str, int] = field(default_factory=dict)
    """Findings the export leaves out on request (``below_min_severity``,
    ``over_max_findings``; ``unchanged_in_baseline`` with ``--only-new``), how many of each;
    the gate still counts the first two."""

    def counts(self) -> dict[str, int]:
        """Findings by severity, every severity present (zeros included)."""
        out = dict.fromkeys(SEVERITIES, 0)
        for a in self.findings:
            out[a.finding.severity] += 1
        return out

    def outside(self) -> list[Anchored]:
        """The findings whose path is not a location inside the repository (shown on their
        review, or on no file: :mod:`.location`)."""
        return [a for a in self.findings if refusal(a.finding.path) or a.where is None]

    def categories(self) -> dict[str, int]:
        """Findings by category, the most frequent first (then by name)."""
        counts: dict[str, int] = {}
        for a in self.findings:
            counts[a.finding.category] = counts.get(a.finding.category, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))

    def extents(self) -> dict[str, int]:
        """The line counts of the files findings are shown on as a whole (every review's)."""
        return {k: n for r in self.reviews for k, n in r.extents.items()}

    def at_or_above(self, severity: str) -> list[Anchored]:
        return [a for a in self.findings if rank(a.finding.severity) <= rank(severity)]


def _receipt_summary(seg: ChainSegment) -> dict[str, str]:
    r = seg.receipt
    return {
        "receipt_path": seg.receipt_path,
        "answer_path": r.answer_path,
        "prompt_sha256": r.prompt_sha256,
        "answer_sha256": r.answer_sha256,
        "model": r.model,
    }


def reviewed_texts(
    root: Path,
    refs: Mapping[str, tuple[str, Lines | None]],
    change: NewSide | None = None,
    blobs: Mapping[str, str] | None = None,
) -> Reviewed:
    """Each file's text as reviewed (``refs``: path → recorded sha256 and, for a range, its
    lines, cut from the file): the working tree's, ``HEAD``'s or the blob the record pinned
    (``blobs``: path → blob id), whichever hashes as recorded; otherwise None, with why.
    ``change``: a diff review's change."""
    texts: dict[str, str | None] = {}
    unavailable: dict[str, str] = {}
    ranges: dict[str, Lines] = {}
    whole: dict[str, tuple[bytes, str]] = {}
    for path, (sha, lines) in refs.items():
        text = None
        for how, data in _versions(root, path, (blobs or {}).get(path)):
            part = data if lines is None else line_slice(data, *lines)
            if part is not None and sha256_tag(part) == sha:
                text = part.decode("utf-8", "replace")
                whole[path] = (data, how)
                break
        texts[path] = text
        if lines is not None:
            ranges[path] = lines
        if text is None:
            what = path if lines is None else f"{path} ({describe(lines)})"
            pinned = (blobs or {}).get(path)
            where = "the working tree nor HEAD"
            if pinned is not None:
                where = f"the working tree, HEAD nor its pinned blob {short(pinned)}"
            unavailable[path] = (
                f"{what} is no longer as reviewed (neither {where} holds the recorded sha256)"
            )
    return Reviewed(texts, unavailable, change, ranges, whole)


def _versions(root: Path, path: str, blob: str | None) -> Iterator[tuple[str, bytes]]:
    """The versions of ``path`` that may be the reviewed one, each read only when the one
    before is not: the working tree's, ``HEAD``'s, the pinned blob's (git processes only
    when the tree's file differs)."""
    tree = repo_reader(root)(path)
    if tree is not None:
        yield "the working tree", tree
    head = git_output(root, "cat-file", "blob", f"HEAD:{path}")
    if head is not None:
        yield "HEAD", head
    if blob is not None and is_oid(blob):
        pinned = git_output(root, "cat-file", "blob", blob)
        if pinned is not None:
            yield f"blob {short(blob)}", pinned


def _pinned_blobs(chain: Sequence[ChainSegment]) -> dict[str, str]:
    """Path → the blob id a chain's records pin it to (a record's ``git.files``; entries
    that are not well formed are no pins: a record may be hostile)."""
    out: dict[str, str] = {}
    for seg in chain:
        git = seg.record.git if seg.record is not None else None
        entries = git.get("files") if isinstance(git, Mapping) else None
        for e in entries if isinstance(entries, list) else ():
            if isinstance(e, dict) and isinstance(e.get("path"), str):
                blob = e.get("blob")
                if isinstance(blob, str) and is_oid(blob):
                    out.setdefault(e["path"], blob)
    return out


def reviewed_version(root: Path, chain: Sequence[ChainSegment]) -> Reviewed:
    """Each context file of a chain's requests as the review saw it, or why it cannot be
    had (a segment without a request record names its files but not their hashes)."""
    refs: dict[str, tuple[str, Lines | None]] = {}
    unknown: dict[str, str] = {}
    for seg in chain:
        if seg.record is None:
            for path in seg.receipt.context_files or ():
                unknown.setdefault(path, f"{seg.receipt_path} has no request record")
            continue
        for path, ref in file_refs(seg.record.messages).items():
            refs.setdefault(path, (ref.sha256, ref.lines))
    known = {p: h for p, h in refs.items() if p not in unknown}
    seen = reviewed_texts(root, known, blobs=_pinned_blobs(chain))
    texts = {**dict.fromkeys(unknown), **seen.texts}
    unavailable = {**unknown, **seen.unavailable}
    return Reviewed(texts, unavailable, recorded_change(chain), seen.ranges, seen.whole)


def recorded_change(chain: Sequence[ChainSegment]) -> NewSide | None:
    """The change a chain reviewed, as its first request showed it (None: not a diff
    review). Read from the record, so it holds after the working tree moved on."""
    for seg in chain:
        if seg.record is not None and seg.record.git is not None:
            return change_in(seg.record.git, (p for m in seg.record.messages for p in m.parts))
    return None


def derive_text(
    text: str, seen: Reviewed, review: str, *, quotes: bool = True, structured: bool = False
) -> list[Anchored]:
    """The anchored findings of a stitched answer (:class:`InputError` if it has none);
    ``quotes``: anchored by their quotes (:func:`.anchor.anchor`); ``structured``: ``text``
    is a structured-output reply, the findings object alone
    (:func:`.extract.extract_structured`)."""
    found = extract_structured(text) if structured else extract(text)
    return anchor(found, seen, review, quotes=quotes)


def is_extraction(chain: Sequence[ChainSegment]) -> bool:
    """Whether a chain is a findings extraction (its record names the bundled template)."""
    return _template(chain) == EXTRACTION_TEMPLATE


def is_self_check(chain: Sequence[ChainSegment]) -> bool:
    """Whether a chain is a self-check of a findings file (:mod:`.self_check`)."""
    return _template(chain) == SELF_CHECK_TEMPLATE


def _template(chain: Sequence[ChainSegment]) -> str | None:
    record = chain[0].record if chain else None
    return None if record is None or record.template is None else record.template[0]


def extracted_review(root: Path, chain: Sequence[ChainSegment]) -> list[ChainSegment]:
    """The review chain a findings extraction read: its context files are exactly that
    chain's answers, in order (:class:`InputError` when they are not)."""
    from deepseek_review.records.chain import find_chain
    from deepseek_review.records.naming import sibling

    record = chain[0].record
    assert record is not None
    answers = list(file_refs(record.messages))
    if not answers:
        raise InputError(f"{chain[0].receipt_path}: a findings extraction that read no answer")
    try:
        review = find_chain(root, sibling(answers[-1], "receipt"))
    except ValueError:
        raise InputError(f"{answers[-1]}: not an answer file") from None
    if [s.answer_path for s in review] != answers:
        raise InputError(
            f"{chain[0].receipt_path}: its context is not the answers of one review chain"
        )
    return review


class FindingsSource(NamedTuple):
    """Where a chain's findings come from."""

    text: str
    """The text holding them: the stitched answer, or a findings extraction's reply."""
    seen: Reviewed
    """The files they are anchored in."""
    review: str
    """The answer a review-level finding is shown on (the reviewed chain's last)."""
    last: str
    """That answer's text (a review-level finding's extent)."""
    structured: bool
    """``text`` is a structured-output reply (:func:`.extract.extract_structured`)."""


Believed = Callable[[str], bool]
"""Whether the trust rule believes a segment, by receipt (:meth:`Admission.believed`)."""


def _read_through(chain: Sequence[ChainSegment], believed: Believed | None, by: str) -> None:
    """A chain that another one's findings are read through counts only when the trust rule
    believes every segment of it (``believed`` None: no rule, as ``verify`` re-derives)."""
    doubted = [
        s.receipt_path for s in chain if believed is not None and not believed(s.receipt_path)
    ]
    if doubted:
        raise InputError(f"{by} read {doubted[0]}, which the trust rule set aside")


def chain_source(
    root: Path, chain: Sequence[ChainSegment], believed: Believed | None = None
) -> FindingsSource:
    """Where a chain's findings come from, every answer's hash checked. A findings
    extraction's reply is anchored in the files of the review it read, and shown on that
    review's answer (which ``believed`` must believe)."""
    answers = [read_answer(root, s) for s in chain]
    if not is_extraction(chain):
        seen = reviewed_version(root, chain)
        return FindingsSource("".join(answers), seen, chain[-1].answer_path, answers[-1], False)
    review = extracted_review(root, chain)
    _read_through(review, believed, chain[0].receipt_path)
    last = read_answer(root, review[-1])
    seen = reviewed_version(root, review)
    return FindingsSource("".join(answers), seen, review[-1].answer_path, last, True)


def chain_findings(
    root: Path, chain: Sequence[ChainSegment], believed: Believed | None = None
) -> ReviewFindings:
    """The findings of a chain (:class:`InputError` when its findings block is missing or
    invalid, or a continuation has no request record: this tool writes one for every
    continuation, so a continuation without one was not written by it). ``believed``: the
    trust rule's verdict on a chain read through this one (an extraction's review, a
    self-check's findings)."""
    for seg in chain[1:]:
        if seg.record is None:
            raise InputError(
                f"a continuation without its request record ({seg.receipt_path} has no "
                f"{seg.record_path}); not read as part of the review"
            )
    if is_self_check(chain):
        return _self_checked(root, chain, believed)
    src = chain_source(root, chain, believed)
    found = derive_text(src.text, src.seen, src.review, structured=src.structured)
    receipts = tuple(_receipt_summary(s) for s in chain)
    extents = _extents(src.last, src.seen, found)
    sources = _sources(root, chain, src.seen, found)
    return ReviewFindings(src.review, receipts, tuple(found), extents, sources, int(src.structured))


def _self_checked(
    root: Path, chain: Sequence[ChainSegment], believed: Believed | None
) -> ReviewFindings:
    """The findings of the chain whose findings file a self-check read, less those it
    scored under the threshold its own findings file records."""
    from deepseek_review.finding.self_check import findings_of, scores
    from deepseek_review.records.chain import find_chain
    from deepseek_review.records.naming import sibling

    first, last = chain[0], chain[-1]
    assert first.record is not None and last.record is not None
    ((path, ref),) = file_refs(first.record.messages).items()
    data, own = repo_reader(root)(path), last.record.findings
    if data is None or sha256_tag(data) != ref.sha256 or own is None:
        raise InputError(f"{last.receipt_path}: the self-check's findings cannot be read")
    checked = repo_reader(root)(own[0])
    threshold = None if checked is None else findings_of(checked, own[0]).get("self_check")
    if not isinstance(threshold, dict) or type(threshold.get("threshold")) is not int:
        raise InputError(f"{own[0]}: no self-check threshold")
    scored = scores("".join(read_answer(root, s) for s in chain), findings_of(data, path))
    checked_chain = find_chain(root, sibling(path, "receipt"))
    _read_through(checked_chain, believed, first.receipt_path)
    base = chain_findings(root, checked_chain, believed)
    kept = tuple(
        a for a in base.findings if scored.get(a.fingerprint, 10) >= threshold["threshold"]
    )
    receipts = base.receipts + tuple(_receipt_summary(s) for s in chain)
    return ReviewFindings(base.answer_path, receipts, kept, base.extents, base.sources, 2)


def problem_path(root: Path, chain: Sequence[ChainSegment]) -> str:
    """Where a chain whose findings cannot be read is listed: its last answer, or for a
    findings extraction the answer of the review it read (another source of that review's
    findings, its block or a retried extraction, then makes it no problem:
    :func:`supersede`)."""
    if is_extraction(chain):
        try:
            return extracted_review(root, chain)[-1].answer_path
        except InputError:
            pass
    return chain[-1].answer_path


def supersede(collected: Collected, failed: set[str]) -> None:
    """A review whose findings were extracted (``run --findings-from structured``) counts by
    its extraction alone, not also by its own block; a review whose findings were read one
    way is no problem for another way failing (a retried extraction, a broken block).
    ``failed``: the reviews an extraction failed for: findings were asked of them, so they
    are not passed over for having no block (unless read some other way)."""
    best: dict[str, int] = {}
    for r in collected.reviews:
        best[r.answer_path] = max(best.get(r.answer_path, 0), r.rank)
    collected.reviews = [r for r in collected.reviews if r.rank == best[r.answer_path]]
    read = {r.answer_path for r in collected.reviews}
    collected.problems = [(p, why) for p, why in collected.problems if p not in read]
    collected.without_block -= failed - read


def _sources(
    root: Path, chain: Sequence[ChainSegment], seen: Reviewed, found: Sequence[Anchored]
) -> dict[str, Source]:
    """:attr:`ReviewFindings.sources`: the whole reviewed file, or of a diff review's changed
    file its new side in the commit (or staged tree) the record names."""
    wanted = {a.finding.path for a in found if a.anchored and a.finding.suggestion is not None}
    if not wanted:
        return {}
    head = _new_side(chain)
    fmt = object_format(root) if in_git_work_tree(root) else "sha1"
    out: dict[str, Source] = {}
    for path in sorted(wanted):
        got = seen.whole.get(path)
        if got is None and head is not None and seen.change and path in seen.change.hunks:
            data = git_output(root, "cat-file", "blob", f"{head}:{path}")
            got = None if data is None else (data, f"commit {short(head)}")
        if got is not None:
            data, how = got
            current = repo_reader(root)(path) == data
            out[path] = Source(data, how, blob_id(data, fmt), current)
    return out


def _new_side(chain: Sequence[ChainSegment]) -> str | None:
    """The commit (or staged tree) a diff review's change leads to, as its record names it."""
    for seg in chain:
        git = seg.record.git if seg.record is not None else None
        commits = git.get("commits") if isinstance(git, Mapping) else None
        head = commits.get("head") if isinstance(commits, Mapping) else None
        if isinstance(head, str) and is_oid(head):
            return head
    return None


#: The bundled templates that ask the model for no findings block (by every name a version of
#: them is asked for: ``default@v1`` is the first version of ``default``).
TEMPLATES_WITHOUT_FINDINGS = frozenset({"default", "default@v1", "default@v2"})


def asks_for_none(chain: Sequence[ChainSegment]) -> bool:
    """Whether the chain's review was made with a bundled template that asks for no findings
    (its request record names the template)."""
    record = chain[0].record
    template = None if record is None else record.template
    return template is not None and template[0] in TEMPLATES_WITHOUT_FINDINGS


def merge(reviews: Sequence[ReviewFindings]) -> list[Anchored]:
    """Every review's findings, each problem once, most severe first. Two findings are one
    problem when they have the same fingerprint, or the same category, path and quote
    (whitespace normalised): a split review's synthesis restates its parts' findings,
    unanchored (it did not see their files), and must not report them twice. Of one problem
    the best-placed finding is kept (on its lines, then on its file), at the most severe
    severity any review gave it, with the reviews that reported it
    (:attr:`Anchored.reported_by`)."""
    groups: dict[object, list[Anchored]] = {}
    key_of: dict[object, object] = {}
    for r in reviews:
        for a in r.findings:
            same = _same_problem(a)
            key = key_of.get(a.fingerprint) or (same and key_of.get(same)) or a.fingerprint
            groups.setdefault(key, []).append(a)
            key_of.setdefault(a.fingerprint, key)
            if same:
                key_of.setdefault(same, key)
    kept = [_kept(g) for g in groups.values()]
    return sorted(kept, key=lambda a: rank(a.finding.severity))


_PLACES = {"line": 0, "file": 1, "review": 2}


def _same_problem(a: Anchored) -> tuple[str, str, str] | None:
    """What makes two findings one problem besides their fingerprint: category, path and
    quote; None without a quote (a title alone is too loose to merge on)."""
    quote = normalised((a.finding.quote or "").splitlines())
    if not quote:
        return None
    return (a.rule_id, repo_path(a.finding.path) or a.finding.path, quote)


def _kept(group: list[Anchored]) -> Anchored:
    """One problem's findings as one: the best placed (then the most severe, then the
    first), at the most severe severity of any, naming every review that reported it."""
    if len(group) == 1:
        return group[0]
    placed = min(group, key=lambda a: (not a.anchored, _PLACES[a.level], rank(a.finding.severity)))
    severe = min(group, key=lambda a: rank(a.finding.severity)).finding.severity
    reviews = tuple(dict.fromkeys(a.review for a in group))
    finding = replace(placed.finding, severity=severe)
    return replace(placed, finding=finding, reported_by=reviews if len(reviews) > 1 else ())


def receipts_json(collected: Collected) -> list[dict[str, Any]]:
    """The receipts every export names (so a reader can check them with ``verify``)."""
    return [dict(r) for review in collected.reviews for r in review.receipts]
