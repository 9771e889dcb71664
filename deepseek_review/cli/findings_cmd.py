"""``findings``: a review's findings exported for CI (JSON, SARIF, rdjson, GitHub, Markdown).

``--format``, ``-o`` and ``--fail-on`` are this command's own flags, not settings: they say
what one invocation writes, so they are not in the option table (no config key, no
environment variable).
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from ..textsafe import escape
from .app import QuietOpt, RepoRootOpt, VerboseOpt, app, example, log, typed_path

FORMATS = "json, sarif, rdjson, rdjsonl, github, markdown"


@app.command(epilog=example("deepseek-review findings reviews --format sarif -o review.sarif"))
def findings(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            help="Reviews (any segment of a chain: receipt or answer) or folders, merged and "
            "deduplicated. Default: the output folder.",
            show_default=False,
        ),
    ] = None,
    fmt: Annotated[str, typer.Option("--format", "-f", help=f"One of {FORMATS}.")] = "json",
    output: Annotated[
        str | None,
        typer.Option(
            "--output", "-o", help="Write here (replaced) instead of stdout.", show_default=False
        ),
    ] = None,
    fail_on: Annotated[
        str | None,
        typer.Option(
            "--fail-on",
            help="Exit 13 when a finding is at or above this severity "
            "(critical, major, minor, nit).",
            show_default=False,
        ),
    ] = None,
    repo_root: RepoRootOpt = None,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Export the findings block of reviews made with a findings-asking template."""
    from .. import api

    root = api.repo_root(repo_root)
    result = api.findings(
        [typed_path(root, p) for p in paths or ()],
        format=fmt,
        output=output,
        fail_on=fail_on,
        repo_root=root,
    )
    for path, why in result.collected.problems:
        log.warning("%s: %s", escape(path), escape(why))
    if output is None:
        sys.stdout.write(result.text)
        sys.stdout.flush()
    counts = result.collected.counts()
    log.info(
        "%d finding(s) from %d review(s): %s",
        len(result.collected.findings),
        len(result.collected.reviews),
        ", ".join(f"{n} {s}" for s, n in counts.items()),
    )
    result.raise_for_gate()
