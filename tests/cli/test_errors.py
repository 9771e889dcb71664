"""Failures: one exit code per kind, and one readable stderr line per failure."""

from __future__ import annotations

import errno
import io
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review import errors
from deepseek_review.errors import EXIT_CODES, ReviewError
from deepseek_review.testing.simulator import Simulator

Cli = Callable[..., Any]
MakeSim = Callable[..., Simulator]


def test_exit_codes_are_unique():
    codes = [code for code, _ in EXIT_CODES]
    assert len(codes) == len(set(codes))


def test_every_failure_kind_is_in_the_table_once():
    kinds = [cls for _, cls in EXIT_CODES]
    assert len(kinds) == len(set(kinds))
    defined = {
        obj
        for obj in vars(errors).values()
        if isinstance(obj, type) and issubclass(obj, ReviewError)
    }
    assert set(kinds) == defined


def test_exit_codes_are_the_documented_ones():
    assert {cls.__name__: code for code, cls in EXIT_CODES} == {
        "ReviewError": 1,
        "ConfigError": 2,
        "InputError": 3,
        "TruncatedReview": 4,
        "ServerError": 5,
        "BadResponse": 6,
        "PromptTruncated": 7,
        "SecretsFound": 8,
        "VerificationFailed": 9,
        "OutputError": 10,
        "BatchIncomplete": 11,
        "NoProgress": 12,
        "FindingsGate": 13,
        "PromptDoesNotFit": 14,
        "MissingObject": 16,
        "NothingNew": 0,
        "Interrupted": 130,
    }


def test_no_failure_exits_0_and_none_collides_with_shell_conventions():
    """Only NothingNew, which is not a failure (nothing to review), exits 0."""
    assert [cls for code, cls in EXIT_CODES if code == 0] == [errors.NothingNew]
    assert all(0 < c < 126 or c == 130 for c, cls in EXIT_CODES if cls is not errors.NothingNew)


def test_hint_is_kept_apart_from_the_message():
    exc = errors.ServerError("it failed", hint="do this")
    assert exc.message == "it failed"
    assert exc.hint == "do this"
    assert errors.ConfigError("x").hint == ""


# --------------------------------------------------------------------------- the CLI

PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyu\n"


#: case: (exit code, simulator knobs or None for no simulator, context, extra arguments)
_FAILURES: dict[str, tuple[int, dict[str, Any] | None, str, tuple[str, ...]]] = {
    "unknown-option": (2, None, "", ("--no-such-option",)),
    "bad-template": (2, None, "docs/spec.md", ("--template", "nope")),
    "bad-extra-body": (2, None, "docs/spec.md", ("--extra-body", "{")),
    "bad-endpoint": (2, None, "docs/spec.md", ("--endpoint", "ftp://x")),
    "bad-topic": (2, None, "docs/spec.md", ("--topic", "a/b")),
    "missing-context": (3, {}, "docs/none.md", ()),
    "binary-context": (3, {}, "docs/bin.md", ()),
    "outside-context": (3, {}, "/etc/hostname", ()),
    "truncated": (
        4,
        {"answer_words": 400},
        "docs/spec.md",
        ("--max-tokens", "20", "--max-continuations", "0"),
    ),
    "server-down": (5, {"fault_rate": 1.0, "fault_kinds": ("503",)}, "docs/spec.md", ()),
    "garbage": (6, {"fault_rate": 1.0, "fault_kinds": ("no-choices",)}, "docs/spec.md", ()),
    "prompt-clipped": (7, {"context_window": 600}, "docs/big.md", ()),
    "secrets": (8, None, "docs/leak.md", ("--endpoint", "https://example.invalid")),
    "output-blocked": (10, {}, "docs/spec.md", ("--output-dir", "docs/spec.md")),
}
CASES = list(_FAILURES)


def _failure(repo: Path, make_simulator: MakeSim, case: str) -> tuple[int, list[str]]:
    """The failing command of ``case`` and the exit code it must give."""
    code, knobs, context, extra = _FAILURES[case]
    (repo / "docs" / "big.md").write_text("All work and no play. " * 400)
    (repo / "docs" / "leak.md").write_text(PRIVATE_KEY)
    (repo / "docs" / "bin.md").write_bytes(b"\x00\x01")
    args = ["run", "-p", "x", "--retry-wait", "0.01", "--max-attempts", "1"]
    if context:
        args += ["-c", context]
    if knobs is not None:
        args += ["--endpoint", make_simulator(**knobs).base_url]
    return code, [*args, *extra]


