"""Start-up: commands that send nothing load no HTTP stack, and a run ends cleanly.

Each command runs as a user runs it, in its own process, through the console script's own
function; the modules loaded are listed as the process ends (also when it ends by
``os._exit``), so a module-level import that creeps back fails here.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import CliResult

#: The HTTP stack: nothing of it is needed by a command that sends no request.
HTTP_STACK = ("httpx", "httpcore", "h11", "ssl", "tenacity")
#: The console script, with the loaded modules written to stderr as the process ends.
_WRAPPER = """
import os, sys
def report():
    import gc
    sys.stderr.write("\\nMODULES " + " ".join(sorted(sys.modules)) + "\\n")
    sys.stderr.write(f"COLLECTOR {gc.isenabled()}\\n")
    sys.stderr.flush()
real_exit = os._exit
def exit_now(code):
    report()
    real_exit(code)
os._exit = exit_now
sys.argv[0] = "deepseek-review"
from deepseek_review.__main__ import main
try:
    main()
finally:
    report()
"""


def _spawn(repo: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """The command's process, and the full name of every module it had loaded at its end."""
    proc = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "COLUMNS": "80"},
    )
    listed = re.findall(r"^MODULES (.*)$", proc.stderr, re.M)
    assert len(listed) == 1, proc.stderr[-2000:]
    return proc, set(listed[0].split())


def _top(modules: set[str]) -> set[str]:
    return {m.split(".")[0] for m in modules}


def _reviewed(repo: Path, cli: Callable[..., CliResult], simulator: object) -> str:
    """One review written into ``reviews/``; its answer's path."""
    url = simulator.base_url  # type: ignore[attr-defined]
    res = cli("run", "-c", "docs/spec.md", "-p", "Check the mean.", "--endpoint", url, "--json")
    assert res.code == 0, res.err
    return str(res.json()["segments"][0]["answer_path"])


def _no_http(proc: subprocess.CompletedProcess[str], modules: set[str]) -> None:
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(_top(modules).intersection(HTTP_STACK)) == []


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        ["--help"],
        ["run", "--help"],
        ["config"],
        # A server that is not Ollama: a dry run against Ollama asks its metadata endpoints,
        # as the run does before sending (tests/test_dry_run_preflight.py).
        ["run", "--dry-run", "-c", "docs/spec.md", "-p", "Check the mean.", "--server", "vllm"],
    ],
    ids=["version", "help", "run-help", "config", "dry-run"],
)
def test_a_command_that_sends_nothing_imports_no_http_stack(repo: Path, args: list[str]) -> None:
    _no_http(*_spawn(repo, *args))


@pytest.mark.parametrize(
    "command",
    [
        ["show", "{answer}"],
        ["verify", "reviews"],
        ["stats", "reviews"],
        ["findings", "reviews"],
    ],
    ids=["show", "verify", "stats", "findings"],
)
def test_reading_reviews_imports_no_http_stack(
    repo: Path, cli: Callable[..., CliResult], simulator: object, command: list[str]
) -> None:
    answer = _reviewed(repo, cli, simulator)
    _no_http(*_spawn(repo, *[a.format(answer=answer) for a in command]))


def test_version_prints_the_version_without_the_command_line_stack(repo: Path) -> None:
    from deepseek_review import __version__

    proc, modules = _spawn(repo, "--version")
    assert (proc.returncode, proc.stdout) == (0, f"deepseek-review {__version__}\n")
    assert sorted({"typer", "logging"} & _top(modules)) == []


@pytest.mark.parametrize("args", [["--help"], ["-q", "verify", "empty"]], ids=["help", "verify"])
def test_a_command_whose_modules_never_log_does_not_import_logging(
    repo: Path, args: list[str]
) -> None:
    (repo / "empty").mkdir()
    proc, modules = _spawn(repo, *args)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "logging" not in _top(modules)


