"""What ``run --split`` prints (the plan, the files a run wrote) and the story ``show`` tells
of a split record."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepseek_review.cli.app import json_out, shown_path, write_lines
from deepseek_review.util.logs import log
from deepseek_review.util.textsafe import plural

if TYPE_CHECKING:
    from deepseek_review.reviewing.split_plan import SplitReview
    from deepseek_review.reviewing.split_run import SplitOutcome


def plan_lines(review: SplitReview) -> list[str]:
    """The plan in words: parts, files and tokens per part, the synthesis, the total."""
    split = review.split
    n = len(review.parts)
    cap = review.options.max_tokens
    files = len({f.path for p in review.parts for f in p.part.files})
    lines = [
        f"endpoint       {review.endpoint.url}",
        f"model          {review.options.model}",
        f"split          {plural(n, 'part')} of {plural(files, 'file')} for a context window of "
        f"{split.window} tokens (--max-tokens {cap}, margin {split.margin}, a part's prompt at "
        f"most {split.part_cap})",
        f"tokens         {split.estimator}",
    ]
    width = len(str(n))
    for p in review.parts:
        lines.append(
            f"part {p.part.number:>{width}}/{n}  {p.topic}  {plural(len(p.part.files), 'file')}, "
            f"~{p.plan.token_estimate} tokens (+{cap} answer)"
        )
        lines += [
            f"  {f.size:>10}  {_named(f.path, f.lines, f.change, f.hunks)}" for f in p.part.files
        ]
    lines.append(
        f"synthesis      {review.synthesis_topic}: the parts' answers, ~{review.synthesis_estimate}"
        f" tokens at most (+{cap} answer)"
    )
    if review.synthesis_estimate + cap + split.margin > split.window:
        merges, tokens = review.merge_estimate
        fits = (
            f"fits the window if the parts' answers average under {review.answer_room} tokens; else"
            if review.answer_room
            else f"cannot hold {plural(n, 'answer')} in the window:"
        )
        lines.append(
            f"  {fits} they are merged in rounds first (at most {merges} merges, "
            f"~{tokens} tokens, with every answer at --max-tokens)"
        )
    lines.append(
        f"total          ~{review.total_tokens} tokens at most (every prompt, every answer at "
        f"--max-tokens, merges included)"
    )
    if split.not_reviewed:
        lines.append(f"not reviewed   {plural(len(split.not_reviewed), 'file')}")
        lines += [
            f"  {_named(x.path, None, x.hunks is not None, x.hunks)}  {x.reason}"
            for x in split.not_reviewed
        ]
    return lines


def plan_json(review: SplitReview) -> dict[str, Any]:
    split = review.split
    return {
        "dry_run": True,
        "split": True,
        "endpoint": review.endpoint.url,
        "model": review.options.model,
        "context_window": split.window,
        "max_tokens": split.max_tokens,
        "margin": split.margin,
        "part_cap": split.part_cap,
        "parts": [
            {
                "number": p.part.number,
                "topic": p.topic,
                "token_estimate": p.plan.token_estimate,
                "prompt_sha256": p.plan.prepared.prompt_sha256,
                "files": [
                    {"path": f.path, "bytes": f.size, "sha256": f.sha256, "tokens": f.tokens}
                    | ({} if f.lines is None else {"lines": list(f.lines)})
                    | ({"change": True} if f.change else {})
                    | ({} if f.hunks is None else {"hunks": list(f.hunks)})
                    for f in p.part.files
                ],
            }
            for p in review.parts
        ],
        "synthesis": {
            "topic": review.synthesis_topic,
            "token_estimate": review.synthesis_estimate,
            "answer_room": review.answer_room,
            "merges_at_most": review.merge_estimate[0],
        },
        "total_tokens": review.total_tokens,
        "not_reviewed": [
            {"path": x.path, "reason": x.reason}
            | ({} if x.hunks is None else {"hunks": list(x.hunks)})
            for x in split.not_reviewed
        ],
    }


def render_split_plan(review: SplitReview, as_json: bool) -> None:
    if as_json:
        json_out(plan_json(review))
    else:
        write_lines(sys.stdout, plan_lines(review))
    log.info("dry run: nothing was sent and nothing was written")


def render_outcome(root: Path, outcome: SplitOutcome, as_json: bool) -> None:
    """The files the run wrote or found done, one a line (``--json``: by part), then the
    split record; a summary on stderr."""
    every = [*outcome.parts, *outcome.merges, outcome.synthesis]
    if as_json:
        json_out(
            {
                "split": True,
                "split_record": outcome.record_path,
                "parts": [
                    {
                        "number": o.number,
                        "topic": o.topic,
                        "status": o.status,
                        "resumed": o.resumed,
                        "receipts": [r for r, _, _ in o.chain],
                        "answers": [a for _, a, _ in o.chain],
                        "error": None if o.error is None else o.error.message,
                    }
                    for o in every
                ],
            }
        )
    else:
        from deepseek_review.records.naming import RECEIPT_SUFFIX, segment_files

        paths = [
            shown_path(root, p)
            for o in every
            if not o.resumed
            for r, _, _ in o.chain
            for p in segment_files(r.removesuffix(RECEIPT_SUFFIX)).values()
            if (root / p).is_file()
        ]
        if outcome.record_path:
            paths.append(shown_path(root, outcome.record_path))
        write_lines(sys.stdout, paths)
    done = sum(o.status == "done" for o in outcome.parts)
    resumed = sum(o.resumed for o in outcome.parts)
    log.info(
        "split: %d of %s done (%d from an earlier run), synthesis %s",
        done,
        plural(len(outcome.parts), "part"),
        resumed,
        outcome.synthesis.status,
    )


def story_lines(record: dict[str, Any]) -> list[str]:
    """A split record in words (``show`` on it, or on its synthesis): each part, what it
    covered and who reviewed it, the synthesis, what was not reviewed."""
    plan = record["plan"]
    parts = record["parts"]
    lines = [
        f"split review {record['topic']} by {record['model']}: {plural(len(parts), 'part')} for a "
        f"context window of {plan['context_window']} tokens (--max-tokens {plan['max_tokens']})"
    ]
    for p in parts:
        files = p["files"]
        lines.append(
            f"part {p['number']} ({p['topic']}): {p['status']}, {plural(len(files), 'file')}, "
            f"~{p['estimated_tokens']} tokens"
        )
        lines += [
            f"  {_named(f['path'], f.get('lines'), f.get('change', False), f.get('hunks'))}"
            for f in files
        ]
        lines += [f"  reviewed by {r}" for r in p["receipts"]]
        if "error" in p:
            lines.append(f"  error: {p['error']}")
    for m in record["merges"]:
        lines.append(
            f"merge {m['number']} of round {m['round']} ({m['topic']}): {m['status']}, "
            f"{plural(len(m['context_files']), 'answer')}"
        )
        lines += [f"  reviewed by {r}" for r in m["receipts"]]
        if "error" in m:
            lines.append(f"  error: {m['error']}")
    s = record["synthesis"]
    lines.append(f"synthesis ({s['topic']}): {s['status']}")
    lines += [f"  reviewed by {r}" for r in s["receipts"]]
    if "error" in s:
        lines.append(f"  error: {s['error']}")
    nr = record["not_reviewed"]
    lines.append(f"not reviewed: {plural(len(nr), 'file')}")
    lines += [
        f"  {_named(x['path'], None, 'hunks' in x, x.get('hunks'))}: {x['reason']}" for x in nr
    ]
    return lines


def story_of(root: Path, receipt: str) -> list[str]:
    """The story of the newest split record beside ``receipt`` whose synthesis it begins
    ([] when none names it)."""
    from deepseek_review.errors import ReviewError
    from deepseek_review.records.naming import name_order
    from deepseek_review.records.split_record import SPLIT_SUFFIX, load_split

    folder = receipt.rpartition("/")[0]
    try:
        names = sorted(
            (p.name for p in (root / folder).iterdir() if p.name.endswith(SPLIT_SUFFIX)),
            key=lambda n: name_order(f"{folder}/{n}"),
        )
    except OSError:
        return []
    for name in reversed(names):
        rel = f"{folder}/{name}" if folder else name
        try:
            record = load_split(root, rel)
        except ReviewError:
            continue
        if record["synthesis"]["receipts"][:1] == [receipt]:
            return [f"{rel}:", *story_lines(record)]
    return []


def _named(path: str, lines: Any, change: bool = False, hunks: Any = None) -> str:
    """A file as a context spec names it: ``path``, or ``path#L120-L260`` for a range; a
    file's change: ``path (change)``, or ``path (change, hunks 3-5 of 9)`` for some hunks."""
    if change:
        if not hunks:
            return f"{path} (change)"
        which = f"hunk {hunks[0]}" if hunks[0] == hunks[1] else f"hunks {hunks[0]}-{hunks[1]}"
        return f"{path} (change, {which}{f' of {hunks[2]}' if len(hunks) > 2 else ''})"
    return path if not lines else f"{path}#L{lines[0]}-L{lines[1]}"