@pytest.mark.parametrize("case", CASES)
def test_failure_gives_its_exit_code_and_one_quiet_stderr_line(repo, make_simulator, cli, case):
    code, args = _failure(repo, make_simulator, case)
    r = cli("--quiet", *args)
    assert r.code == code, r.err
    lines = r.err.splitlines()
    assert len(lines) == 1, r.err
    assert lines[0].startswith("deepseek-review: error: "), r.err
    assert "Traceback" not in r.err


@pytest.mark.parametrize("case", CASES)
def test_failure_without_quiet_ends_with_its_one_error_line(repo, make_simulator, cli, case):
    code, args = _failure(repo, make_simulator, case)
    r = cli(*args)
    assert r.code == code, r.err
    errors_shown = [ln for ln in r.err.splitlines() if ln.startswith("deepseek-review: error:")]
    assert len(errors_shown) == 1, r.err
    assert r.err.splitlines()[-1] == errors_shown[0]
    assert "Traceback" not in r.err


def test_verbose_failure_adds_the_traceback(repo, cli):
    r = cli("--verbose", "run", "-p", "x", "-c", "docs/none.md")
    assert r.code == 3
    assert "Traceback" in r.err
    assert "deepseek-review: error: context path docs/none.md" in r.err


def test_unexpected_exception_is_one_line_naming_it_and_exit_1(repo, cli, monkeypatch):
    def broken(*a: Any, **kw: Any) -> Any:
        raise RuntimeError("something broke\nsecond line")

    monkeypatch.setattr("deepseek_review.reviewing.plan.plan_review", broken)
    r = cli("run", "-p", "x", "-c", "docs/spec.md")
    assert r.code == 1
    assert r.err.splitlines() == [
        "deepseek-review: internal error: RuntimeError: something broke "
        "(run with --verbose for details)"
    ]


def test_unexpected_exception_with_verbose_shows_the_traceback(repo, cli, monkeypatch):
    def broken(*a: Any, **kw: Any) -> Any:
        raise RuntimeError("something broke")

    monkeypatch.setattr("deepseek_review.reviewing.plan.plan_review", broken)
    with pytest.raises(RuntimeError):
        cli("--verbose", "run", "-p", "x", "-c", "docs/spec.md")


def test_interrupt_exits_130_with_one_line(repo, cli, monkeypatch):
    def interrupted(*a: Any, **kw: Any) -> Any:
        raise KeyboardInterrupt

    monkeypatch.setattr("deepseek_review.reviewing.plan.plan_review", interrupted)
    r = cli("run", "-p", "x", "-c", "docs/spec.md")
    assert r.code == 130
    assert r.err.splitlines() == ["deepseek-review: error: interrupted"]


def test_error_naming_a_path_with_a_newline_stays_on_one_line(repo, cli):
    (repo / "docs" / "a\nb.md").write_text("x\n")
    r = cli("run", "--dry-run", "-p", "x", "-c", "docs/a\nb.md")
    assert r.code == 3
    assert len(r.err.splitlines()) == 1


def test_error_output_goes_to_stderr_only(repo, cli):
    r = cli("run", "-p", "x", "-c", "docs/none.md")  # with --json: tests/cli/test_first_hour_cli.py
    assert r.code == 3
    assert r.out == ""


def test_console_script_failure_is_one_line_in_a_real_process(repo):
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-m", "deepseek_review", "run", "-p", "x", "-c", "docs/none.md"],
        cwd=repo,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert out.returncode == 3
    assert out.stderr.splitlines() == [
        "deepseek-review: error: context path docs/none.md: no such file or folder"
    ]
    assert out.stdout == ""


class _ClosedPipe(io.TextIOBase):
    def write(self, s: str) -> int:
        raise BrokenPipeError(errno.EPIPE, "Broken pipe")


def test_stdout_closed_early_is_not_an_error(repo, cli, monkeypatch):
    monkeypatch.setattr(os, "_exit", lambda code: sys.exit(code))
    monkeypatch.setattr(sys, "stdout", _ClosedPipe())
    r = cli("run", "--dry-run", "--json", "-p", "x", "-c", "docs/spec.md")
    assert r.code == 0


def test_verbose_after_the_command_shows_the_traceback(repo, cli):
    r = cli("run", "-p", "x", "-c", "docs/none.md", "--verbose")
    assert r.code == 3
    assert "Traceback" in r.err


def test_quiet_after_the_command_silences_status_lines(repo, cli):
    r = cli("run", "-p", "x", "-c", "docs/spec.md", "--dry-run", "-q")
    assert r.code == 0
    assert r.err == ""
