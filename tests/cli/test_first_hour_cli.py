"""What a new user hit in the first hour: signals, --json failures, usage errors, help texts,
the simulator's and the test hook's errors, --extra-body fields that do nothing, verify's
blind spots (a kept reasoning file, -q, counts, orphans, cut-off chains), show's silences,
paths typed from a subfolder, and chain order."""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.testing.simulator import Simulator
from tests.support.cli import files_under, review
from tests.support.git import git

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


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_during_run_exits_130_with_one_line_and_writes_nothing(repo, make_simulator, signum):
    sim = make_simulator(latency=60)
    proc = _spawn(repo, "run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url)
    _wait_for_request(sim)
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    name = signal.Signals(signum).name
    assert err.splitlines()[-1] == f"deepseek-review: error: interrupted by {name}"
    assert out == ""
    assert files_under(repo / "reviews") == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_signal_mid_stream_says_how_much_of_the_answer_had_arrived(repo, make_simulator, signum):
    sim = make_simulator(latency=30, answer_words=300)  # the answer trickles in
    proc = _spawn(repo, "run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url)
    _wait_for_request(sim)
    time.sleep(2)  # a few pieces of it have arrived
    proc.send_signal(signum)
    _out, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    last = err.splitlines()[-1]
    name = signal.Signals(signum).name
    assert re.fullmatch(
        rf"deepseek-review: error: interrupted by {name} \(~\d+ tokens \(\d+ bytes\) of the "
        r"answer had arrived; none of it was written\)",
        last,
    ), last
    assert files_under(repo / "reviews") == []


def test_sigterm_during_continue_exits_130_and_adds_no_segment(repo, make_simulator, cli):
    first = review(
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
    r = review(cli, sim, "--max-attempts", "1")
    assert r.code == 5
    assert json.loads(r.out)["error"]["kind"] == "ServerError"


def test_json_failure_after_the_report_adds_no_second_document(repo, simulator, cli):
    r = review(cli, simulator)
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
    import scripts.cli_reference as cli_reference

    return cli_reference.help_text(" ".join(args))


@pytest.mark.parametrize("command", [*COMMANDS, ""])
def test_every_help_ends_with_its_example(command):
    text = _help(command) if command else _help()
    last = text.rstrip("\n").splitlines()[-1].strip()
    assert last.startswith("Example: deepseek-review " + (command or "run")), text


def test_simulator_help_lists_every_fault_kind_and_shows_defaults():
    from deepseek_review.testing.simulator import ALL_FAULTS

    text = _help("simulator")
    for kind in ALL_FAULTS:
        assert kind in text
    assert "--latency <float>               Seconds per request (default: 0.0)." in text
    assert "(default: 127.0.0.1)" in text
    assert "0 picks a free port (default: 11435)." in text


@pytest.mark.parametrize("command", ["simulator", "stats", "verify"])
def test_the_simulator_help_is_laid_out_as_every_other_commands(command):
    """``Usage: ... [OPTIONS]``, the summary indented, an ``Options:`` section whose values
    show their type, ``-h, --help`` last among them, the example at the end."""
    text = _help(command)
    lines = text.splitlines()
    assert lines[0].startswith(f"Usage: deepseek-review {command} [OPTIONS]")
    assert lines[1] == "" and lines[2].startswith("  ")
    assert "\nOptions:\n" in text
    assert "  --repo-root <str>" in text or "  --port <int>" in text
    assert re.search(r"^  -h, --help +Show this message and exit\.$", text, re.M)


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
        "deepseek-review: error: simulator: cannot listen on no-such-host.invalid:11435: "
    )
    assert len(out.stderr.splitlines()) == 1


def test_simulator_module_entry_point_reports_usage_errors_in_one_line():
    out = subprocess.run(
        [sys.executable, "-m", "deepseek_review.testing.simulator", "--fault-kinds", "gremlins"],
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


# --------------------------------------------------------------------------- verify: hashes


def _run(cli: Cli, sim: Simulator, *extra: str) -> list[dict[str, Any]]:
    """A review that ends normally (default caps); its segments."""
    r = review(cli, sim, *extra)
    assert r.code == 0, r.err
    segments: list[dict[str, Any]] = r.json()["segments"]
    return segments


def _record(repo: Path, seg: dict[str, Any]) -> tuple[Path, dict[str, Any]]:
    path = repo / seg["record_path"]
    return path, json.loads(path.read_text(encoding="utf-8"))


def _check(result: Any, receipt: str, name: str) -> dict[str, Any]:
    report = next(r for r in result.json()["receipts"] if r["receipt_path"] == receipt)
    found: dict[str, Any] = next(c for c in report["checks"] if c["name"] == name)
    return found


def test_verify_fails_a_kept_reasoning_file_changed_after_the_review(repo, make_simulator, cli):
    (seg,) = _run(cli, make_simulator(reasoning_words=30), "--keep-reasoning")
    reasoning = repo / seg["reasoning_path"]
    reasoning.write_bytes(reasoning.read_bytes().replace(b" ", b"  ", 1))
    r = cli("verify", "--json")
    assert r.code == 9
    answer = _check(r, seg["receipt_path"], "answer")
    assert answer["status"] == "fail"
    assert answer["detail"].startswith(f"{seg['reasoning_path']} hashes to sha256:")
    assert f"FAIL {seg['receipt_path']}: answer (answer: {seg['reasoning_path']}" in r.err


def test_verify_fails_a_kept_reasoning_file_that_was_deleted(repo, make_simulator, cli):
    (seg,) = _run(cli, make_simulator(reasoning_words=30), "--keep-reasoning")
    (repo / seg["reasoning_path"]).unlink()
    r = cli("verify", "--json")
    assert r.code == 9
    assert _check(r, seg["receipt_path"], "answer")["detail"] == (
        f"reasoning file {seg['reasoning_path']} does not exist"
    )


def test_verify_passes_an_intact_kept_reasoning_file(repo, make_simulator, cli):
    (seg,) = _run(cli, make_simulator(reasoning_words=30), "--keep-reasoning")
    r = cli("verify", "--json")
    assert r.code == 0, r.err
    assert _check(r, seg["receipt_path"], "answer")["detail"] == (
        "hash matches; reasoning file hash matches"
    )


def test_verify_fails_a_record_whose_content_sha256_was_altered(repo, simulator, cli):
    (seg,) = _run(cli, simulator)
    path, record = _record(repo, seg)
    record["response"]["content_sha256"] = "sha256:" + "0" * 64
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    r = cli("verify", "--json")
    assert r.code == 9
    assert _check(r, seg["receipt_path"], "prompt")["detail"] == (
        "the request record's content_sha256 is not the answer's answer_sha256"
    )


def test_verify_fails_a_record_whose_context_file_list_has_another_hash(repo, simulator, cli):
    (seg,) = _run(cli, simulator)
    path, record = _record(repo, seg)
    record["context_files"][0]["sha256"] = "sha256:" + "0" * 64
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    r = cli("verify", "--json")
    assert r.code == 9
    assert _check(r, seg["receipt_path"], "prompt")["detail"] == (
        "the request record's context_files entry for docs/spec.md does not match the file "
        "reference in its body (sha256, bytes and lines)"
    )


def test_verify_checks_the_content_hash_of_a_server_that_echoed_the_prefill(
    repo, make_simulator, cli
):
    sim = make_simulator(answer_words=60, echo_prefill=True)
    r = review(cli, sim, "--max-tokens", "25")
    assert r.code == 0, r.err
    segments = r.json()["segments"]
    assert len(segments) == 3
    assert cli("verify").code == 0
    path, record = _record(repo, segments[1])
    assert record["response"]["echo_stripped_chars"] > 0
    record["response"]["content_sha256"] = segments[1]["answer_sha256"]
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    v = cli("verify", "--json")
    assert v.code == 9
    assert _check(v, segments[1]["receipt_path"], "prompt")["detail"].startswith(
        "the request record's content_sha256 is not the hash of the echoed answer so far"
    )


# --------------------------------------------------------------------------- verify: output


def test_verify_quiet_still_prints_a_receipt_with_warnings(repo, simulator, cli):
    (seg,) = _run(cli, simulator)
    (repo / "docs" / "spec.md").write_text("changed\n", encoding="utf-8")
    r = cli("verify", "-q")
    assert r.code == 0
    lines = r.err.splitlines()
    assert lines[0].startswith(f"OK   {seg['receipt_path']} (warning: prompt: context file")
    assert lines[1] == "deepseek-review: verify: 1 receipt: 0 OK, 1 with warnings, 0 FAIL"
    assert len(lines) == 2


def test_verify_quiet_drops_plain_ok_lines(repo, simulator, cli):
    _run(cli, simulator)
    r = cli("verify", "-q")
    assert r.code == 0
    assert r.err.splitlines() == ["deepseek-review: verify: 1 receipt: 1 OK, 0 FAIL"]


def test_verify_text_counts_are_the_json_counts(repo, simulator, cli):
    _run(cli, simulator)
    _run(cli, simulator, "--topic", "second")
    (repo / "docs" / "spec.md").write_text("changed\n", encoding="utf-8")
    _run(cli, simulator, "--topic", "third")
    r = cli("verify", "--json")
    counts = r.json()["counts"]
    assert counts == {"receipts": 3, "ok": 1, "warn": 2, "fail": 0}
    assert r.err.splitlines()[-1] == (
        "deepseek-review: verify: 3 receipts: 1 OK, 2 with warnings, 0 FAIL"
    )


ORPHAN = "reviews/lost_deepseek_deepseek-v4-flash_20260512T033551Z.md"


def test_verify_warns_about_an_answer_without_its_receipt(repo, simulator, cli):
    _run(cli, simulator)
    (repo / ORPHAN).write_text("an answer whose run died before its receipt\n")
    r = cli("verify", "--json")
    assert r.code == 0
    assert r.json()["orphans"] == [ORPHAN]
    assert f"WARN {ORPHAN}: an answer without its receipt" in r.err
    assert r.err.splitlines()[-1].endswith("; 1 answer without a receipt")


def test_verify_strict_fails_on_an_answer_without_its_receipt(repo, simulator, cli):
    _run(cli, simulator)
    (repo / ORPHAN).write_text("an answer whose run died before its receipt\n")
    r = cli("verify", "--strict")
    assert r.code == 9
    assert f"FAIL {ORPHAN}: an answer without its receipt" in r.err
    assert r.err.splitlines()[-1] == (
        "deepseek-review: error: 1 answer without a receipt (--strict)"
    )


def test_verify_ignores_other_markdown_and_kept_reasoning(repo, make_simulator, cli):
    _run(cli, make_simulator(reasoning_words=10), "--keep-reasoning")
    (repo / "reviews" / "README.md").write_text("notes\n")
    r = cli("verify", "--json")
    assert r.code == 0
    assert r.json()["orphans"] == []


def _cut_off(cli: Cli, sim: Simulator) -> dict[str, Any]:
    r = review(cli, sim, "--max-tokens", "20", "--max-continuations", "0")
    assert r.code == 4, r.err
    seg: dict[str, Any] = r.json()["segments"][0]
    return seg


def test_verify_warns_that_a_chain_is_still_cut_off(repo, make_simulator, cli):
    seg = _cut_off(cli, make_simulator(answer_words=80))
    r = cli("verify", "--json")
    assert r.code == 0
    chain = _check(r, seg["receipt_path"], "chain")
    assert chain["status"] == "warn"
    assert chain["detail"] == (
        "the answer is still cut off at the token cap (finish_reason length): "
        f"`deepseek-review continue` goes on from {seg['answer_path']}"
    )
    strict = cli("verify", "--strict")
    assert strict.code == 9
    assert "1 of 1 receipt failed verification (chain: 1)" in strict.err


def test_verify_does_not_warn_once_the_chain_is_continued(repo, make_simulator, cli):
    sim = make_simulator(answer_words=80)
    seg = _cut_off(cli, sim)
    assert cli("continue", seg["answer_path"], "--endpoint", sim.base_url).code == 0
    r = cli("verify", "--json", "--strict")
    assert r.code == 0, r.err
    assert r.json()["counts"]["warn"] == 0


class _FrozenClock:
    """Every segment written in the same second: names ``…Z``, ``…Z-2`` ... ``…Z-11``."""

    @staticmethod
    def now(tz: Any = None) -> Any:
        from datetime import UTC, datetime

        return datetime(2026, 5, 12, 3, 35, 51, tzinfo=UTC)


def test_verify_lists_receipts_in_chain_order_not_name_order(
    repo, make_simulator, cli, monkeypatch
):
    monkeypatch.setattr("deepseek_review.reviewing.pipeline.datetime", _FrozenClock)
    sim = make_simulator(answer_words=120)
    r = review(cli, sim, "--max-tokens", "10", "--max-continuations", "11")
    assert r.code == 0, r.err
    receipts = [s["receipt_path"] for s in r.json()["segments"]]
    assert len(receipts) == 12
    assert receipts[-1].endswith("_continuation_20260512T033551Z-11.receipt.json")
    v = cli("verify", "--json")
    assert [x["receipt_path"] for x in v.json()["receipts"]] == receipts
    listed = [ln.split()[1] for ln in v.err.splitlines() if ln.startswith("OK ")]
    assert listed == receipts


def test_name_order_sorts_a_names_number_suffix_as_the_tool_wrote_them():
    from deepseek_review.records.naming import name_order

    stem = "reviews/t_deepseek_m_continuation_20260512T033551Z"
    names = [f"{stem}-10.md", f"{stem}-2.md", f"{stem}.md", f"{stem}-11.md"]
    assert sorted(names, key=name_order) == [
        f"{stem}.md",
        f"{stem}-2.md",
        f"{stem}-10.md",
        f"{stem}-11.md",
    ]


# --------------------------------------------------------------------------- show


def test_show_notes_a_chain_that_is_still_cut_off(repo, make_simulator, cli):
    seg = _cut_off(cli, make_simulator(answer_words=80))
    r = cli("show", seg["answer_path"])
    assert r.code == 0
    assert r.out == (repo / seg["answer_path"]).read_text(encoding="utf-8")
    assert r.err.splitlines()[0] == (
        f"deepseek-review: the answer is cut off: its last segment, {seg['answer_path']}, "
        "ended at the token cap (finish_reason length); continue it with: deepseek-review "
        f"continue {seg['answer_path']}"
    )


def test_show_piped_prints_the_stitched_answer_byte_for_byte(repo, make_simulator, cli):
    seg = _cut_off(cli, make_simulator(answer_words=80))
    text = (repo / seg["answer_path"]).read_text(encoding="utf-8")
    assert not text.endswith("\n")  # cut off mid-answer
    assert cli("show", "-q", seg["answer_path"]).out == text


def test_show_on_a_terminal_ends_with_a_newline(repo, make_simulator, cli):
    import pty

    seg = _cut_off(cli, make_simulator(answer_words=80))
    text = (repo / seg["answer_path"]).read_bytes()
    primary, secondary = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "deepseek_review", "show", "-q", seg["answer_path"]],
        cwd=repo,
        stdout=secondary,
        stderr=subprocess.DEVNULL,
    )
    os.close(secondary)
    shown = b""
    while True:
        try:
            chunk = os.read(primary, 65536)
        except OSError:  # the terminal closed
            break
        if not chunk:
            break
        shown += chunk
    os.close(primary)
    assert proc.wait(timeout=30) == 0
    assert shown.replace(b"\r\n", b"\n") == text + b"\n"


# --------------------------------------------------------------------------- paths


def test_show_from_a_subfolder_takes_the_path_relative_to_it(repo, simulator, cli, monkeypatch):
    (seg,) = _run(cli, simulator)
    monkeypatch.chdir(repo / "src" / "pkg")
    r = cli("show", "../../" + seg["answer_path"])
    assert r.code == 0, r.err
    assert r.out == (repo / seg["answer_path"]).read_text(encoding="utf-8")


def test_context_from_a_subfolder_is_relative_to_it_and_sends_the_same_bytes(
    repo, simulator, cli, monkeypatch
):
    at_root = cli("run", "--dry-run", "--json", "-c", "docs/spec.md", "-p", "x").json()
    monkeypatch.chdir(repo / "docs")
    here = cli("run", "--dry-run", "--json", "-c", "spec.md", "-p", "x").json()
    assert here["prompt_sha256"] == at_root["prompt_sha256"]
    assert [f["path"] for f in here["context_files"]] == ["docs/spec.md"]


def test_context_glob_from_a_subfolder_matches_below_it(repo, cli, monkeypatch):
    (repo / "setup.py").write_text("print(1)\n")  # above the subfolder: not matched
    monkeypatch.chdir(repo / "src")
    r = cli("run", "--dry-run", "--json", "-c", "**/*.py", "-p", "x")
    assert r.code == 0, r.err
    assert [f["path"] for f in r.json()["context_files"]] == [
        "src/pkg/__init__.py",
        "src/pkg/mean.py",
    ]


def test_context_missing_from_a_subfolder_names_the_path_from_the_root(repo, cli, monkeypatch):
    monkeypatch.chdir(repo / "src")
    r = cli("run", "--dry-run", "-c", "spec.md", "-p", "x")
    assert r.code == 3
    assert r.err == "deepseek-review: error: context path src/spec.md: no such file or folder\n"


@pytest.mark.parametrize("command", ["show", "continue", "verify", "findings"])
@pytest.mark.parametrize("named", ["reviews/none.md", "reviews/none.receipt.json"])
def test_a_missing_path_gets_one_message_from_every_command(repo, cli, command, named):
    r = cli(command, named)
    assert (r.code, r.err) == (3, f"deepseek-review: error: {named}: no such file or folder\n")


@pytest.mark.parametrize("command", ["show", "continue", "verify", "findings"])
def test_a_missing_path_from_a_subfolder_gets_the_same_message(repo, cli, monkeypatch, command):
    monkeypatch.chdir(repo / "src")
    r = cli(command, "../reviews/none.md")
    assert (r.code, r.err) == (
        3,
        "deepseek-review: error: reviews/none.md: no such file or folder\n",
    )


def test_verbose_run_says_what_each_request_was(repo, simulator, cli):
    r = cli("-v", "run", "-c", "docs/spec.md", "-p", "x", "--endpoint", simulator.base_url,
            "--json")  # fmt: skip
    assert r.code == 0, r.err
    (seg,) = r.json()["segments"]
    assert (
        f"deepseek-review: {seg['receipt_path']}: {seg['model']}, "
        f"{seg['usage']['total_tokens']} tokens, prompt {seg['prompt_sha256']}, answer "
        f"{seg['answer_sha256']}, 1 attempt, finish_reason stop\n"
    ) in r.err


def test_a_plain_run_does_not_list_each_request(repo, simulator, cli):
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", simulator.base_url)
    assert r.code == 0, r.err
    assert "attempt" not in r.err


def test_outside_git_a_run_says_which_folder_became_the_root(tmp_path, cli, monkeypatch):
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "notes.md").write_text("a note\n", encoding="utf-8")
    monkeypatch.chdir(plain)
    r = cli("run", "--dry-run", "-c", "notes.md", "-p", "x")
    assert r.code == 0, r.err
    assert (
        f"deepseek-review: not in a git repository: {plain.resolve()} is the root (paths are "
        "taken from it; --repo-root names another)\n"
    ) in r.err


