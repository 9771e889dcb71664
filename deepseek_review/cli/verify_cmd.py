"""``verify``: check receipts, answers and chains; one line per receipt, then a summary."""

import sys
from typing import TYPE_CHECKING, Annotated

import typer

from deepseek_review.cli.app import (
    STATE,
    AllowedSignersOpt,
    JsonOpt,
    QuietOpt,
    RepoRootOpt,
    VerboseOpt,
    app,
    example,
    json_out,
    typed_path,
    write_lines,
)
from deepseek_review.errors import VerificationFailed
from deepseek_review.options.table import OPTIONS

if TYPE_CHECKING:
    from deepseek_review.verification import ReceiptReport, VerifyReport
    from deepseek_review.verification.split_checks import SplitReport


def _line(r: "ReceiptReport") -> str:
    from deepseek_review.verification.reports import (
        reread_note,  # not pins: that imports git's modules
    )

    if r.status == "fail":
        named = ", ".join(r.failed)
        details = "; ".join(f"{c.name}: {c.detail}" for c in r.checks if c.status == "fail")
        return f"FAIL {r.receipt_path}: {named} ({details})"
    notes = (
        [] if r.signer is None else [f"signed by {r.signer.principal}, key {r.signer.fingerprint}"]
    )
    notes += [f"warning: {c.name}: {c.detail}" for c in r.checks if c.status == "warn"]
    notes += [f"note: {c.name}: {c.detail}" for c in r.checks if c.status == "info"]
    notes += [n for n in [reread_note(r.checks)] if n is not None]
    return f"OK   {r.receipt_path}" + (f" ({'; '.join(notes)})" if notes else "")


def _orphan_line(path: str, strict: bool) -> str:
    what = "FAIL" if strict else "WARN"
    return (
        f"{what} {path}: an answer without its receipt (a run stopped before writing it, or "
        "a stray file): not verified"
    )


def _summary(report: "VerifyReport") -> str:
    """The counts of the JSON report's ``counts``, in the same words."""
    n = len(report.receipts)
    where = ", ".join(report.searched)
    if n == 0 and not report.orphans:
        return f"deepseek-review: verify: no receipts found in {where}"
    ok, warn, fail = report.count("ok"), report.count("warn"), report.count("fail")
    text = f"deepseek-review: verify: {n} receipt{'s' if n != 1 else ''}: {ok} OK"
    if warn:
        text += f", {warn} with warnings"
    text += f", {fail} FAIL"
    if report.failed_checks:
        text += " (" + ", ".join(f"{k}: {v}" for k, v in report.failed_checks.items()) + ")"
    if report.orphans:
        k = len(report.orphans)
        text += f"; {k} answer{'s' if k != 1 else ''} without a receipt"
    if report.strict:
        text += " [--strict]"
    return text


def _render(report: "VerifyReport", as_json: bool) -> None:
    """One line per receipt (``-q``: not the plain OK ones), per orphan, then the summary."""
    lines = [_line(r) for r in report.receipts if not (STATE.quiet and r.status == "ok")]
    lines += [_orphan_line(p, report.strict) for p in report.orphans]
    lines.append(_summary(report))
    write_lines(sys.stderr, lines)
    if as_json:
        json_out(report.to_json())


def _failure(report: "VerifyReport") -> str:
    n = len(report.receipts)
    failed = report.count("fail")
    parts = []
    if failed or not report.orphans:
        checks = ", ".join(f"{k}: {v}" for k, v in report.failed_checks.items())
        parts.append(
            f"{failed} of {n} receipt{'s' if n != 1 else ''} failed verification ({checks})"
        )
    if report.strict and report.orphans:
        k = len(report.orphans)
        parts.append(f"{k} answer{'s' if k != 1 else ''} without a receipt (--strict)")
    return "; ".join(parts)


VerifyPaths = Annotated[
    list[str] | None,
    typer.Argument(
        help="Receipts, answer files or folders (searched recursively for "
        "*.receipt.json), inside the repository. Default: the configured "
        "output folder (reviews).",
        show_default=False,
    ),
]
StrictOpt = Annotated[
    bool,
    typer.Option(help="A missing or changed context file fails (default: a warning)."),
]
JobsOpt = Annotated[
    int | None,
    typer.Option(
        min=1,
        help="Worker processes (default: several for thousands of receipts, else 1).",
        show_default=False,
    ),
]
RequireSignatureOpt = Annotated[
    bool,
    typer.Option(
        OPTIONS["require_signature"].long_flag, help=OPTIONS["require_signature"].help_text()
    ),
]


@app.command(epilog=example("deepseek-review verify --strict reviews"))
def verify(
    paths: VerifyPaths = None,
    repo_root: RepoRootOpt = None,
    strict: StrictOpt = False,
    as_json: JsonOpt = False,
    jobs: JobsOpt = None,
    allowed_signers: AllowedSignersOpt = None,
    require_signature: RequireSignatureOpt = False,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Check receipts: schema, answer hash, chain, context files, the exact prompt, and signatures.

    Split records (<stem>.split.json, from run --split) named or in the folders are checked
    too: the parts' receipts verify and cover exactly the plan's files, and the synthesis's
    context is exactly the parts' answers.

    Exit 0 when every receipt passes (warnings allowed unless --strict), 9 when any fails
    (or a split record is malformed or does not check out), 3 when a PATH does not exist,
    2 on a usage error.
    """
    from deepseek_review import api
    from deepseek_review.git.runner import (
        find_repo_root,  # api.repo_root's module would load logging
    )
    from deepseek_review.records.split_record import SPLIT_SUFFIX

    root = find_repo_root(repo_root)
    typed = [typed_path(root, p) for p in paths or []]
    receipts = [p for p in typed if not p.endswith(SPLIT_SUFFIX)]
    if receipts or not typed:
        report = api.verify(
            receipts,
            root=root,
            strict=strict,
            jobs=jobs,
            allowed_signers=allowed_signers,
            require_signature=require_signature or None,
        )
        _render(report, as_json)
        if not report.ok:
            raise VerificationFailed(_failure(report))
    _render_splits(api.verify_splits(typed, root=root, strict=strict))


def _render_splits(splits: "list[SplitReport]") -> None:
    """One line per split record; the first that does not check out fails the command."""
    lines = []
    for s in splits:
        if s.ok and not STATE.quiet:
            lines.append(f"OK   {s.path} ({s.summary})")
        elif not s.ok:
            lines.append(f"FAIL {s.path}: {'; '.join(s.problems)}")
    write_lines(sys.stderr, lines)
    failed = [s for s in splits if not s.ok]
    if failed:
        first = failed[0]
        raise VerificationFailed(f"{first.path}: {first.problems[0]}")
