"""Nothing from outside reaches the terminal raw.

A server's error text, an answer, a receipt's fields, file names and config values can all
hold terminal control sequences: ``ESC ] 0 ;`` retitles the window, ``ESC [ 2 J`` clears the
screen, OSC 52 writes the clipboard, ``U+202E`` reverses the text that follows. Every line the
tool prints shows them as visible escapes (``\\x1b``, ``\\u202e``); ``show`` does so on a
terminal and writes the answer's exact bytes when piped; ``--json`` output stays valid JSON
that decodes to the exact value but carries no raw control character either.
"""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import tty
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.util.textsafe import escape, escape_lines, json_safe
from tests.support.builders import primary_receipt, sha, write_receipt
from tests.support.cli import review
from tests.support.git import commit
from tests.support.stubs import Reply, Stub
from tests.support.terminal import read_until_closed

Cli = Callable[..., Any]

#: Invisible format characters a name may not hold, and how they are shown: zero-width space,
#: word joiner, BOM, soft hyphen, a tag character (beyond the BMP).
INVISIBLE = [
    ("\u200b", "\\u200b"),
    ("\u2060", "\\u2060"),
    ("\ufeff", "\\ufeff"),
    ("\u00ad", "\\xad"),
    ("\U000e0041", "\\U000e0041"),
]
MakeStub = Callable[..., Stub]

#: Retitles the window, clears the screen, an 8-bit CSI, and a right-to-left override.
HOSTILE = "title\x1b]0;pwned\x07 clear\x1b[2J csi\x9b31m rtl\u202etxt.exe"
#: What the user sees instead.
SHOWN = "title\\x1b]0;pwned\\x07 clear\\x1b[2J csi\\x9b31m rtl\\u202etxt.exe"
RAW = ("\x1b", "\x07", "\x9b", "\u202e")
#: An answer that writes the clipboard (OSC 52) and clears the screen, over several lines.
ANSWER = "# Review\n\n\tfine\x1b]52;c;cm0gLXJmIH4=\x07\n" + HOSTILE + "\n"


def assert_no_raw_controls(text: str) -> None:
    for c in RAW:
        assert c not in text, f"raw {c!r} printed: {text!r}"


def error_line(err: str) -> str:
    """The one error line, which is the last line of stderr."""
    lines = [line for line in err.splitlines() if line.startswith("deepseek-review: error: ")]
    assert len(lines) == 1 and err.endswith(lines[0] + "\n"), err
    return lines[0]


def completion(content: str) -> bytes:
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": "m",
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
            "usage": {"prompt_tokens": 30, "completion_tokens": 20, "total_tokens": 50},
        }
    ).encode()


# --------------------------------------------------------------------------- the function


