"""Findings as GitHub Actions workflow commands (``::error file=...,line=...::message``).

Escaping follows actions/toolkit's ``command.ts``: in the message (data) ``%``, CR and LF
become ``%25``, ``%0D``, ``%0A``; in a property value ``:`` and ``,`` also become ``%3A`` and
``%2C``, so a path or title can neither end its property nor start another command.
"""

from __future__ import annotations

from deepseek_review.finding.derive import Collected
from deepseek_review.finding.markdown import suggestion_block
from deepseek_review.finding.model import Anchored
from deepseek_review.finding.patch import Fix, plan
from deepseek_review.util.textsafe import escape

#: Workflow command by finding severity.
COMMANDS = {"critical": "error", "major": "error", "minor": "warning", "nit": "notice"}


def escape_data(text: str) -> str:
    """A command's message: ``%``, CR, LF escaped (other control characters made visible
    first, so a message cannot drive the terminal of whoever reads the log)."""
    visible = escape(text, multiline=True).replace("\t", " ")
    return visible.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    """A property value: as data, and ``:`` and ``,`` too."""
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def command(a: Anchored, fix: Fix | None = None) -> str:
    """One finding as one workflow command line; ``fix``: the change offered for it, shown
    after the message as a suggestion block (an annotation shows it as text)."""
    f = a.finding
    props = {} if a.where is None else {"file": a.where}  # else on no file (:mod:`.location`)
    if a.anchored and a.where is not None:
        props |= {"line": str(a.start_line), "endLine": str(a.end_line)}
    props["title"] = f"[{f.severity}] {f.title}"
    message = f.message if a.anchored else f"{f.message}\n\n(unanchored: {a.reason})"
    if fix is not None:
        span = f"{fix.first}-{fix.last}"
        message += f"\n\nSuggested change to lines {span}:\n{suggestion_block(fix)}"
    joined = ",".join(f"{k}={escape_property(v)}" for k, v in props.items())
    return f"::{COMMANDS[f.severity]} {joined}::{escape_data(message)}"


def to_github(collected: Collected) -> str:
    """Every finding as a workflow command, one per line."""
    fixes = plan(collected)
    return "".join(command(a, fixes.fix_of(a)) + "\n" for a in collected.findings)
