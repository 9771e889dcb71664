"""The console script as a user runs it, in its own process: ``--version``, warnings worded
as the command line words them, a run's output and files complete; the commands --help lists."""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from deepseek_review import api
from deepseek_review.api.views import Configuration, ShownChain

_MAIN = "from deepseek_review.__main__ import main; main()"


def _console(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``deepseek-review ARGS`` through the console script's own function."""
    code = "import sys; sys.argv[0] = 'deepseek-review'; " + _MAIN
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "80"},
    )


def test_version_prints_the_version_line_without_loading_the_command_line(repo: Path) -> None:
    """``--version`` is answered before typer is imported: it must stay within 0.1 s."""
    from deepseek_review._version import __version__

    code = (
        "import sys; sys.argv[1:] = ['--version']; from deepseek_review.__main__ import main; "
        "main(); print('typer' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=repo, capture_output=True, text=True)
    assert (proc.returncode, proc.stdout) == (0, f"deepseek-review {__version__}\nFalse\n")


def test_version_into_a_closed_pipe_exits_0_quietly(repo: Path) -> None:
    read, write = os.pipe()
    os.close(read)  # the reader left before a byte was written
    try:
        proc = subprocess.run(
            [sys.executable, "-c", "import sys; sys.argv[1:] = ['--version']; " + _MAIN],
            cwd=repo,
            stdout=write,
            stderr=subprocess.PIPE,
            timeout=60,
        )
    finally:
        os.close(write)
    assert (proc.returncode, proc.stderr) == (0, b"")


def test_a_warning_logged_after_start_up_is_printed_as_the_command_line_words_it(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_REVIEW_MAX_TOKEN", "5")
    proc = _console(repo, "config")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr.startswith(
        "deepseek-review: DEEPSEEK_REVIEW_MAX_TOKEN is not a setting of deepseek-review; "
        "ignored (did you mean DEEPSEEK_REVIEW_MAX_TOKENS?)\n"
    )


def test_a_successful_run_ends_with_its_output_flushed_and_its_files_complete(
    repo: Path, simulator: object
) -> None:
    """Everything the console script printed arrives, and every file it wrote is whole."""
    url = simulator.base_url  # type: ignore[attr-defined]
    args = ["run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", url, "--json"]
    proc = _console(repo, *args)
    assert proc.returncode == 0, proc.stderr
    segment = json.loads(proc.stdout)["segments"][0]
    receipt = json.loads((repo / segment["receipt_path"]).read_text(encoding="utf-8"))
    answer = (repo / segment["answer_path"]).read_bytes()

    assert receipt["answer_sha256"] == "sha256:" + hashlib.sha256(answer).hexdigest()
    assert proc.stderr.startswith("deepseek-review: sending 1 context file ")
    assert proc.stderr.endswith("\n")


def test_the_library_still_exports_the_config_and_show_results(repo: Path) -> None:
    assert api.Configuration is Configuration
    assert api.ShownChain is ShownChain
    assert isinstance(api.configuration(repo_root=repo, env={}), Configuration)


#: The commands, in the order ``--help`` lists them (a review's own three together).
COMMANDS = [
    "run", "continue", "show", "verify", "findings", "batch", "sign", "attest", "stats", "config",
    "simulator",
]  # fmt: skip


def test_help_lists_every_command_module_s_commands_in_order(repo: Path) -> None:
    """Each command module registers its commands when the command line is imported; a
    module left out of ``deepseek_review.cli`` would have commands nobody could run."""
    from importlib import import_module

    import deepseek_review.cli

    folder = Path(deepseek_review.cli.__file__ or "").parent
    modules = {import_module(f"deepseek_review.cli.{p.stem}") for p in folder.glob("*_cmd*.py")}
    proc = _console(repo, "--help")
    section = proc.stdout.split("Commands:\n")[1].split("\n\n")[0]
    listed = re.findall(r"^  (\S+)\s", section, re.M)
    assert (proc.returncode, listed) == (0, COMMANDS)
    assert {m.__name__ for m in modules} == {
        f"deepseek_review.cli.{name}" for name in deepseek_review.cli.COMMAND_MODULES
    }
