"""``findings``: a review's findings exported for CI (JSON, SARIF, rdjson, GitHub, Markdown).

``--format``, ``-o``, ``--fail-on``, ``--baseline`` and ``--only-new`` are this command's own
flags, not settings: they say what one invocation writes, so they are not in the option table
(no config key, no environment variable).
"""

import os
import sys
from typing import TYPE_CHECKING, Annotated

import typer

from deepseek_review.cli.app import (
    AllowedSignersOpt,
    QuietOpt,
    RepoRootOpt,
    TrustedRevOpt,
    VerboseOpt,
    app,
    example,
    typed_path,
)
from deepseek_review.cli.table import choice_settings
from deepseek_review.util.logs import log
from deepseek_review.util.textsafe import escape, plural

if TYPE_CHECKING:
    from pathlib import Path

    from deepseek_review.trust.findings import FindingsExport

#: The export formats (``finding.export.FORMATS``'s keys, which a test keeps equal), here so
#: that the help and the shell's completion do not import the exporters.
FORMATS = ("json", "sarif", "rdjson", "rdjsonl", "github", "markdown",
           "codequality", "patch")  # fmt: skip
#: The severities (``finding.model.SEVERITIES``, kept equal by a test), for ``--fail-on``.
SEVERITIES = ("critical", "major", "minor", "nit")


PathsArg = Annotated[
    list[str] | None,
    typer.Argument(
        help="Reviews (any segment of a chain: receipt or answer) or folders, merged and "
        "deduplicated. Default: the output folder.",
        show_default=False,
    ),
]
FormatOpt = Annotated[
    str,
    typer.Option(
        "--format",
        "-f",
        help=f"One of {', '.join(FORMATS)}.",
        **choice_settings(FORMATS),
    ),
]
OutputOpt = Annotated[
    str | None,
    typer.Option(
        "--output", "-o", help="Write here (replaced) instead of stdout.", show_default=False
    ),
]
FailOnOpt = Annotated[
    str | None,
    typer.Option(
        "--fail-on",
        help="Exit 13 when a finding is at or above this severity (critical, major, minor, "
        "nit), or when a review under the paths was set aside or could not be read whole.",
        show_default=False,
        **choice_settings(SEVERITIES),
    ),
]


BaselineOpt = Annotated[
    str | None,
    typer.Option(
        "--baseline",
        help="Compare with an earlier run: its SARIF or JSON export (a file from your CI, not "
        "the repository under review), or a folder of reviews read through the trust rule. "
        "Each finding is marked new or unchanged (by fingerprint: path, quoted code, "
        "category; not line numbers), and the baseline's findings gone now are listed as "
        "absent (never gated).",
        show_default=False,
    ),
]
OnlyNewOpt = Annotated[
    bool,
    typer.Option(
        "--only-new",
        help="Keep only the findings new against --baseline; --fail-on then counts only them.",
    ),
]
MinSeverityOpt = Annotated[
    str | None,
    typer.Option(
        "--min-severity",
        help="Leave out of the export the findings below this severity (they still count for "
        "--fail-on); the export says how many.",
        show_default=False,
        **choice_settings(SEVERITIES),
    ),
]
MaxFindingsOpt = Annotated[
    int | None,
    typer.Option(
        "--max-findings",
        help="Export only the N most severe findings (the others still count for --fail-on); "
        "the export says how many were left out.",
        min=1,
        show_default=False,
    ),
]


@app.command(epilog=example("deepseek-review findings reviews --format sarif -o review.sarif"))
def findings(
    paths: PathsArg = None,
    fmt: FormatOpt = "json",
    output: OutputOpt = None,
    fail_on: FailOnOpt = None,
    baseline: BaselineOpt = None,
    only_new: OnlyNewOpt = False,
    min_severity: MinSeverityOpt = None,
    max_findings: MaxFindingsOpt = None,
    repo_root: RepoRootOpt = None,
    trusted_rev: TrustedRevOpt = None,
    allowed_signers: AllowedSignersOpt = None,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Export the findings block of reviews made with a findings-asking template."""
    from deepseek_review import api
    from deepseek_review.finding.export import check_choice

    check_choice(min_severity, SEVERITIES, "--min-severity")  # named as the user wrote it
    root = api.repo_root(repo_root)
    result = api.findings(
        [typed_path(root, p) for p in paths or ()],
        format=fmt,
        output=output,
        fail_on=fail_on,
        repo_root=root,
        trusted_rev=trusted_rev,
        allowed_signers=allowed_signers,
        baseline=None if baseline is None else _baseline_path(root, baseline),
        only_new=only_new,
        min_severity=min_severity,
        max_findings=max_findings,
    )
    _render(result, to_stdout=output is None)
    result.raise_for_gate()


def _baseline_path(root: "Path", typed: str) -> str:
    """A folder as the core takes paths (relative to the root); a file as typed, absolute
    (an export of an earlier run may lie anywhere)."""
    if os.path.isdir(typed):
        return typed_path(root, typed)
    return os.path.abspath(typed)


def _render(result: "FindingsExport", *, to_stdout: bool) -> None:
    """Problems and the summary go to the log; the export itself to stdout unless ``-o``."""
    for path, why in result.collected.problems:
        log.warning("%s: %s", escape(path), escape(why))
    quiet = len(result.collected.not_asked)
    if quiet:
        log.info(
            "%s made with the default template, which asks for no findings: not read "
            "(--template code-review, spec-review or diff-review asks for them)",
            plural(quiet, "review"),
        )
    outside = result.collected.outside()
    if outside:
        log.warning(
            "%d finding(s) name a location outside the repository (first: %s); "
            "none is exported on it",
            len(outside),
            escape(repr(outside[0].finding.path)),
        )
    note = result.admission.note()
    if note is not None:
        log.warning("%s", escape(note))
    if result.format == "patch":
        from deepseek_review.finding.patch import plan

        offered = plan(result.collected)
        for said in offered.notes():
            log.warning("%s", escape(said))
        if not offered.fixes:
            log.info("no suggestion to offer as a change: the patch is empty")
    if to_stdout:
        sys.stdout.write(result.text)
        sys.stdout.flush()
    absent = len(result.collected.absent)
    if result.collected.baselined:
        states = [a.baseline for a in result.collected.findings]
        log.info(
            "against the baseline: %d new, %d unchanged, %d absent%s",
            states.count("new"),
            states.count("unchanged") + result.collected.left_out.get("unchanged_in_baseline", 0),
            absent,
            " (only the new ones kept)" if result.only_new else "",
        )
    counts = result.collected.counts()
    categories = result.collected.categories()
    log.info(
        "%d finding(s) from %d review(s): %s%s",
        len(result.collected.findings),
        len(result.collected.reviews),
        ", ".join(f"{n} {s}" for s, n in counts.items()),
        f" (by category: {', '.join(f'{escape(c)} {n}' for c, n in categories.items())})"
        if categories
        else "",
    )
    if result.collected.left_out:
        from deepseek_review.finding.markdown import left_out_text

        log.info("left out of the export on request: %s", left_out_text(result.collected.left_out))
