"""A single-valued option given twice is refused: ``--endpoint A --endpoint B`` once ran
everything against B without a word. Repeatable options and switches are not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import typer

from deepseek_review.cli.app import app
from deepseek_review.cli.parsing import Flag, subcommand_flags
from deepseek_review.cli.repeats import repeated_flag
from deepseek_review.options.table import in_scope
from deepseek_review.testing.simulator import Simulator

ERROR = "deepseek-review: error: "


def refused_naming(r: Any, flag: str) -> None:
    assert r.code == 2, r.out + r.err
    lines = [line for line in r.err.splitlines() if line.startswith(ERROR)]
    assert len(lines) == 1, r.err
    assert lines[0].startswith(f"{ERROR}{flag} was given more than once; it takes one value")
    assert "Traceback" not in r.err


@pytest.mark.parametrize(
    ("repeat", "flag"),
    [
        (["--endpoint", "{url}", "--endpoint", "http://127.0.0.1:9/"], "--endpoint"),
        (["--endpoint={url}", "--endpoint", "{url}"], "--endpoint"),
        (["--endpoint", "{url}", "--model", "m", "--endpoint={url}"], "--endpoint"),
        (["--endpoint", "{url}", "--max-tokens", "10", "--max-tokens", "20"], "--max-tokens"),
        (["--endpoint", "{url}", "-p", "again"], "--prompt"),
        (["--endpoint", "{url}", "--output-dir", "a", "--output-dir", "b", "--json"],
         "--output-dir"),
    ],
    ids=["endpoint", "endpoint=", "endpoint-mixed", "max-tokens", "prompt-short", "json"],
)  # fmt: skip
def test_run_refuses_a_single_valued_option_given_twice_and_sends_nothing(
    repo: Path, cli: Any, simulator: Simulator, repeat: list[str], flag: str
) -> None:
    args = [a.replace("{url}", simulator.base_url) for a in repeat]
    r = cli("run", "-c", "docs/spec.md", "-p", "Check.", *args)
    refused_naming(r, flag)
    assert simulator.chat_requests() == []
    assert not (repo / "reviews").exists()


@pytest.mark.parametrize(
    ("command", "flag"),
    [
        (["batch", "reviews.toml", "--jobs", "2", "-j3"], "--jobs"),
        (["continue", "x.md", "--endpoint", "a", "--endpoint", "b"], "--endpoint"),
        (["findings", "--format", "sarif", "-f", "json"], "--format"),
        (["findings", "-o", "a.json", "--output=b.json"], "--output"),
        (["verify", "--allowed-signers", "a", "--allowed-signers", "b"], "--allowed-signers"),
    ],
)
def test_every_command_refuses_a_repeated_single_valued_option(
    repo: Path, cli: Any, command: list[str], flag: str
) -> None:
    refused_naming(cli(*command), flag)


@pytest.mark.parametrize(
    "extra",
    [
        ["-c", "src/pkg/mean.py"],  # repeatable
        ["--stream", "--no-stream"],  # a switch: the last one counts, as in any CLI
        ["-v", "-v"],
        ["--template", "--template"],  # the value of --template happens to look like a flag
    ],
    ids=["repeatable", "switch", "verbose", "value-like-a-flag"],
)
def test_repeatable_options_switches_and_values_are_not_repetitions(
    repo: Path, cli: Any, extra: list[str]
) -> None:
    r = cli("run", "-c", "docs/spec.md", "-p", "Check.", "--dry-run", *extra)
    assert "was given more than once" not in r.err, r.err


def test_a_prompt_that_looks_like_a_flag_is_a_value(repo: Path, cli: Any) -> None:
    r = cli("run", "-c", "docs/spec.md", "-p", "--endpoint", "--endpoint", "http://x",
            "--dry-run", "--json")  # fmt: skip
    assert r.code == 0, r.err
    assert r.json()["endpoint"].startswith("http://x")


def _flags(command: str) -> list[Flag]:
    """The options of ``command`` as the parser view reads them from typer."""
    group = typer.main.get_command(app)
    flags = subcommand_flags(typer.Context(group), command)
    assert flags is not None
    return flags


def test_the_parser_view_reads_each_option_s_spellings_and_arity_from_typer() -> None:
    """cli/parsing.py reads typer's parser objects, which typer does not publish: if a
    release moves them, this fails rather than repeated options silently passing."""
    flags = {f.name: f for f in _flags("run")}
    assert set(flags) >= {o.key for o in in_scope("run") if not o.argument}
    endpoint = {f.name: f for f in _flags("continue")}["endpoint"]
    context, stream = flags["context"], flags["stream"]
    assert (endpoint.takes_value, endpoint.repeatable) == (True, False)
    assert flags["endpoint"].repeatable  # run --split spreads its parts over several
    assert "--endpoint" in endpoint.spellings
    assert (context.takes_value, context.repeatable) == (True, True)
    assert {"-c", "--context"} <= set(context.spellings)
    assert (stream.takes_value, set(stream.spellings)) == (False, {"--stream", "--no-stream"})
    assert subcommand_flags(typer.Context(typer.main.get_command(app)), "nosuch") is None


def test_words_after_a_double_dash_are_not_options() -> None:
    run = _flags("run")
    assert repeated_flag(run, ["--model", "a", "--", "--model", "b"]) is None
    assert repeated_flag(run, ["-pfirst", "-p", "second"]) == "--prompt"
    assert repeated_flag(run, ["-vq", "-c", "a", "-c", "b", "-p", "-p"]) is None
