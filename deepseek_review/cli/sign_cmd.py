"""``sign``: sign the segments that exist; ``attest``: the predicate for CI attestations."""

import sys
from pathlib import Path
from typing import Annotated

import typer

from ..errors import VerificationFailed
from ..options import OPTIONS
from .app import (
    JsonOpt,
    QuietOpt,
    RepoRootOpt,
    VerboseOpt,
    _json_out,
    _write_lines,
    app,
    example,
    typed_path,
)

SegmentPaths = Annotated[
    list[str] | None,
    typer.Argument(
        help="Receipts, answer files or folders, inside the repository. Default: the "
        "configured output folder (reviews).",
        show_default=False,
    ),
]


@app.command(epilog=example("deepseek-review sign --signing-key ~/.ssh/id_ed25519 reviews"))
def sign(
    paths: SegmentPaths = None,
    repo_root: RepoRootOpt = None,
    signing_key: Annotated[
        str | None, typer.Option(help=OPTIONS["signing_key"].help_text(), show_default=False)
    ] = None,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    # Its help: its summary in commands.COMMANDS, then this docstring.
    """Exit 0 when every segment is signed, 9 when some fail verification (left unsigned),
    2 when the key cannot sign.
    """
    from .. import api

    root = api.repo_root(repo_root)
    typed = [typed_path(root, p) for p in paths or []]
    report = api.sign(typed, root=root, signing_key=signing_key)
    lines = [f"signed {p}" for p in report.signed]
    lines += [f"FAIL {p}: not signed: it fails verification ({why})" for p, why in report.refused]
    lines.append(
        f"deepseek-review: sign: {len(report.signed)} signed, {len(report.already)} already "
        f"signed, {len(report.refused)} refused"
    )
    _write_lines(sys.stderr, lines)
    if as_json:
        _json_out(report.to_json())
    if report.refused:
        n = len(report.refused)
        what = "segments not signed: they fail" if n != 1 else "segment not signed: it fails"
        raise VerificationFailed(f"{n} {what} verification")


@app.command(epilog=example("deepseek-review attest reviews --output review-predicate.json"))
def attest(
    paths: SegmentPaths = None,
    output: Annotated[
        str,
        typer.Option(help="Write the predicate to this file (never replaced).", show_default=False),
    ] = ...,  # type: ignore[assignment]
    repo_root: RepoRootOpt = None,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    # Its help: its summary in commands.COMMANDS, then this docstring.
    """Exit 0 when written, 9 when a segment fails verification (nothing written), 3 when
    there are no receipts.
    """
    from .. import api
    from ..records.canonical import pretty_json
    from ..signing.attest import ATTEST_PREDICATE_TYPE
    from ..storage import write_output

    root = api.repo_root(repo_root)
    typed = [typed_path(root, p) for p in paths or []]
    predicate = api.attest(typed, root=root)
    write_output(Path(output), pretty_json(predicate), shown=output)
    from ..context_types import plural

    n = plural(len(predicate["reviews"]), "segment")
    _write_lines(sys.stderr, [f"deepseek-review: attest: wrote {output} ({n})"])
    print(ATTEST_PREDICATE_TYPE)
