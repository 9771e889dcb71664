"""Findings as Markdown, for ``$GITHUB_STEP_SUMMARY`` or a pull-request comment.

Text from the model is data here: table cells have ``|``, backticks and line ends escaped,
and HTML is shown as text, so a finding cannot break the table or inject markup. A
suggestion offered as a change (:func:`.patch.plan`) is a ``suggestion`` block, GitHub's
syntax for a suggested change to the lines a review comment is on, fenced longer than any
backtick run in it, its control characters made visible.
"""

from __future__ import annotations

import html

from deepseek_review.finding.derive import Collected
from deepseek_review.finding.model import SEVERITIES, Anchored
from deepseek_review.finding.patch import Fix, Plan, plan
from deepseek_review.util.textsafe import escape, fence_for


def _cell(text: str) -> str:
    one_line = escape(" ".join(text.split()))
    return html.escape(one_line, quote=False).replace("|", "\\|").replace("`", "\\`")


def _where(a: Anchored) -> str:
    shown = "(no file)" if a.where is None else a.where  # :mod:`.location`
    if a.anchored:
        span = str(a.start_line) if a.start_line == a.end_line else f"{a.start_line}-{a.end_line}"
        return _cell(f"{shown}:{span}")
    return _cell(f"{shown} (unanchored: {a.reason})")


#: How each reason a finding was left out of the export reads.
LEFT_OUT = {
    "below_min_severity": "below --min-severity",
    "over_max_findings": "over --max-findings",
    "unchanged_in_baseline": "unchanged since --baseline (--only-new)",
}


def left_out_text(left_out: dict[str, int]) -> str:
    """``2 below --min-severity, 5 over --max-findings``."""
    return ", ".join(f"{n} {LEFT_OUT.get(why, why)}" for why, n in left_out.items())


def suggestion_block(fix: Fix) -> str:
    """A GitHub suggestion block replacing the fix's lines with its text (none: deleted)."""
    text = escape(fix.text, multiline=True)
    fence = fence_for(text)
    return f"{fence}suggestion\n{text + chr(10) if fix.lines else ''}{fence}"


def _suggestions(fixes: Plan) -> list[str]:
    """The suggested changes, each under the finding it comes from, and those left out."""
    out: list[str] = []
    offered = [fix for path in fixes.fixes.values() for fix in path]
    if offered:
        out += ["### Suggested changes", ""]
        for fix in offered:
            f = fix.finding.finding
            span = str(fix.first) if fix.first == fix.last else f"{fix.first}-{fix.last}"
            out += [f"**{_cell(f'{fix.path}:{span}')}** ({f.severity}): {_cell(f.title)}", ""]
            out += [suggestion_block(fix), ""]
    if fixes.left_out:
        out.append(f"Suggestions not offered as changes ({len(fixes.left_out)}):")
        out += [
            f"- {_cell(a.where or a.finding.path)}: {_cell(a.finding.title)}: {_cell(why)}"
            for a, why in fixes.left_out
        ]
        out.append("")
    return out


def to_markdown(collected: Collected) -> str:
    """A summary line by severity, a table of findings, and the reviews they came from."""
    counts = collected.counts()
    lines = [
        "## deepseek-review findings",
        "",
        " · ".join(f"**{counts[s]}** {s}" for s in SEVERITIES),
        "",
    ]
    categories = collected.categories()
    if categories:
        lines += ["By category: " + ", ".join(f"{_cell(c)} {n}" for c, n in categories.items()), ""]
    if collected.left_out:
        lines += [f"Left out on request: {left_out_text(collected.left_out)}.", ""]
    if collected.findings:
        state = collected.baselined  # a column saying new or unchanged
        head = "| Severity | Location | Finding |" + (" Baseline |" if state else "")
        lines += [head, "| --- | --- | --- |" + (" --- |" if state else "")]
        for a in collected.findings:
            f = a.finding
            text = f"**{_cell(f.title)}** — {_cell(f.message)}"
            row = f"| {f.severity} | {_where(a)} | {text} |"
            lines.append(row + (f" {a.baseline} |" if state else ""))
        lines.append("")
    if collected.absent:
        lines.append(f"Absent since the baseline ({len(collected.absent)}):")
        lines += [
            f"- {a.finding.severity}: {_cell(a.finding.path)}: {_cell(a.finding.title)}"
            for a in collected.absent
        ]
        lines.append("")
    lines += _suggestions(plan(collected))
    problems = [f"- ⚠ {_cell(path)}: {_cell(why)}" for path, why in collected.problems]
    if problems:
        lines += [*problems, ""]
    reviews = [r.answer_path for r in collected.reviews]
    if reviews:
        lines.append("Reviews: " + ", ".join(_cell(p) for p in reviews))
    return "\n".join(lines) + "\n"
