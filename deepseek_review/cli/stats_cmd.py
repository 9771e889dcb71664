"""``stats``: tokens and review counts per model and per month, from the receipts."""

import sys
from typing import Annotated, Any

import typer

from deepseek_review.cli.app import (
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
from deepseek_review.util.logs import log
from deepseek_review.util.textsafe import escape


@app.command(epilog=example("deepseek-review stats reviews --json"))
def stats(
    paths: Annotated[
        list[str] | None,
        typer.Argument(
            help="Receipts or folders (searched recursively). Default: the output folder.",
            show_default=False,
        ),
    ] = None,
    repo_root: RepoRootOpt = None,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Count reviews, segments and tokens per model and per month, read from the receipts."""
    from deepseek_review import api

    root = api.repo_root(repo_root)
    result = api.stats([typed_path(root, p) for p in paths or ()], repo_root=root)
    if result.invalid:
        log.warning(
            "%d receipt(s) do not validate and are not counted (run `deepseek-review verify`)",
            len(result.invalid),
        )
    if result.total.without_usage:
        log.warning(
            "%d segment(s) have no token usage (the server reported none): their tokens are "
            "unknown, not counted; a total marked +? is at least that much",
            result.total.without_usage,
        )
    if as_json:
        json_out(result.to_json())
        return
    write_lines(sys.stdout, [*_table(result), "", *_server_table(result)])
    note = _price_note(result)
    for line in [*_beyond(result.total.extra.to_json()), *([note] if note else [])]:
        log.info("%s", line)  # on stderr: stdout is the table


def _table(result: Any) -> list[str]:
    """The tally per model and month, then the total, in aligned columns."""
    head = f"{'model':<28} {'month':<8} {'reviews':>8} {'segments':>9} {'prompt':>10} "
    lines = [head + f"{'completion':>11} {'total':>11}"]
    rows = [(m, mo, t) for (m, mo), t in sorted(result.by_model_month.items())]
    for model, month, t in [*rows, ("total", "", result.total)]:
        p, c, total = (_tokens(t, t.prompt_tokens), _tokens(t, t.completion_tokens),
                       _tokens(t, t.total_tokens))  # fmt: skip
        lines.append(  # the model name is the receipt's: escaped before it is padded
            f"{escape(model):<28} {month:<8} {t.reviews:>8} {t.segments:>9} {p:>10} {c:>11} "
            f"{total:>11}"
        )
    return lines


def _server_table(result: Any) -> list[str]:
    """Per model and server: prompt tokens, those the server's cache served ("unknown" where
    it reports none), answer and reasoning tokens, and the cost where a price applies."""
    head = f"{'model':<28} {'server':<24} {'prompt':>10} {'cached':>10} {'answer':>10} "
    lines = [head + f"{'reasoning':>10} {'cost':>10}"]
    rows = [(m, s, t) for (m, s), t in sorted(result.by_model_server.items())]
    for model, server, t in [*rows, ("total", "", result.total)]:
        e = t.extra
        if t.cached_prompt_tokens is None:
            cached = "unknown"
        else:  # ``N+?`` when some segments' servers did not say
            cached = f"{e.cache_hit_tokens}{'+?' if e.cache_reported < t.segments else ''}"
        cost = f"{e.cost:.4f}" if e.priced else "-"
        lines.append(  # names from the receipts: escaped before they are padded
            f"{escape(model):<28} {escape(server):<24} {_tokens(t, t.prompt_tokens):>10} "
            f"{cached:>10} {_tokens(t, t.completion_tokens):>10} {e.reasoning_tokens:>10} "
            f"{cost + ('+?' if e.priced and e.unpriced else ''):>10}"
        )
    return lines


def _beyond(extra: dict[str, Any]) -> list[str]:
    """What the request records add (total), a line for each figure that is known."""
    lines = [f"reasoning tokens: {extra['reasoning_tokens']}"] if extra["reasoning_tokens"] else []
    if extra["cache_hit_share"] is not None:
        share = extra["cache_hit_share"]
        lines.append(f"prompt-cache hits: {share:.1%} of the prompts whose server reports them")
    elif extra["prompt_cache_hit_tokens"] is None:
        lines.append("prompt-cache hits: unknown (no server reported its cache use)")
    if extra["tokens_per_second"] is not None:
        lines.append(f"speed: {extra['tokens_per_second']:g} completion tokens per second")
    if extra["cost"] is not None:
        unpriced = extra["segments_without_price"]
        more = f" (+ {unpriced} segment(s) without a price)" if unpriced else ""
        lines.append(f"cost: {extra['cost']:g}{more}")
    return lines


def _price_note(result: Any) -> str | None:
    """Which costs are counted in the bundled price list, and its date."""
    listed = result.price_list()
    if listed is None:
        return None
    return (
        f"costs without a price in the prices setting are at the bundled list's "
        f"{listed['currency']} prices, checked {listed['checked']} ({listed['source']})"
    )


def _tokens(tally: Any, count: int) -> str:
    """A token sum for the table: "unknown" when no segment reported usage, ``N+?`` when
    some did not (so a partial sum never passes for the whole)."""
    if not tally.usage_known:
        return "unknown"
    return f"{count}+?" if tally.without_usage else str(count)
