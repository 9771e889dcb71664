"""``verify``: check receipts, answers and chains; one line per receipt, then a summary."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from ..errors import VerificationFailed
from .app import (
    STATE,
    JsonOpt,
    QuietOpt,
    RepoRootOpt,
    VerboseOpt,
    _json_out,
    _write_lines,
    app,
    example,
)

if TYPE_CHECKING:
    from ..verification import ReceiptReport, VerifyReport


def _default_folder(root: Path) -> str:
    """Where ``run`` writes: the configured ``output_dir`` (flags, environment, config file)."""
    from ..config import resolve

    return str(resolve(root)["output_dir"])


def _line(r: ReceiptReport) -> str:
    if r.status == "fail":
        named = ", ".join(r.failed)
        details = "; ".join(f"{c.name}: {c.detail}" for c in r.checks if c.status == "fail")
        return f"FAIL {r.receipt_path}: {named} ({details})"
    notes = [f"warning: {c.name}: {c.detail}" for c in r.checks if c.status == "warn"]
    notes += [f"note: {c.name}: {c.detail}" for c in r.checks if c.status == "info"]
    return f"OK   {r.receipt_path}" + (f" ({'; '.join(notes)})" if notes else "")


def _summary(report: VerifyReport) -> str:
    n = len(report.receipts)
    where = ", ".join(report.searched)
    if n == 0:
        return f"deepseek-review: verify: no receipts found in {where}"
    ok, warn, fail = report.count("ok"), report.count("warn"), report.count("fail")
    text = f"deepseek-review: verify: {n} receipt{'s' if n != 1 else ''}: {ok + warn} OK"
    if warn:
        text += f" ({warn} with warnings)"
    text += f", {fail} FAIL"
    if report.failed_checks:
        text += " (" + ", ".join(f"{k}: {v}" for k, v in report.failed_checks.items()) + ")"
    if report.strict:
        text += " [--strict]"
    return text


def _render(report: VerifyReport, as_json: bool) -> None:
    lines = [_line(r) for r in report.receipts if not (STATE.quiet and r.status != "fail")]
    lines.append(_summary(report))
    _write_lines(sys.stderr, lines)
    if as_json:
        _json_out(report.to_json())


@app.command(epilog=example("deepseek-review verify --strict reviews"))
def verify(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            help="Receipts, answer files or folders (searched recursively for "
            "*.receipt.json), relative to the repository root. Default: the configured "
            "output folder (reviews).",
            show_default=False,
        ),
    ] = None,
    repo_root: RepoRootOpt = None,
    strict: Annotated[
        bool,
        typer.Option(help="A missing or changed context file fails (default: a warning)."),
    ] = False,
    as_json: JsonOpt = False,
    jobs: Annotated[
        int | None,
        typer.Option(
            min=1,
            help="Worker processes (default: several for thousands of receipts, else 1).",
            show_default=False,
        ),
    ] = None,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Check receipts: schema, answer hash, chain, context files, and the exact prompt.

    Exit 0 when every receipt passes (warnings allowed unless --strict), 9 when any fails,
    3 when a PATH does not exist, 2 on a usage error.
    """
    from ..repo import find_repo_root
    from ..verification import DEFAULT_FOLDER
    from ..verification import verify as run_verify

    root = find_repo_root(repo_root)
    default = DEFAULT_FOLDER if paths else _default_folder(root)  # a bad config file: exit 2
    report = run_verify(paths or [], root=root, strict=strict, jobs=jobs, default_folder=default)
    _render(report, as_json)
    if not report.ok:
        failed = report.count("fail")
        checks = ", ".join(f"{k}: {v}" for k, v in report.failed_checks.items())
        raise VerificationFailed(
            f"{failed} of {len(report.receipts)} receipt{'s' if len(report.receipts) != 1 else ''}"
            f" failed verification ({checks})"
        )
