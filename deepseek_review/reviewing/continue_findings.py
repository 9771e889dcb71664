"""``continue --findings``: the findings of a chain completed by ``continue``, as ``run`` makes
them: the block's findings file beside the last segment, or a findings extraction (and a
self-check) once the chain is complete, over the files its primary request record read."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from deepseek_review.records.naming import SELF_CHECK_TOPIC_SUFFIX
from deepseek_review.records.parts import file_refs
from deepseek_review.records.stored import ChainSegment
from deepseek_review.reviewing.extraction import (
    Extraction,
    SelfCheck,
    declared_kind,
    extraction_topic,
    resolved_mode,
)
from deepseek_review.util.logs import log

if TYPE_CHECKING:
    from deepseek_review.finding.sidecar import Hook


class FindingsAsk(NamedTuple):
    """What ``continue`` was asked about findings (the options ``run`` takes)."""

    findings: bool = False
    findings_from: str = "auto"
    self_check: bool = False
    self_check_threshold: int = 5


class ChainFindings(NamedTuple):
    """The job's findings hook (``block``), extraction and self-check (each None: not made)."""

    hook: Hook | None = None
    extraction: Extraction | None = None
    self_check: SelfCheck | None = None


def chain_findings(
    ask: FindingsAsk,
    root: Path,
    primary: ChainSegment,
    topic: str,
    url: str,
    api: str,
    server: tuple[str, bool],
) -> ChainFindings:
    """The findings a continued chain gets once complete; ``server``: its kind, and whether it
    was declared (else the server is asked, as for ``run``)."""
    from deepseek_review.finding.hunks import change_in
    from deepseek_review.finding.sidecar import hook, maker

    if not ask.findings:
        return ChainFindings()
    record = primary.record
    if record is None:
        log.warning("%s has no request record: no findings are made", primary.receipt_path)
        return ChainFindings()
    files = [(p, ref.sha256, ref.lines) for p, ref in file_refs(record.messages).items()]
    change = change_in(record.git, (p for m in record.messages for p in m.parts))
    kind = "ollama" if api == "ollama" else declared_kind(server[0], server[1], url)
    mode = resolved_mode(ask.findings_from, kind or server[0], api)
    checked = (
        SelfCheck(
            extraction_topic(topic, SELF_CHECK_TOPIC_SUFFIX),
            kind or server[0],
            ask.self_check_threshold,
            kind is not None,
        )
        if ask.self_check
        else None
    )
    if mode == "block":
        return ChainFindings(hook(root, files, change), None, checked)
    made = maker(root, files, change)
    ex = Extraction(mode, extraction_topic(topic), kind or server[0], url, made, kind is not None)
    return ChainFindings(None, ex, checked)
