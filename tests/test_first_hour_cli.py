"""What a new user hit in the first hour: signals, --json failures, usage errors, help texts,
the simulator's and the test hook's errors, --extra-body fields that do nothing, verify's
blind spots (a kept reasoning file, -q, counts, orphans, cut-off chains), show's silences,
paths typed from a subfolder, and chain order."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.simulator import Simulator
from tests.conftest import files_under, run_review

Cli = Callable[..., Any]
MakeSim = Callable[..., Simulator]


def _spawn(repo: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    """The real console entry point in its own process (signals need one)."""
    return subprocess.Popen(
        [sys.executable, "-m", "deepseek_review", *args],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "NO_COLOR": "1", **(env or {})},
    )


def _wait_for_request(sim: Simulator, count: int = 1) -> None:
    deadline = time.monotonic() + 30
    while len(sim.chat_requests()) < count:
        assert time.monotonic() < deadline, "the command never sent its request"
        time.sleep(0.02)


# --------------------------------------------------------------------------- signals


def test_sigterm_during_run_exits_130_with_one_line_and_writes_nothing(repo, make_simulator):
    sim = make_simulator(latency=60)
    proc = _spawn(repo, "run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url)
    _wait_for_request(sim)
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.splitlines()[-1] == "deepseek-review: error: interrupted by SIGTERM"
    assert out == ""
    assert files_under(repo / "reviews") == []


def test_sigterm_during_continue_exits_130_and_adds_no_segment(repo, make_simulator, cli):
    first = run_review(
        cli, make_simulator(answer_words=80), "--max-tokens", "20", "--max-continuations", "0"
    )
    assert first.code == 4, first.err
    before = files_under(repo / "reviews")
    slow = make_simulator(answer_words=80, latency=60)
    answer = first.json()["segments"][0]["answer_path"]
    proc = _spawn(repo, "continue", answer, "--endpoint", slow.base_url)
    _wait_for_request(slow)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.splitlines()[-1] == "deepseek-review: error: interrupted by SIGTERM"
    assert files_under(repo / "reviews") == before


def test_sigint_is_reported_like_sigterm(repo, make_simulator):
    sim = make_simulator(latency=60)
    proc = _spawn(repo, "run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url)
    _wait_for_request(sim)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert err.splitlines()[-1] == "deepseek-review: error: interrupted by SIGINT"
    assert files_under(repo / "reviews") == []


# --------------------------------------------------------------------------- --json failures


@pytest.mark.parametrize(
    ("args", "kind", "code"),
    [
        (("run", "-c", "docs/none.md", "-p", "x"), "InputError", 3),
        (("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", "ftp://x"), "ConfigError", 2),
        (("verify", "no/such/folder"), "InputError", 3),
        (("stats", "no/such/folder"), "InputError", 3),
        (("config", "--repo-root", "nowhere"), "ConfigError", 2),
        (("batch", "missing.toml"), "InputError", 3),
        (("continue", "reviews/none.md"), "InputError", 3),
        (("run", "--bogus"), "UsageError", 2),
    ],
)
def test_json_failure_prints_one_json_error_object_on_stdout(repo, cli, args, kind, code):
    r = cli(*args, "--json")
    assert r.code == code, r.err
    error = json.loads(r.out)["error"]  # exactly one document: json.loads refuses more
    assert error["kind"] == kind
    assert error["exit_code"] == code
    assert error["message"] in r.err.splitlines()[-1]


def test_json_failure_from_the_server_is_a_json_error(repo, make_simulator, cli):
    sim = make_simulator(fault_rate=1.0, fault_kinds=("503",))
    r = run_review(cli, sim, "--max-attempts", "1")
    assert r.code == 5
    assert json.loads(r.out)["error"]["kind"] == "ServerError"


def test_json_failure_after_the_report_adds_no_second_document(repo, simulator, cli):
    r = run_review(cli, simulator)
    answer = repo / r.json()["segments"][0]["answer_path"]
    answer.write_text("changed\n")
    v = cli("verify", "--json")
    assert v.code == 9
    assert json.loads(v.out)["report"] == "deepseek_review_verify_report_v1"


# --------------------------------------------------------------------------- usage errors


def test_bare_command_prints_the_whole_help_on_stderr_and_exits_2(cli):
    r = cli()
    assert r.code == 2
    assert r.out == ""
    assert r.err.startswith("Usage: deepseek-review [OPTIONS] COMMAND [ARGS]...\n")
    assert "\nCommands:\n" in r.err
    assert "deepseek-review: error" not in r.err


def test_unknown_option_is_named_without_a_far_fetched_suggestion(repo, cli):
    r = cli("run", "--bogus")
    assert r.code == 2
    assert r.err == "deepseek-review: error: no such option --bogus (see --help)\n"


def test_unknown_option_close_to_a_real_one_gets_a_suggestion(repo, cli):
    r = cli("verify", "--stirct")
    assert r.code == 2
    assert r.err == (
        "deepseek-review: error: no such option --stirct (did you mean --strict?) (see --help)\n"
    )


# --------------------------------------------------------------------------- help texts

COMMANDS = ("run", "continue", "show", "verify", "batch", "config", "stats", "simulator")


def _help(*args: str) -> str:
    import scripts.readme_help as readme_help

    return readme_help.help_text(" ".join(args))


@pytest.mark.parametrize("command", [*COMMANDS, ""])
def test_every_help_ends_with_its_example(command):
    text = _help(command) if command else _help()
    last = text.rstrip("\n").splitlines()[-1].strip()
    assert last.startswith("Example: deepseek-review " + (command or "run")), text


def test_simulator_help_lists_every_fault_kind_and_shows_defaults():
    from deepseek_review.simulator import ALL_FAULTS

    text = _help("simulator")
    for kind in ALL_FAULTS:
        assert kind in text
    assert "--latency LATENCY     seconds per request (default: 0.0)" in text
    assert "(default: 127.0.0.1)" in text


# --------------------------------------------------------------------------- the simulator


def _simulator(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deepseek_review", "simulator", *args],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_simulator_port_out_of_range_is_a_usage_error():
    out = _simulator("--port", "99999")
    assert out.returncode == 2
    assert out.stderr == (
        "deepseek-review: error: simulator: argument --port: 99999 is not a port (0-65535; 0 "
        "picks a free one) (see --help)\n"
    )


def test_simulator_port_in_use_is_one_line_exit_2():
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        out = _simulator("--port", str(port))
    assert out.returncode == 2
    assert out.stderr.startswith(
        f"deepseek-review: error: simulator: cannot listen on 127.0.0.1:{port}: "
    )
    assert len(out.stderr.splitlines()) == 1
    assert "Traceback" not in out.stderr


def test_simulator_unknown_host_is_one_line_exit_2():
    out = _simulator("--host", "no-such-host.invalid")
    assert out.returncode == 2
    assert out.stderr.startswith(
        "deepseek-review: error: simulator: cannot listen on no-such-host.invalid:0: "
    )
    assert len(out.stderr.splitlines()) == 1


def test_simulator_module_entry_point_reports_usage_errors_in_one_line():
    out = subprocess.run(
        [sys.executable, "-m", "deepseek_review.simulator", "--fault-kinds", "gremlins"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert out.returncode == 2
    assert out.stderr.startswith("deepseek-review: error: simulator: argument --fault-kinds: ")
    assert len(out.stderr.splitlines()) == 1


# --------------------------------------------------------------------------- the crash hook

BAD_HOOK = {"DEEPSEEK_REVIEW_CRASH_AT": "after-lunch"}


@pytest.mark.parametrize(
    "args",
    [
        ("run", "--dry-run", "-c", "docs/spec.md", "-p", "x"),
        ("verify",),
        ("config",),
    ],
)
def test_an_invalid_crash_hook_value_does_not_touch_a_command_that_writes_nothing(repo, args):
    proc = _spawn(repo, *args, env=BAD_HOOK)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert "DEEPSEEK_REVIEW_CRASH_AT" not in err


def test_an_invalid_crash_hook_value_fails_a_write_in_one_line_leaving_nothing(repo, simulator):
    proc = _spawn(
        repo, "run", "-c", "docs/spec.md", "-p", "x", "--endpoint", simulator.base_url, env=BAD_HOOK
    )
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2
    assert err.splitlines()[-1].startswith(
        "deepseek-review: error: DEEPSEEK_REVIEW_CRASH_AT='after-lunch': expected <point>"
    )
    assert files_under(repo / "reviews") == []


# --------------------------------------------------------------------------- --extra-body


@pytest.mark.parametrize(
    ("option", "body", "field"),
    [
        ("--extra-body", '{"stream_options": {"include_usage": false}}', "stream_options"),
        ("--extra-body", '{"stream_options": 5}', "stream_options"),
        ("--extra-body", '{"n": 3}', "n"),
        ("--continuation-extra-body", '{"n": 2}', "n"),
        ("--continuation-extra-body", '{"max_completion_tokens": 9}', "max_completion_tokens"),
    ],
)
def test_extra_body_field_that_would_do_nothing_is_refused_before_sending(
    repo, simulator, cli, option, body, field
):
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", simulator.base_url, option, body)
    assert r.code == 2, r.err
    assert r.err.startswith(f"deepseek-review: error: {option} may not set {field!r}: ")
    assert len(r.err.splitlines()) == 1
    assert simulator.chat_requests() == []
    assert files_under(repo / "reviews") == []