def test_inside_git_nothing_is_said_of_the_root(repo, cli):
    r = cli("run", "--dry-run", "-c", "docs/spec.md", "-p", "x")
    assert r.code == 0, r.err
    assert "is the root" not in r.err


@pytest.mark.parametrize("command", ["verify", "findings", "stats", "show"])
def test_a_path_in_another_repository_is_refused_with_its_repo_root(repo, cli, tmp_path, command):
    other = tmp_path / "other"
    (other / "reviews").mkdir(parents=True)
    git(other, "init", "-q")
    target = other / "reviews" / ("x.md" if command == "show" else "")
    if command == "show":
        target.write_text("x\n", encoding="utf-8")
    r = cli(command, str(target))
    assert r.code == 3, r.err
    assert f"(for files of another repository, pass --repo-root {other.resolve()})" in r.err


def test_path_leading_out_of_the_root_from_a_subfolder_is_refused(repo, cli, monkeypatch):
    monkeypatch.chdir(repo / "src")
    r = cli("verify", "../../elsewhere")
    assert r.code == 3
    assert "outside the repository root" in r.err


def test_run_from_a_subfolder_prints_paths_to_type_from_there(repo, simulator, cli, monkeypatch):
    monkeypatch.chdir(repo / "docs")
    r = cli("run", "-c", "spec.md", "-p", "x", "--endpoint", simulator.base_url)
    assert r.code == 0, r.err
    answer, receipt, _ = r.out.splitlines()
    assert answer.startswith("../reviews/review_deepseek_") and answer.endswith(".md")
    assert cli("show", "-q", answer).out == (repo / "docs" / answer).read_text(encoding="utf-8")
    assert cli("verify", "-q", receipt).code == 0


def test_verify_from_a_subfolder_takes_its_paths_relative_to_it(repo, simulator, cli, monkeypatch):
    (seg,) = _run(cli, simulator)
    monkeypatch.chdir(repo / "src")
    r = cli("verify", "--json", "../reviews")
    assert r.code == 0, r.err
    assert [x["receipt_path"] for x in r.json()["receipts"]] == [seg["receipt_path"]]


def test_paths_from_outside_the_root_are_taken_from_the_root(repo, simulator, cli, monkeypatch):
    (seg,) = _run(cli, simulator)
    monkeypatch.chdir(repo.parent)
    r = cli("show", "--repo-root", str(repo), seg["answer_path"])
    assert r.code == 0, r.err
