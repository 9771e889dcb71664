"""A single-valued option given twice is refused: ``--endpoint A --endpoint B`` once ran
everything against B without a word. Repeatable options and switches are not."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from deepseek_review.simulator import Simulator

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


def test_words_after_a_double_dash_are_not_options() -> None:
    import typer
    from typer import _click

    from deepseek_review.cli.app import app
    from deepseek_review.cli.commands import LazyGroup
    from deepseek_review.cli.repeats import repeated_flag

    group = typer.main.get_command(app)
    assert isinstance(group, LazyGroup)
    command = group.get_command(_click.Context(group), "run")
    assert command is not None
    assert repeated_flag(command, ["--endpoint", "a", "--", "--endpoint", "b"]) is None
    assert repeated_flag(command, ["-pfirst", "-p", "second"]) == "--prompt"
    assert repeated_flag(command, ["-vq", "-c", "a", "-c", "b", "-p", "-p"]) is None