def test_a_warning_logged_after_start_up_is_printed_as_the_command_line_words_it(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_REVIEW_MAX_TOKEN", "5")
    proc, _ = _spawn(repo, "config")
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stderr.startswith(
        "deepseek-review: DEEPSEEK_REVIEW_MAX_TOKEN is not a setting of deepseek-review; "
        "ignored (did you mean DEEPSEEK_REVIEW_MAX_TOKENS?)\n"
    )


def test_run_imports_only_the_module_of_its_command(repo: Path, simulator: object) -> None:
    url = simulator.base_url  # type: ignore[attr-defined]
    proc, modules = _spawn(
        repo, "-q", "run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", url
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    commands = {m.rsplit(".", 1)[1] for m in modules if m.startswith("deepseek_review.cli.")}
    assert "review_cmds" in commands
    assert commands.isdisjoint(
        {
            "batch_cmd",
            "config_cmd",
            "findings_cmd",
            "sign_cmd",
            "simulator_cmd",
            "stats_cmd",
            "verify_cmd",
        }
    )


def test_a_successful_run_ends_with_its_output_flushed_and_its_files_complete(
    repo: Path, simulator: object
) -> None:
    """The console script skips the interpreter's teardown after success: everything it
    printed still arrives, and every file it wrote is whole."""
    url = simulator.base_url  # type: ignore[attr-defined]
    args = ["run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", url, "--json"]
    proc = subprocess.run(
        [sys.executable, "-m", "deepseek_review", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    segment = json.loads(proc.stdout)["segments"][0]
    receipt = json.loads((repo / segment["receipt_path"]).read_text(encoding="utf-8"))
    answer = (repo / segment["answer_path"]).read_bytes()

    assert receipt["answer_sha256"] == "sha256:" + hashlib.sha256(answer).hexdigest()
    assert proc.stderr.startswith("deepseek-review: sending 1 context file (")
    assert proc.stderr.endswith("\n")


# --------------------------------------------------------------------------- the collector


def _collector(proc: subprocess.CompletedProcess[str]) -> str:
    return str(re.findall(r"^COLLECTOR (\w+)$", proc.stderr, re.M)[-1])


def test_a_single_review_runs_with_the_cyclic_collector_paused(
    repo: Path, simulator: object
) -> None:
    url = simulator.base_url  # type: ignore[attr-defined]
    proc, _ = _spawn(repo, "-q", "run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", url)
    assert (proc.returncode, _collector(proc)) == (0, "False")


@pytest.mark.parametrize(
    ("command", "collecting"),
    # stats may run long: the collector is back. verify checks with it off anyway, and
    # resuming it would cost one pass over everything the run made, just before exit.
    [("stats", "True"), ("verify", "False")],
)
def test_a_long_command_gets_the_collector_back_unless_it_is_verify(
    repo: Path, cli: Callable[..., CliResult], simulator: object, command: str, collecting: str
) -> None:
    _reviewed(repo, cli, simulator)
    proc, _ = _spawn(repo, command, "reviews")
    assert (proc.returncode, _collector(proc)) == (0, collecting)


def test_in_process_calls_leave_the_collector_alone(
    repo: Path, cli: Callable[..., CliResult], simulator: object
) -> None:
    import gc

    _reviewed(repo, cli, simulator)
    assert gc.isenabled()


# --------------------------------------------------------------------------- format checks

_ENDPOINTS = [
    "localhost",
    "127.0.0.1:8080",
    "http://[::1]:11434",
    "https://ollama.com",
    "https://api.deepseek.com/v1",
    "http://gpu-box.lan:8000/proxy/v1/chat/completions",
    "http://10.0.0.7:11434/v1/chat/completions?api-version=2024-01",
]
_URLS = [
    "http://h",
    "http://h:",
    "http://h/a b",
    "http://h/%zz",
    "http://h/%41",
    "http://h/#frag",
    "http://h/a?b=c&d=e;f:g@h/i?",
    "http://h:99999999/x",
    "http://a_b~c.-d/e!$&'()*+,;=:@f",
    "http://h/\u00e9",
    "http://user@h/",
    "https://",
    "ftp://h/",
    "http://h/../x",
    "http://h//x",
]


def test_every_endpoint_url_the_tool_builds_is_plainly_a_uri() -> None:
    """The receipt's endpoint is checked without the full RFC 3986 validator for these."""
    from deepseek_review.endpoint import chat_url
    from deepseek_review.records.receipt_fast import plainly_uri

    built = [chat_url(e) for e in _ENDPOINTS if "[" not in e]
    assert [u for u in built if not plainly_uri(u)] == []


def test_a_url_taken_as_plainly_a_uri_is_one_by_the_full_rfc_3986_check() -> None:
    from rfc3986_validator import validate_rfc3986  # type: ignore[import-untyped]

    from deepseek_review.endpoint import chat_url
    from deepseek_review.records.receipt_fast import plainly_uri

    urls = [*_URLS, *(chat_url(e) for e in _ENDPOINTS)]
    taken = [u for u in urls if plainly_uri(u)]
    assert len(taken) >= 8
    assert [u for u in taken if not validate_rfc3986(u, rule="URI")] == []


def test_a_timestamp_taken_as_written_is_rfc_3339_by_the_full_check() -> None:
    from datetime import UTC, datetime

    from rfc3339_validator import validate_rfc3339  # type: ignore[import-untyped]

    from deepseek_review.records.receipt import _as_written, created_at

    stamps = [
        created_at(datetime.now(UTC)),
        created_at(datetime(1, 1, 1, tzinfo=UTC)),
        "2024-02-29T23:59:59+00:00",
        "2023-02-29T00:00:00+00:00",
        "2026-12-01T03:01:38",
        "2026-12-01T03:01:38.250+00:00",
        "2026-12-01T24:00:00+00:00",
        "2026-12-01 03:01:38+00:00",
    ]
    taken = [s for s in stamps if _as_written(s)]
    assert taken == stamps[:3]
    assert all(validate_rfc3339(s) for s in taken)


def test_a_run_loads_neither_rfc_validator(repo: Path, simulator: object) -> None:
    url = simulator.base_url  # type: ignore[attr-defined]
    proc, modules = _spawn(
        repo, "-q", "run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", url
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert sorted(_top(modules) & {"rfc3986_validator", "rfc3339_validator", "jsonschema"}) == []


# --------------------------------------------------------------------------- the command table


def test_help_lists_every_command_without_importing_any(repo: Path) -> None:
    from deepseek_review.cli.commands import COMMANDS

    proc, modules = _spawn(repo, "--help")
    section = proc.stdout.split("Commands:\n")[1].split("\n\n")[0]
    listed = re.findall(r"^  (\S+)\s", section, re.M)
    assert (proc.returncode, listed) == (0, list(COMMANDS))
    assert sorted(m for m in modules if m.startswith("deepseek_review.cli.") and "_cmd" in m) == []


def test_the_command_table_names_every_registered_command_and_its_module() -> None:
    """A command added to a module but not to the table could never be run: the table is
    how the group finds it."""
    from importlib import import_module

    from typer.main import get_command_name

    from deepseek_review.cli import app
    from deepseek_review.cli.commands import COMMANDS

    folder = Path(import_module("deepseek_review.cli").__file__ or "").parent
    for path in sorted(folder.glob("*_cmd*.py")):
        import_module(f"deepseek_review.cli.{path.stem}")
    registered = {
        (c.name or get_command_name(c.callback.__name__ if c.callback else "")): (
            c.callback.__module__ if c.callback else ""
        )
        for c in app.registered_commands
    }
    table = {name: f"deepseek_review.cli.{e.module}" for name, e in COMMANDS.items()}
    # table_command registers a wrapper defined in cli.table: its module is the table's.
    assert set(registered) == set(table)
    assert {n: m for n, m in registered.items() if m != "deepseek_review.cli.table"} == {
        n: table[n] for n, m in registered.items() if m != "deepseek_review.cli.table"
    }