@pytest.mark.parametrize(
    ("char", "shown"),
    [
        ("\x00", "\\x00"),
        ("\x1b", "\\x1b"),
        ("\r", "\\x0d"),
        ("\x7f", "\\x7f"),
        ("\x85", "\\x85"),
        ("\x9b", "\\x9b"),
        ("\u061c", "\\u061c"),
        ("\u200e", "\\u200e"),
        ("\u200f", "\\u200f"),
        ("\u202a", "\\u202a"),
        ("\u202e", "\\u202e"),
        ("\u2066", "\\u2066"),
        ("\u2069", "\\u2069"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
        ("\udc9b", "\\udc9b"),  # a file name byte that is not UTF-8, as Python decodes it
        *INVISIBLE,
    ],
)
def test_escape_shows_each_control_character_as_a_visible_escape(char: str, shown: str) -> None:
    assert escape(f"a{char}b") == f"a{shown}b"


def test_escape_leaves_printable_text_alone() -> None:
    text = "café → 数学 ≤ ½ `O(n²)` C:\\path\\x1b"
    assert escape(text) == text


def test_each_ascii_character_is_shown_as_itself_unless_it_is_a_control() -> None:
    for code in range(0x80):
        char = chr(code)
        shown = char if 0x20 <= code <= 0x7E else f"\\x{code:02x}"
        assert escape(f"a{char}b") == f"a{shown}b", code
        if char != "\n":
            assert escape_lines([f"a{char}b", "c"]) == f"a{shown}b\nc\n", code


def test_escape_of_a_diagnostic_shows_newlines_and_tabs_too() -> None:
    assert escape("a\nb\tc") == "a\\x0ab\\x09c"


def test_escape_of_answer_text_keeps_newlines_tabs_and_crlf() -> None:
    assert escape("a\n\tb\r\nc\rd\x1b", multiline=True) == "a\n\tb\r\nc\\x0dd\\x1b"


# --------------------------------------------------------------------------- server errors


@pytest.mark.parametrize(
    ("body", "content_type"),
    [
        pytest.param(json.dumps({"error": HOSTILE}), "application/json", id="json-error"),
        pytest.param(
            json.dumps({"error": {"message": HOSTILE}}), "application/json", id="openai-error"
        ),
        pytest.param(HOSTILE, "text/plain", id="plain-body"),
        pytest.param(f"<html><title>{HOSTILE}</title></html>", "text/html", id="html-title"),
    ],
)
def test_server_error_text_is_printed_with_control_characters_escaped(
    repo: Path, make_stub: MakeStub, cli: Cli, body: str, content_type: str
) -> None:
    stub = make_stub([Reply(400, body.encode(), content_type=content_type)])
    r = review(cli, stub, "--max-attempts", "1", as_json=False)
    assert r.code == 5, r.err
    assert SHOWN in error_line(r.err)
    assert_no_raw_controls(r.err)


def test_server_error_in_a_stream_is_printed_escaped(
    repo: Path, make_stub: MakeStub, cli: Cli
) -> None:
    body = b"data: " + json.dumps({"error": HOSTILE}).encode() + b"\n\ndata: [DONE]\n\n"
    stub = make_stub([Reply(200, body, content_type="text/event-stream")])
    r = review(cli, stub, "--max-attempts", "1", "--stream", as_json=False)
    assert r.code == 6, r.err
    assert SHOWN in error_line(r.err)
    assert_no_raw_controls(r.err)


def test_verbose_traceback_shows_the_server_text_escaped(
    repo: Path, make_stub: MakeStub, cli: Cli
) -> None:
    stub = make_stub([Reply(400, json.dumps({"error": HOSTILE}).encode())])
    r = review(cli, stub, "--max-attempts", "1", "--verbose", as_json=False)
    assert r.code == 5, r.err
    assert "Traceback" in r.err and SHOWN in r.err
    assert_no_raw_controls(r.err)


def test_batch_warning_for_a_failed_entry_shows_the_server_text_escaped(
    repo: Path, make_stub: MakeStub, cli: Cli
) -> None:
    stub = make_stub([Reply(400, json.dumps({"error": HOSTILE}).encode())])
    (repo / "reviews.toml").write_text(
        '[[review]]\ntopic = "a"\nprompt = "Check."\ncontext = "docs/spec.md"\n'
    )
    r = cli("batch", "reviews.toml", "--endpoint", stub.base_url, "--max-attempts", "1")
    assert r.code == 11, r.err
    assert SHOWN in r.err  # the warning naming the failed entry
    assert_no_raw_controls(r.err)


def test_error_naming_a_context_path_shows_it_escaped(repo: Path, cli: Cli) -> None:
    r = cli("run", "-c", HOSTILE, "-p", "x", "--endpoint", "http://127.0.0.1:9", "--dry-run")
    assert r.code == 3, r.err
    assert SHOWN in error_line(r.err)
    assert_no_raw_controls(r.err)


@pytest.mark.parametrize(("char", "shown"), INVISIBLE)
def test_escape_keeps_the_joiners_that_spell_words(char: str, shown: str) -> None:
    assert escape(f"\u0645\u200c\u06cc{char}") == f"\u0645\u200c\u06cc{shown}"


@pytest.mark.parametrize(("char", "shown"), INVISIBLE)
def test_json_safe_spells_an_invisible_character_as_an_escape_that_decodes_back(
    char: str, shown: str
) -> None:
    dumped = json_safe(json.dumps({"path": f"a{char}b"}, ensure_ascii=False))
    assert char not in dumped
    assert json.loads(dumped) == {"path": f"a{char}b"}


def _commit_a_file_named(repo: Path, name: str) -> None:
    commit(repo, "base", {})
    commit(repo, "an invisible name", {name: "x = 1\n"})


@pytest.mark.parametrize(("char", "shown"), INVISIBLE)
def test_a_diff_error_names_a_file_with_an_invisible_character_escaped(
    repo: Path, cli: Cli, char: str, shown: str
) -> None:
    _commit_a_file_named(repo, f"uni/zw{char}sp.py")
    r = cli("run", "--diff", "HEAD~1..HEAD", "-p", "x", "--dry-run")
    assert r.code == 3, r.err
    assert f"uni/zw{shown}sp.py: name holds control characters" in r.err
    assert char not in r.err


@pytest.mark.parametrize(("char", "shown"), INVISIBLE)
def test_a_context_error_names_a_file_with_an_invisible_character_escaped(
    repo: Path, cli: Cli, char: str, shown: str
) -> None:
    _commit_a_file_named(repo, f"uni/zw{char}sp.py")
    r = cli("run", "-c", f"uni/zw{char}sp.py", "-p", "x", "--dry-run")
    assert r.code == 3, r.err
    assert f"'uni/zw{shown}sp.py'" in r.err
    assert char not in r.err


@pytest.mark.parametrize(("char", "shown"), INVISIBLE)
def test_a_folder_of_only_badly_named_files_is_refused_naming_one_escaped(
    repo: Path, cli: Cli, char: str, shown: str
) -> None:
    _commit_a_file_named(repo, f"uni/zw{char}sp.py")
    r = cli("run", "-c", "uni", "-p", "x", "--dry-run")
    assert r.code == 3, r.err
    assert f"uni/zw{shown}sp.py: name holds control characters" in r.err
    assert char not in r.err


# --------------------------------------------------------------------------- show


def _hostile_chain(repo: Path, make_stub: MakeStub, cli: Cli) -> str:
    stub = make_stub([Reply(200, completion(ANSWER))])
    r = review(cli, stub, "--max-attempts", "1", "--no-stream")
    assert r.code == 0, r.err
    answer_path: str = r.json()["segments"][0]["answer_path"]
    assert (repo / answer_path).read_text(encoding="utf-8") == ANSWER  # kept byte for byte
    return answer_path


def _show_on_a_terminal(repo: Path, answer_path: str) -> bytes:
    """``show`` run as its own process with stdout on a pseudo-terminal; what it wrote."""
    master, slave = pty.openpty()
    tty.setraw(slave)  # no "\n" -> "\r\n" translation: compare the bytes the tool wrote
    proc = subprocess.Popen(
        [sys.executable, "-m", "deepseek_review", "show", answer_path],
        cwd=repo,
        stdout=slave,
        stderr=subprocess.PIPE,
    )
    os.close(slave)
    try:
        out = read_until_closed(master)
    finally:
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == 0, err
    return out


def test_show_on_a_terminal_escapes_control_characters_and_keeps_the_lines(
    repo: Path, make_stub: MakeStub, cli: Cli
) -> None:
    answer_path = _hostile_chain(repo, make_stub, cli)
    out = _show_on_a_terminal(repo, answer_path).decode("utf-8")
    assert_no_raw_controls(out)
    assert out == ("# Review\n\n\tfine\\x1b]52;c;cm0gLXJmIH4=\\x07\n" + SHOWN + "\n")


def test_show_piped_writes_the_exact_answer_bytes(
    repo: Path, make_stub: MakeStub, cli: Cli
) -> None:
    answer_path = _hostile_chain(repo, make_stub, cli)
    proc = subprocess.run(
        [sys.executable, "-m", "deepseek_review", "show", answer_path],
        cwd=repo,
        capture_output=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == ANSWER.encode("utf-8")


# --------------------------------------------------------------------------- receipts, files


def _receipt_with_model(repo: Path, model: str) -> None:
    answer = b"An answer.\n"
    (repo / "reviews").mkdir(exist_ok=True)
    (repo / "reviews" / "a.md").write_bytes(answer)
    data = primary_receipt("reviews/a.md", answer, ["docs/spec.md"])
    data["model"] = model
    write_receipt(repo, "reviews/a.receipt.json", data)


def test_stats_shows_a_receipt_model_escaped(repo: Path, cli: Cli) -> None:
    _receipt_with_model(repo, HOSTILE)
    r = cli("stats")
    assert r.code == 0, r.err
    assert SHOWN in r.out
    assert_no_raw_controls(r.out)


def test_stats_json_carries_the_exact_model_without_raw_control_characters(
    repo: Path, cli: Cli
) -> None:
    _receipt_with_model(repo, HOSTILE)
    r = cli("stats", "--json")
    assert r.code == 0, r.err
    assert_no_raw_controls(r.out)
    assert list(r.json()["by_model"]) == [HOSTILE]


def test_verify_shows_a_receipt_file_name_escaped(repo: Path, cli: Cli) -> None:
    answer = b"An answer.\n"
    name = "evil\x1b]0;pwned\x07\x9b\u202e"
    (repo / "reviews").mkdir()
    (repo / "reviews" / f"{name}.md").write_bytes(answer)
    data = primary_receipt(f"reviews/{name}.md", answer, ["docs/spec.md"])
    data["answer_sha256"] = sha(b"another answer")
    write_receipt(repo, f"reviews/{name}.receipt.json", data)
    r = cli("verify")
    assert r.code == 9, r.err
    assert "FAIL reviews/evil\\x1b]0;pwned\\x07\\x9b\\u202e.receipt.json" in r.err
    assert_no_raw_controls(r.err)


def test_config_shows_a_config_file_value_escaped(repo: Path, cli: Cli) -> None:
    (repo / ".deepseek-review.toml").write_text(
        'model = "m\\u001b]0;pwned\\u0007 \\u009b \\u202e"\n', encoding="utf-8"
    )
    r = cli("config")
    assert r.code == 0, r.err
    assert "m\\x1b]0;pwned\\x07 \\x9b \\u202e" in r.out
    assert_no_raw_controls(r.out)


def test_config_json_carries_the_exact_value_without_raw_control_characters(
    repo: Path, cli: Cli
) -> None:
    (repo / ".deepseek-review.toml").write_text(
        'model = "m\\u001b \\u009b \\u202e \\u2028"\n', encoding="utf-8"
    )
    r = cli("config", "--json")
    assert r.code == 0, r.err
    assert_no_raw_controls(r.out)
    assert "\u2028" not in r.out
    assert r.json()["settings"]["model"]["value"] == "m\x1b \x9b \u202e \u2028"


@pytest.mark.parametrize(
    "lines",
    [
        [],
        [""],
        ["plain", "two"],
        ["tab\there", "cr\rthere", "esc \x1b[2J", "bidi \u202e", "lone \udcff"],
        ["a name with\na newline", "next"],
        ["ends with newline\n"],
        ["", "", "\n"],
    ],
)
def test_lines_escaped_together_are_each_line_escaped_alone(lines: list[str]) -> None:
    assert escape_lines(lines) == "".join(escape(line) + "\n" for line in lines)
