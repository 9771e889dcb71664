"""``sign``: sign the segments that exist; ``attest``: the predicate for CI attestations."""

import sys
from collections import Counter
from pathlib import Path
from typing import Annotated

import typer

from deepseek_review.cli.app import (
    AllowedSignersOpt,
    JsonOpt,
    QuietOpt,
    RepoRootOpt,
    TrustedRevOpt,
    VerboseOpt,
    app,
    example,
    json_out,
    typed_path,
    write_lines,
)
from deepseek_review.errors import VerificationFailed
from deepseek_review.options.table import OPTIONS
from deepseek_review.util.textsafe import escape

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
    """Sign every segment that verifies and has no signature yet: reviews written without --sign,
    or a run stopped between a receipt and its signature.

    Exit 0 when every segment is signed, 9 when some fail verification (left unsigned),
    2 when the key cannot sign.
    """
    from deepseek_review import api

    root = api.repo_root(repo_root)
    typed = [typed_path(root, p) for p in paths or []]
    report = api.sign(typed, root=root, signing_key=signing_key)
    lines = [f"signed {p}" for p in report.signed]
    lines += [
        f"FAIL {p}: not signed: "
        + (why if why.startswith("set aside") else f"it fails verification ({why})")
        for p, why in report.refused
    ]
    lines.append(
        f"deepseek-review: sign: {len(report.signed)} signed, {len(report.already)} already "
        f"signed, {len(report.refused)} refused"
    )
    write_lines(sys.stderr, lines)
    if as_json:
        json_out(report.to_json())
    if report.refused:
        n = len(report.refused)
        aside = sum(1 for _, why in report.refused if why.startswith("set aside"))
        if aside == 0:
            what = "segments not signed: they fail" if n != 1 else "segment not signed: it fails"
            raise VerificationFailed(f"{n} {what} verification")
        raise VerificationFailed(
            f"{n} segment{'s' if n != 1 else ''} not signed: {n - aside} fail verification, "
            f"{aside} set aside by the trust rule"
        )


@app.command(epilog=example("deepseek-review attest reviews --output review-predicate.json"))
def attest(
    paths: SegmentPaths = None,
    output: Annotated[
        str,
        typer.Option(help="Write the predicate to this file (never replaced).", show_default=False),
    ] = ...,  # type: ignore[assignment]
    repo_root: RepoRootOpt = None,
    trusted_rev: TrustedRevOpt = None,
    allowed_signers: AllowedSignersOpt = None,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Write the predicate of a GitHub artifact attestation (actions/attest's predicate-path) over
    the reviews; print its predicate type (actions/attest's predicate-type).

    Exit 0 when written, 9 when a segment fails verification (nothing written), 3 when
    there are no receipts or the trust rule admits none of them (see the trust model,
    docs/explanation/trust-model.md: segments a commit brought need --trusted-rev or a
    signature).
    """
    from deepseek_review import api
    from deepseek_review.records.canonical import pretty_json
    from deepseek_review.records.storage import write_output
    from deepseek_review.trust.attest import ATTEST_PREDICATE_TYPE

    root = api.repo_root(repo_root)
    typed = [typed_path(root, p) for p in paths or []]
    predicate = api.attest(
        typed, root=root, trusted_rev=trusted_rev, allowed_signers=allowed_signers
    )
    write_output(Path(output), pretty_json(predicate), shown=output)
    from deepseek_review.util.textsafe import plural

    n = plural(len(predicate["reviews"]), "segment")
    lines = [f"deepseek-review: attest: wrote {output} ({n})"]
    left = Counter(x["reason"] for x in predicate.get("left_out", []))
    if left:
        why = "; ".join(f"{escape(reason)} ({k})" for reason, k in left.most_common())
        lines.append(
            f"deepseek-review: attest: left out {plural(left.total(), 'segment')}, listed "
            f"under left_out: {why}"
        )
    write_lines(sys.stderr, lines)
    print(ATTEST_PREDICATE_TYPE)
