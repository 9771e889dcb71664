"""Bad input across every command, as one table: the cross-command specification of failure.

Each case builds its bad input in a fresh repository, runs one command, and requires:

* the documented exit code (2 usage/config, 3 bad input, 5 server, 6 bad response, 9
  verification, 10 output);
* stderr ending in exactly ONE line ``deepseek-review: error: ...`` that names what and where
  (a distinctive substring: the path, option, entry, field); for refusals made before any work
  it is the only line; no traceback;
* nothing written: no file under the repository added, changed or removed, and no temporary
  ``.deepseek-review-*.tmp`` file anywhere;
* nothing outside the repository opened or listed (a sentinel folder beside it, which hostile
  receipts and paths point at, is watched through ``os.open``, ``open``, ``os.scandir`` and
  ``os.listdir``);
* no request sent when the refusal is a pre-flight one (``httpx`` is watched);
* and once more with ``--json`` where the command has it: stdout is empty or one whole JSON
  value, never half an object.

A few cases run with ``--verbose``, where the traceback is allowed and expected.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from deepseek_review.records.request_record import RECORD_SCHEMA
from deepseek_review.testing.simulator import Simulator
from tests.support.builders import continuation_receipt, primary_receipt, sha
from tests.support.stubs import Reply, Stub

Cli = Callable[..., Any]
MakeSim = Callable[..., Simulator]
FAST = ("--max-attempts", "1", "--retry-wait", "0.01")
ERROR = "deepseek-review: error: "


# --------------------------------------------------------------------------- the world


@dataclass
class World:
    """One case's surroundings: the repository, the sentinel outside it, servers, the CLI."""

    repo: Path
    outside: Path
    """A folder beside the repository; nothing may ever open or list anything in it."""
    cli: Cli
    make_simulator: MakeSim
    monkeypatch: pytest.MonkeyPatch
    stubs: list[Stub] = field(default_factory=list)

    @property
    def secret(self) -> Path:
        return self.outside / "secret.md"

    @property
    def secret_rel(self) -> str:
        return os.path.relpath(self.secret, self.repo)

    def write(self, rel: str, data: str | bytes) -> Path:
        path = self.repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(data, str):
            data = data.encode("utf-8")
        path.write_bytes(data)
        return path

    def env(self, name: str, value: str) -> None:
        self.monkeypatch.setenv(name, value)

    def sim(self, **knobs: Any) -> str:
        return self.make_simulator(**knobs).base_url

    def faulty(self, kind: str) -> str:
        """A simulator whose every answer is the fault ``kind``."""
        return self.sim(fault_rate=1.0, fault_kinds=(kind,))

    def stub(self, status: int, body: bytes, content_type: str) -> str:
        s = Stub([Reply(status, body, content_type=content_type)])
        self.stubs.append(s)
        return s.base_url

    def chain(self) -> list[str]:
        """A real review cut off once and continued (its receipts, primary first)."""
        r = self.cli(
            "run",
            "-c",
            "docs/spec.md",
            "-p",
            "Check the mean.",
            "--endpoint",
            self.sim(answer_words=60),
            "--max-tokens",
            "40",
            "--max-continuations",
            "1",
            "--json",
            *FAST,
        )
        assert r.code == 0, r.err
        return [s["receipt_path"] for s in r.json()["segments"]]

    def receipt(self, rel: str) -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.repo / rel).read_text(encoding="utf-8"))
        return data

    def put_receipt(self, rel: str, data: dict[str, Any]) -> None:
        self.write(rel, json.dumps(data, indent=2) + "\n")

    def record_of(self, receipt_rel: str) -> Path:
        return self.repo / receipt_rel.replace(".receipt.json", ".request.json")


# --------------------------------------------------------------------------- the table


Setup = Callable[[World], list[str]]


@dataclass(frozen=True)
class Case:
    id: str
    code: int
    needle: str | Callable[[World], str]
    """A distinctive part of the error line: what failed and where."""
    setup: Setup
    """Builds the bad input; returns the command line (global options first)."""
    json: bool = True
    """The command has ``--json``: the case runs a second time with it."""
    alone: bool = True
    """The error line is all of stderr (False: log lines, verify's per-receipt lines or a
    manifest's problem lines may come before it)."""
    sends: bool = False
    """Requests may be sent (a server answer case); otherwise none may be."""
    verbose: bool = False
    """``--verbose``: the traceback is expected."""
    absent: tuple[str, ...] = ()
    """Texts that must appear nowhere in the output (a credential, say)."""
    xfail: str | None = None


CASES: list[Case] = []


def case(
    id: str, code: int, needle: str | Callable[[World], str], **kw: Any
) -> Callable[[Setup], Setup]:
    if kw.get("sends"):
        kw.setdefault("alone", False)  # "sending N context files ..." comes first

    def add(setup: Setup) -> Setup:
        CASES.append(Case(id, code, needle, setup, **kw))
        return setup

    return add


def run(*args: str, prompt: str = "Check the mean.") -> list[str]:
    """``run`` with a prompt; the endpoint is the default one (nothing listens there)."""
    return ["run", "-p", prompt, *args]


def spec(*args: str, prompt: str = "Check the mean.") -> list[str]:
    return run("-c", "docs/spec.md", *args, prompt=prompt)


# ----------------------------------------------------------------- run: context paths


@case("run/prompt-file-endless", 3, "--prompt-file /dev/zero: over --max-context-bytes 1000")
def _(w: World) -> list[str]:
    return [
        "run",
        "-c",
        "docs/spec.md",
        "--prompt-file",
        "/dev/zero",
        "--max-context-bytes",
        "1000",
    ]


@case("run/path-absolute-elsewhere", 3, lambda w: f"context path {w.secret}: outside")
def _(w: World) -> list[str]:
    return run("-c", str(w.secret))


@case("run/path-dotdot", 3, lambda w: f"context path {w.secret_rel}: outside")
def _(w: World) -> list[str]:
    return run("-c", w.secret_rel)


@case("run/path-symlinked-file-out", 3, "docs/link.md: a symlink leads outside")
def _(w: World) -> list[str]:
    (w.repo / "docs" / "link.md").symlink_to(w.secret)
    return run("-c", "docs/link.md")


@case("run/path-symlinked-folder-out", 3, "context path escape: a symlink leads outside")
def _(w: World) -> list[str]:
    (w.repo / "escape").symlink_to(w.outside)
    return run("-c", "escape")


@case("run/path-through-symlinked-folder", 3, "escape/secret.md: a symlink leads outside")
def _(w: World) -> list[str]:
    (w.repo / "escape").symlink_to(w.outside)
    return run("-c", "escape/secret.md")


@case("run/path-symlink-out-found-by-glob", 3, "docs/link.md: a symlink leads outside")
def _(w: World) -> list[str]:
    (w.repo / "docs" / "link.md").symlink_to(w.secret)
    return run("-c", "docs/link*.md")  # left out, and nothing else matches


@case("run/path-glob-dotdot", 3, "must stay inside the repository root")
def _(w: World) -> list[str]:
    return run("-c", "../*/secret.md")


@case("run/path-missing", 3, "context path docs/none.md: no such file")
def _(w: World) -> list[str]:
    return run("-c", "docs/none.md")


@case("run/path-empty-string", 3, "context path is empty")
def _(w: World) -> list[str]:
    return run("-c", "")


@case("run/path-binary", 3, "docs/bin.md: binary (NUL byte at offset 2)")
def _(w: World) -> list[str]:
    w.write("docs/bin.md", b"ab\x00cd")
    return run("-c", "docs/bin.md")


@case("run/path-not-utf8", 3, "docs/latin1.md: not UTF-8 (invalid byte at offset 3)")
def _(w: World) -> list[str]:
    w.write("docs/latin1.md", "caf\u00e9 au lait".encode("latin-1"))
    return run("-c", "docs/latin1.md")


@case("run/path-huge", 3, "docs/huge.md: 200001 bytes is over --max-file-bytes 200000")
def _(w: World) -> list[str]:
    w.write("docs/huge.md", "a" * 200_001)
    return run("-c", "docs/huge.md")


@case(
    "run/path-over-max-file-bytes-option", 3, "docs/spec.md: 61 bytes is over --max-file-bytes 10"
)
def _(w: World) -> list[str]:
    return spec("--max-file-bytes", "10")


@case("run/context-total-over-limit", 3, "over --max-context-bytes 100")
def _(w: World) -> list[str]:
    return run("-c", "docs/spec.md", "-c", "src", "--max-context-bytes", "100")


@case("run/path-empty-file", 3, "docs/empty.md: is empty")
def _(w: World) -> list[str]:
    w.write("docs/empty.md", b"")
    return run("-c", "docs/empty.md")


@case("run/path-dev-null-via-symlink", 3, "docs/null.md: a symlink leads outside")
def _(w: World) -> list[str]:
    (w.repo / "docs" / "null.md").symlink_to("/dev/null")
    return run("-c", "docs/null.md")


@case("run/path-device-file", 3, "docs/zero: not a regular file")
def _(w: World) -> list[str]:
    try:
        os.mknod(w.repo / "docs" / "zero", 0o600 | stat.S_IFCHR, os.makedev(1, 5))
    except (PermissionError, OSError, AttributeError):
        pytest.skip("cannot make a device file here")
    return run("-c", "docs/zero")


@case("run/path-fifo", 3, "docs/pipe.md: not a regular file")
def _(w: World) -> list[str]:
    os.mkfifo(w.repo / "docs" / "pipe.md")
    return run("-c", "docs/pipe.md")


@case("run/path-name-with-newline", 3, "name holds control characters")
def _(w: World) -> list[str]:
    w.write("docs/a\nb.md", "text\n")
    return run("-c", "docs/a\nb.md")


@case("run/path-name-with-newline-in-folder", 3, "name holds control characters")
def _(w: World) -> list[str]:
    w.write("notes/a\nb.md", "text\n")
    return run("-c", "notes")


@case("run/path-inside-dot-git", 3, "context path .git/config: inside .git/")
def _(w: World) -> list[str]:
    return run("-c", ".git/config")


@case("run/glob-matching-nothing", 3, "context pattern docs/*.zzz: matches no file")
def _(w: World) -> list[str]:
    return run("-c", "docs/*.zzz")


# ----------------------------------------------------------------- run: prompts


@case("run/prompt-empty", 3, "the prompt is empty")
def _(w: World) -> list[str]:
    return spec(prompt="")


@case("run/prompt-whitespace-only", 3, "the prompt is empty")
def _(w: World) -> list[str]:
    return spec(prompt=" \n\t \n")


@case("run/prompt-with-nul", 3, "the prompt holds a NUL byte")
def _(w: World) -> list[str]:
    return spec(prompt="check\x00this")


@case("run/prompt-file-missing", 3, "--prompt-file docs/ask.txt: no such file")
def _(w: World) -> list[str]:
    return ["run", "-c", "docs/spec.md", "--prompt-file", "docs/ask.txt"]


@case("run/prompt-file-not-utf8", 3, "--prompt-file docs/ask.txt: not UTF-8")
def _(w: World) -> list[str]:
    w.write("docs/ask.txt", b"\xff\xfe check")
    return ["run", "-c", "docs/spec.md", "--prompt-file", "docs/ask.txt"]


@case("run/prompt-file-is-a-folder", 3, "--prompt-file docs: cannot read")
def _(w: World) -> list[str]:
    return ["run", "-c", "docs/spec.md", "--prompt-file", "docs"]


@case("run/prompt-and-prompt-file", 2, "--prompt or --prompt-file, not both")
def _(w: World) -> list[str]:
    w.write("docs/ask.txt", "Check.\n")
    return spec("--prompt-file", "docs/ask.txt")


@case(
    "run/prompt-huge",
    3,
    "the prompt is 5000000 bytes, over --max-context-bytes 400000",
)
def _(w: World) -> list[str]:
    return spec("--endpoint", w.sim(), prompt="x" * 5_000_000)


# ----------------------------------------------------------------- run: endpoints


@case("run/endpoint-malformed", 2, "--endpoint 'http://[::1': malformed URL")
def _(w: World) -> list[str]:
    return spec("--endpoint", "http://[::1")


@case("run/endpoint-port-out-of-range", 2, "malformed URL (Port out of range")
def _(w: World) -> list[str]:
    return spec("--endpoint", "http://localhost:99999")


@case("run/endpoint-unsupported-scheme", 2, "unsupported scheme 'ftp'")
def _(w: World) -> list[str]:
    return spec("--endpoint", "ftp://example.com/v1")


@case("run/endpoint-bare-host-bad-port", 2, "--endpoint 'localhost:port': invalid port 'port'")
def _(w: World) -> list[str]:
    return spec("--endpoint", "localhost:port")


@case("run/endpoint-no-host", 2, "--endpoint http://: no host")
def _(w: World) -> list[str]:
    return spec("--endpoint", "http://")


@case("run/endpoint-space-in-host", 2, "--endpoint 'http://exa mple.com': malformed URL")
def _(w: World) -> list[str]:
    return spec("--endpoint", "http://exa mple.com")


@case("run/endpoint-newline-in-url", 2, "'http://exam\\nple.com': malformed URL (a space or")
def _(w: World) -> list[str]:
    return spec("--endpoint", "http://exam\nple.com")


@case(
    "run/endpoint-credentials",
    2,
    "--endpoint: credentials in the URL are refused",
    absent=("hunter2pass",),
)
def _(w: World) -> list[str]:
    return spec("--endpoint", "https://alice:hunter2pass@example.com")


@case(
    "run/endpoint-key-query-parameter",
    2,
    "query parameter 'api_key' looks like a credential",
    absent=("qk-31337-secret",),
)
def _(w: World) -> list[str]:
    return spec("--endpoint", "https://example.com/v1?api_key=qk-31337-secret")


@case(
    "run/endpoint-key-over-plain-http-remote",
    2,
    "refusing to send OLLAMA_API_KEY over plain http to 10.1.2.3",
    absent=("sk-bad-input-key",),
)
def _(w: World) -> list[str]:
    w.env("OLLAMA_API_KEY", "sk-bad-input-key")
    w.env("DEEPSEEK_REVIEW_API_KEY_ENV", "OLLAMA_API_KEY")
    return spec("--endpoint", "http://10.1.2.3:11434")


@case(
    "run/ollama-host-key-over-plain-http-remote",
    2,
    "over plain http to 10.1.2.3",
    absent=("sk-bad-input-key",),
)
def _(w: World) -> list[str]:
    w.env("OLLAMA_API_KEY", "sk-bad-input-key")
    w.env("DEEPSEEK_REVIEW_API_KEY_ENV", "OLLAMA_API_KEY")
    w.env("OLLAMA_HOST", "10.1.2.3")
    return spec()


@case("run/ollama-host-unsupported-scheme", 2, "OLLAMA_HOST 'ftp://x': unsupported scheme 'ftp'")
def _(w: World) -> list[str]:
    w.env("OLLAMA_HOST", "ftp://x")
    return spec()


@case("run/api-key-multiline", 2, "OLLAMA_API_KEY is set but is not a usable key")
def _(w: World) -> list[str]:
    w.env("OLLAMA_API_KEY", "sk-one\nsk-two")
    return spec()


@case("run/api-key-env-empty-name", 2, "--api-key-env '': not an environment variable name")
def _(w: World) -> list[str]:
    return spec("--api-key-env", "")


# ----------------------------------------------------------------- run: options


@case("run/max-tokens-zero", 2, "--max-tokens must be positive, got 0")
def _(w: World) -> list[str]:
    return spec("--max-tokens", "0")


@case("run/max-tokens-negative", 2, "--max-tokens must be positive, got -5")
def _(w: World) -> list[str]:
    return spec("--max-tokens", "-5")


@case("run/max-tokens-not-a-number", 2, "--max-tokens")
def _(w: World) -> list[str]:
    return spec("--max-tokens", "lots")


@case("run/max-file-bytes-zero", 2, "--max-file-bytes must be positive, got 0")
def _(w: World) -> list[str]:
    return spec("--max-file-bytes", "0")


@case("run/max-context-bytes-negative", 2, "--max-context-bytes must be positive, got -1")
def _(w: World) -> list[str]:
    return spec("--max-context-bytes", "-1")


@case("run/max-continuations-negative", 2, "--max-continuations must be 0 or more, got -1")
def _(w: World) -> list[str]:
    return spec("--max-continuations", "-1")


@case("run/max-attempts-zero", 2, "--max-attempts must be at least 1, got 0")
def _(w: World) -> list[str]:
    return spec("--max-attempts", "0")


@case("run/connect-timeout-negative", 2, "--connect-timeout must be a positive number of seconds")
def _(w: World) -> list[str]:
    return spec("--connect-timeout", "-1")


@case("run/read-timeout-zero", 2, "--read-timeout must be a positive number of seconds, got 0")
def _(w: World) -> list[str]:
    return spec("--read-timeout", "0")


@case("run/read-timeout-nan", 2, "--read-timeout must be a positive number of seconds, got nan")
def _(w: World) -> list[str]:
    return spec("--read-timeout", "nan")


@case("run/connect-timeout-infinite", 2, "--connect-timeout must be a positive number of seconds")
def _(w: World) -> list[str]:
    return spec("--connect-timeout", "inf")


@case("run/retry-wait-negative", 2, "--retry-wait must be 0 or more seconds, got -1")
def _(w: World) -> list[str]:
    return spec("--retry-wait", "-1")


@case("run/retry-wait-infinite", 2, "--retry-wait must be 0 or more seconds, got inf")
def _(w: World) -> list[str]:
    return spec("--retry-wait", "inf")


@case("run/temperature-too-high", 2, "--temperature must be between 0 and 2, got 5")
def _(w: World) -> list[str]:
    return spec("--temperature", "5")


@case("run/temperature-nan", 2, "--temperature must be between 0 and 2, got nan")
def _(w: World) -> list[str]:
    return spec("--temperature", "nan")


@case("run/context-window-zero", 2, "--context-window must be positive, got 0")
def _(w: World) -> list[str]:
    return spec("--context-window", "0")


@case("run/continuation-max-tokens-zero", 2, "--continuation-max-tokens must be positive")
def _(w: World) -> list[str]:
    return spec("--continuation-max-tokens", "0")


@case("run/continuation-style-unknown", 2, "--continuation-style must be one of prefill, directive")
def _(w: World) -> list[str]:
    return spec("--continuation-style", "telepathy")


@case("run/template-unknown", 2, "unknown template 'nope'; choose from")
def _(w: World) -> list[str]:
    return spec("--template", "nope")


@case("run/template-path-as-name", 2, "unknown template '../../etc/passwd'")
def _(w: World) -> list[str]:
    return spec("--template", "../../etc/passwd")


@case("run/template-file-missing", 3, "template file docs/t.md: no such file")
def _(w: World) -> list[str]:
    return spec("--template-file", "docs/t.md")


@case("run/template-file-without-sections", 2, "template docs/spec.md: needs a '<!-- user -->'")
def _(w: World) -> list[str]:
    return spec("--template-file", "docs/spec.md")


@case("run/template-and-template-file", 2, "--template and --template-file cannot be used")
def _(w: World) -> list[str]:
    return spec("--template", "default", "--template-file", "docs/spec.md")


@case("run/server-unknown", 2, "--server must be one of ollama, llama.cpp, vllm, deepseek")
def _(w: World) -> list[str]:
    return spec("--server", "openai-ish")


@case("run/extra-body-not-json", 2, "--extra-body: not JSON")
def _(w: World) -> list[str]:
    return spec("--extra-body", "{reasoning: none}")


@case("run/extra-body-not-an-object", 2, "--extra-body: must be a JSON object")
def _(w: World) -> list[str]:
    return spec("--extra-body", '["reasoning"]')


@case("run/extra-body-overrides-model", 2, "--extra-body may not set 'model'")
def _(w: World) -> list[str]:
    return spec("--extra-body", '{"model": "other"}')


@case("run/extra-body-nan", 2, "--extra-body: NaN or Infinity is not JSON")
def _(w: World) -> list[str]:
    return spec("--extra-body", '{"top_p": NaN}')


@case(
    "run/continuation-extra-body-overrides-messages",
    2,
    "--continuation-extra-body may not set 'messages'",
)
def _(w: World) -> list[str]:
    return spec(
        "--endpoint",
        w.sim(answer_words=60),
        "--max-tokens",
        "20",
        "--continuation-extra-body",
        '{"messages": []}',
        *FAST,
    )


@case("run/topic-with-slash", 2, "--topic '../x': use letters")
def _(w: World) -> list[str]:
    return spec("--topic", "../x")


@case("run/output-dir-outside", 3, "--output-dir ../out: outside the repository root")
def _(w: World) -> list[str]:
    return spec("--output-dir", "../out")


@case("run/output-dir-symlink-out", 3, "--output-dir escape: a symlink leads outside")
def _(w: World) -> list[str]:
    (w.repo / "escape").symlink_to(w.outside)
    return spec("--output-dir", "escape")


@case("run/repo-root-missing", 2, "--repo-root nowhere: not a folder")
def _(w: World) -> list[str]:
    return spec("--repo-root", "nowhere")


@case("run/unknown-option", 2, "--no-such-option")
def _(w: World) -> list[str]:
    return spec("--no-such-option")


@case(
    "config/unknown-setting",
    2,
    ".deepseek-review.toml modle: unknown setting (did you mean 'model'?)",
)
def _(w: World) -> list[str]:
    w.write(".deepseek-review.toml", 'modle = "x"\n')
    return spec()  # `config` shows it and exits 2: tests/options/test_option_sources.py


@case(
    "config/env-setting-not-a-number",
    2,
    "DEEPSEEK_REVIEW_MAX_TOKENS must be an integer, not 'lots'",
)
def _(w: World) -> list[str]:
    w.env("DEEPSEEK_REVIEW_MAX_TOKENS", "lots")
    return spec()


@case("config/file-malformed", 2, ".deepseek-review.toml: not valid TOML")
def _(w: World) -> list[str]:
    w.write(".deepseek-review.toml", "model = [unclosed\n")
    return spec()


# ----------------------------------------------------------------- run: server answers


@case("run/answer-html-error-page", 5, "answered 502: HTML page (502 Bad Gateway)", sends=True)
def _(w: World) -> list[str]:
    return spec("--endpoint", w.faulty("html"), *FAST)


@case("run/answer-html-with-200", 6, "answer is not JSON (HTML page (Welcome))", sends=True)
def _(w: World) -> list[str]:
    page = b"<html><head><title>Welcome</title></head><body>hi</body></html>"
    return spec("--endpoint", w.stub(200, page, "text/html"), "--no-stream", *FAST)


@case("run/answer-empty-body", 6, "answer is not JSON (empty body)", sends=True)
def _(w: World) -> list[str]:
    return spec("--endpoint", w.faulty("empty"), *FAST)


@case("run/answer-no-choices", 6, "unusable answer: no choices", sends=True)
def _(w: World) -> list[str]:
    return spec("--endpoint", w.faulty("no-choices"), "--no-stream", *FAST)


@case("run/answer-no-choices-streamed", 6, "stream ended without its finish chunk", sends=True)
def _(w: World) -> list[str]:
    return spec("--endpoint", w.faulty("no-choices"), *FAST)


@case("run/answer-content-missing", 6, "message.content is missing", sends=True)
def _(w: World) -> list[str]:
    return spec("--endpoint", w.faulty("content-missing"), "--no-stream", *FAST)


@case("run/answer-content-missing-streamed", 6, "stream carried no message content", sends=True)
def _(w: World) -> list[str]:
    return spec("--endpoint", w.faulty("content-missing"), *FAST)


@case("run/answer-content-not-string", 6, "message.content is int, not a string", sends=True)
def _(w: World) -> list[str]:
    return spec("--endpoint", w.faulty("content-not-string"), "--no-stream", *FAST)


@case("run/answer-content-not-string-streamed", 6, "delta.content is not a string", sends=True)
def _(w: World) -> list[str]:
    return spec("--endpoint", w.faulty("content-not-string"), *FAST)


@case("run/answer-negative-usage", 6, "usage.prompt_tokens is -5", sends=True)
def _(w: World) -> list[str]:
    return spec("--endpoint", w.faulty("negative-usage"), "--no-stream", *FAST)


@case("run/answer-gigantic", 6, "response body over 33554432 bytes", sends=True)
def _(w: World) -> list[str]:
    return spec("--endpoint", w.faulty("huge"), *FAST)


@case("run/answer-not-json-object", 6, "unusable answer: body is not a JSON object", sends=True)
def _(w: World) -> list[str]:
    return spec("--endpoint", w.stub(200, b"[1, 2, 3]", "application/json"), "--no-stream", *FAST)


@case("run/server-connection-refused", 5, "cannot reach http://127.0.0.1:9/", sends=True)
def _(w: World) -> list[str]:
    return spec("--endpoint", "http://127.0.0.1:9", *FAST)


@case("run/answer-cut-off-mid-stream", 6, "the answer broke off before its end", sends=True)
def _(w: World) -> list[str]:
    return spec("--endpoint", w.faulty("cut-stream"), *FAST)


# ----------------------------------------------------------------- show


def _hostile_answer(w: World) -> str:
    """A schema-valid receipt whose answer lies outside the root, hashed as if it were its."""
    rel = "reviews/evil.receipt.json"
    w.put_receipt(rel, primary_receipt(w.secret_rel, w.secret.read_bytes(), ["docs/spec.md"]))
    return rel


def _hostile_previous(w: World) -> str:
    """A continuation receipt that claims to continue a file outside the root."""
    w.write("reviews/c.md", "go on\n")
    rel = "reviews/c.receipt.json"
    w.put_receipt(rel, continuation_receipt("reviews/c.md", b"go on\n", w.secret_rel))
    return rel


def _absolute_answer(w: World) -> str:
    rel = "reviews/abs.receipt.json"
    w.put_receipt(rel, primary_receipt(str(w.secret), w.secret.read_bytes(), ["docs/spec.md"]))
    return rel


def _symlinked_answer(w: World) -> str:
    (w.repo / "reviews").mkdir(exist_ok=True)
    (w.repo / "reviews" / "link.md").symlink_to(w.secret)
    rel = "reviews/link.receipt.json"
    w.put_receipt(rel, primary_receipt("reviews/link.md", w.secret.read_bytes(), ["docs/spec.md"]))
    return rel


@case("show/missing", 3, "reviews/none.receipt.json: no such file or folder", json=False)
def _(w: World) -> list[str]:
    return ["show", "reviews/none.receipt.json"]


@case("show/not-json", 3, "reviews/x.receipt.json: not JSON", json=False)
def _(w: World) -> list[str]:
    w.write("reviews/x.receipt.json", "{not json")
    return ["show", "reviews/x.receipt.json"]


@case("show/wrong-schema", 3, "reviews/x.receipt.json: not a valid receipt: $.schema", json=False)
def _(w: World) -> list[str]:
    w.put_receipt("reviews/x.receipt.json", {"schema": "something_else", "answer_path": "x.md"})
    return ["show", "reviews/x.receipt.json"]


@case("show/not-a-receipt-or-answer", 3, "docs/spec.txt: expected a receipt", json=False)
def _(w: World) -> list[str]:
    w.write("docs/spec.txt", "x\n")
    return ["show", "docs/spec.txt"]


@case("show/answer-without-receipt", 3, "docs/spec.md: no receipt beside it", json=False)
def _(w: World) -> list[str]:
    return ["show", "docs/spec.md"]


@case("show/path-outside", 3, "outside the repository root", json=False)
def _(w: World) -> list[str]:
    return ["show", str(w.secret)]


@case("show/hostile-answer-path", 9, lambda w: f"answer {w.secret_rel}: outside", json=False)
def _(w: World) -> list[str]:
    return ["show", _hostile_answer(w)]


@case("show/absolute-answer-path", 3, "not a valid receipt: $.answer_path", json=False)
def _(w: World) -> list[str]:
    return ["show", _absolute_answer(w)]


@case("show/answer-symlink-out", 9, "reviews/link.md: a symlink leads outside", json=False)
def _(w: World) -> list[str]:
    return ["show", _symlinked_answer(w)]


@case(
    "show/hostile-previous-answer-path",
    3,
    lambda w: f"reviews/c.receipt.json: previous_answer_path {w.secret_rel}: outside",
    json=False,
)
def _(w: World) -> list[str]:
    return ["show", _hostile_previous(w)]


@case(
    "show/receipt-is-a-fifo",
    3,
    "reviews/x.receipt.json: cannot read (not a regular file)",
    json=False,
)
def _(w: World) -> list[str]:
    (w.repo / "reviews").mkdir()
    os.mkfifo(w.repo / "reviews" / "x.receipt.json")
    return ["show", "reviews/x.receipt.json"]


@case("show/answer-is-a-fifo", 9, "reviews/pipe.md: cannot read (not a regular file)", json=False)
def _(w: World) -> list[str]:
    (w.repo / "reviews").mkdir()
    os.mkfifo(w.repo / "reviews" / "pipe.md")
    w.put_receipt("reviews/pipe.receipt.json", primary_receipt("reviews/pipe.md", b"", ["a.md"]))
    return ["show", "reviews/pipe.receipt.json"]


@case("show/record-is-a-fifo", 3, ".request.json: cannot read (not a regular file)", json=False)
def _(w: World) -> list[str]:
    first = w.chain()[0]
    w.record_of(first).unlink()
    os.mkfifo(w.record_of(first))
    return ["show", first]


# ----------------------------------------------------------------- continue


@case("continue/missing", 3, "reviews/none.md: no such file or folder")
def _(w: World) -> list[str]:
    return ["continue", "reviews/none.md"]


@case("continue/not-json", 3, "reviews/x.receipt.json: not JSON")
def _(w: World) -> list[str]:
    w.write("reviews/x.receipt.json", b"\x00\x01garbage")
    return ["continue", "reviews/x.receipt.json"]


@case("continue/hostile-answer-path", 9, lambda w: f"answer {w.secret_rel}: outside")
def _(w: World) -> list[str]:
    return ["continue", _hostile_answer(w), "--force"]


@case(
    "continue/hostile-previous-answer-path",
    3,
    lambda w: f"reviews/c.receipt.json: previous_answer_path {w.secret_rel}: outside",
)
def _(w: World) -> list[str]:
    return ["continue", _hostile_previous(w)]


@case("continue/record-not-json", 3, "request record is not JSON")
def _(w: World) -> list[str]:
    first = w.chain()[0]
    w.record_of(first).write_text("{", encoding="utf-8")
    return ["continue", first, "--force"]


@case("continue/record-without-messages", 3, "request record: body has no messages list")
def _(w: World) -> list[str]:
    first = w.chain()[0]
    record = json.loads(w.record_of(first).read_text(encoding="utf-8"))
    del record["body"]["messages"]
    w.record_of(first).write_text(json.dumps(record), encoding="utf-8")
    return ["continue", first, "--force"]


@case("continue/record-with-bad-temperature", 3, "request record: body.temperature")
def _(w: World) -> list[str]:
    first = w.chain()[0]
    record = json.loads(w.record_of(first).read_text(encoding="utf-8"))
    record["body"]["temperature"] = "hot"
    w.record_of(first).write_text(json.dumps(record), encoding="utf-8")
    return ["continue", first, "--force"]


@case("continue/record-references-outside", 3, lambda w: f"{w.secret_rel} (outside the repository")
def _(w: World) -> list[str]:
    first = w.chain()[0]
    record = json.loads(w.record_of(first).read_text(encoding="utf-8"))
    for message in record["body"]["messages"]:
        if isinstance(message["content"], dict):
            for part in message["content"]["$parts"]:
                if isinstance(part, dict):
                    part["$file"].update(path=w.secret_rel, sha256=sha(w.secret.read_bytes()))
    w.record_of(first).write_text(json.dumps(record), encoding="utf-8")
    return ["continue", first, "--force"]


@case(
    "continue/receipt-endpoint-with-token",
    2,
    "reviews/p.receipt.json: endpoint: query parameter 'token' looks like a credential",
    absent=("tk-in-receipt",),
)
def _(w: World) -> list[str]:
    w.write("reviews/p.md", "half an answer\n")
    receipt = primary_receipt("reviews/p.md", b"half an answer\n", ["docs/spec.md"])
    receipt["endpoint"] = "https://models.example/v1/chat/completions?token=tk-in-receipt"
    w.put_receipt("reviews/p.receipt.json", receipt)
    return ["continue", "reviews/p.md"]


@case("continue/endpoint-unsupported-scheme", 2, "unsupported scheme 'ftp'")
def _(w: World) -> list[str]:
    return ["continue", w.chain()[0], "--force", "--endpoint", "ftp://example.com"]


@case("continue/max-attempts-zero", 2, "--max-attempts must be at least 1, got 0")
def _(w: World) -> list[str]:
    return ["continue", w.chain()[0], "--force", "--max-attempts", "0"]


# ----------------------------------------------------------------- verify


@case("verify/missing-path", 3, "reviews/none.receipt.json: no such file or folder")
def _(w: World) -> list[str]:
    return ["verify", "reviews/none.receipt.json"]


@case("verify/path-outside", 3, lambda w: f"PATH {w.outside}: outside the repository root")
def _(w: World) -> list[str]:
    return ["verify", str(w.outside)]


@case("verify/not-a-receipt", 3, "docs/spec.txt: expected a receipt")
def _(w: World) -> list[str]:
    w.write("docs/spec.txt", "x\n")
    return ["verify", "docs/spec.txt"]


@case("verify/receipt-not-json", 9, "1 of 1 receipt failed verification (schema: 1)", alone=False)
def _(w: World) -> list[str]:
    w.write("reviews/x.receipt.json", "[1, 2")
    return ["verify"]


@case("verify/receipt-wrong-schema", 9, "(schema: 1)", alone=False)
def _(w: World) -> list[str]:
    w.put_receipt("reviews/x.receipt.json", {"schema": "ollama_deepseek_review_receipt_v1"})
    return ["verify"]


@case("verify/hostile-answer-path", 9, "(answer: 1)", alone=False)
def _(w: World) -> list[str]:
    _hostile_answer(w)
    return ["verify"]


@case("verify/answer-symlink-out", 9, "(answer: 1)", alone=False)
def _(w: World) -> list[str]:
    _symlinked_answer(w)
    return ["verify"]


@case("verify/hostile-context-files", 9, "(context: 1)", alone=False)
def _(w: World) -> list[str]:
    w.write("reviews/x.md", "fine\n")
    w.put_receipt(
        "reviews/x.receipt.json", primary_receipt("reviews/x.md", b"fine\n", [w.secret_rel])
    )
    return ["verify"]


@case("verify/hostile-previous-answer-path", 9, "(chain: 1)", alone=False)
def _(w: World) -> list[str]:
    _hostile_previous(w)
    return ["verify"]


@case("verify/jobs-zero", 2, "--jobs")
def _(w: World) -> list[str]:
    return ["verify", "--jobs", "0"]


# ----------------------------------------------------------------- batch


def _manifest(w: World, text: str, name: str = "reviews.toml") -> list[str]:
    w.write(name, text)
    return ["batch", name]


GOOD_ENTRY = '[[review]]\ntopic = "spec"\nprompt = "Check."\ncontext = "docs/spec.md"\n'


@case("batch/manifest-missing", 3, "manifest nope.toml: no such file")
def _(w: World) -> list[str]:
    return ["batch", "nope.toml"]


@case("batch/manifest-unknown-format", 2, "pass --format toml|jsonl")
def _(w: World) -> list[str]:
    return _manifest(w, GOOD_ENTRY, name="reviews.yaml")


@case("batch/manifest-not-utf8", 3, "manifest reviews.toml: not UTF-8")
def _(w: World) -> list[str]:
    w.write("reviews.toml", b'topic = "\xff"\n')
    return ["batch", "reviews.toml"]


@case("batch/toml-malformed", 3, "not valid TOML", alone=False)
def _(w: World) -> list[str]:
    return _manifest(w, '[[review]]\ntopic = "spec\n')


@case("batch/wrong-type", 3, "max_tokens must be an integer, not a string ('lots')", alone=False)
def _(w: World) -> list[str]:
    return _manifest(w, GOOD_ENTRY + 'max_tokens = "lots"\n')


@case("batch/duplicate-topics", 3, "duplicate topic 'spec'", alone=False)
def _(w: World) -> list[str]:
    return _manifest(w, GOOD_ENTRY + "\n" + GOOD_ENTRY)


@case("batch/unknown-key", 3, "unknown key 'modle' (did you mean 'model'?)", alone=False)
def _(w: World) -> list[str]:
    return _manifest(w, GOOD_ENTRY + 'modle = "x"\n')


@case("batch/missing-prompt", 3, "missing 'prompt' (or 'prompt_file')", alone=False)
def _(w: World) -> list[str]:
    return _manifest(w, '[[review]]\ntopic = "spec"\ncontext = "docs/spec.md"\n')


@case("batch/jsonl-broken-line", 3, "line 2", alone=False)
def _(w: World) -> list[str]:
    good = json.dumps({"topic": "a", "prompt": "Check.", "context": "docs/spec.md"})
    return _manifest(w, good + '\n{"topic": "b", \n', name="reviews.jsonl")


@case(
    "batch/empty-manifest", 3, "no reviews: the manifest holds no [[review]] entries", alone=False
)
def _(w: World) -> list[str]:
    return _manifest(w, "# nothing yet\n")


@case("batch/context-outside", 3, "outside the repository root", alone=False)
def _(w: World) -> list[str]:
    return _manifest(w, GOOD_ENTRY.replace("docs/spec.md", w.secret_rel))


@case("batch/entry-remote-endpoint", 3, "the manifest may name only a loopback", alone=False)
def _(w: World) -> list[str]:
    w.env("OLLAMA_API_KEY", "sk-bad-input-key")
    return _manifest(w, GOOD_ENTRY + 'endpoint = "http://10.1.2.3:11434"\n')


@case("batch/jobs-zero", 2, "--jobs must be at least 1, got 0")
def _(w: World) -> list[str]:
    return [*_manifest(w, GOOD_ENTRY), "--jobs", "0"]


@case("batch/shard-out-of-range", 2, "--shard 5/2")
def _(w: World) -> list[str]:
    return [*_manifest(w, GOOD_ENTRY), "--shard", "5/2"]


@case("batch/report-folder-missing", 10, "--report nowhere/report.json: folder nowhere")
def _(w: World) -> list[str]:
    return [*_manifest(w, GOOD_ENTRY), "--report", "nowhere/report.json", "--endpoint", w.sim()]


# ----------------------------------------------------------------- --verbose


@case("verbose/run-missing-context", 3, "context path docs/none.md", verbose=True, alone=False)
def _(w: World) -> list[str]:
    return ["--verbose", *run("-c", "docs/none.md")]


@case("verbose/verify-missing-path", 3, "reviews/none: no such file", verbose=True, alone=False)
def _(w: World) -> list[str]:
    return ["--verbose", "verify", "reviews/none"]


@case("verbose/run-bad-answer", 6, "unusable answer: no choices", verbose=True, sends=True)
def _(w: World) -> list[str]:
    return ["--verbose", *spec("--endpoint", w.faulty("no-choices"), "--no-stream", *FAST)]


# --------------------------------------------------------------------------- watching


@dataclass
class Watch:
    """What the command touched: paths opened or listed, and HTTP requests sent."""

    opened: list[str] = field(default_factory=list)
    sent: list[str] = field(default_factory=list)


@pytest.fixture
def watch(monkeypatch: pytest.MonkeyPatch) -> Iterator[Watch]:
    w = Watch()

    def spy(real: Callable[..., Any]) -> Callable[..., Any]:
        def wrapper(path: Any = ".", *args: Any, **kwargs: Any) -> Any:
            if isinstance(path, str | bytes | os.PathLike):
                w.opened.append(os.path.realpath(os.fsdecode(os.fspath(path))))
            return real(path, *args, **kwargs)

        return wrapper

    real_open = os.open

    def os_open(path: Any, flags: int, *args: Any, **kwargs: Any) -> int:
        name = os.fsdecode(os.fspath(path))
        if flags & getattr(os, "O_NOFOLLOW", 0):  # a final symlink is refused, not followed
            parent, last = os.path.split(os.path.abspath(name))
            w.opened.append(os.path.join(os.path.realpath(parent), last))
        else:
            w.opened.append(os.path.realpath(name))
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", os_open)
    monkeypatch.setattr(os, "scandir", spy(os.scandir))
    monkeypatch.setattr(os, "listdir", spy(os.listdir))
    monkeypatch.setattr(builtins, "open", spy(builtins.open))
    monkeypatch.setattr(io, "open", spy(io.open))
    real_send = httpx.Client.send

    def send(self: httpx.Client, request: httpx.Request, **kwargs: Any) -> Any:
        w.sent.append(str(request.url))
        return real_send(self, request, **kwargs)

    monkeypatch.setattr(httpx.Client, "send", send)
    yield w


def snapshot(folder: Path) -> dict[str, str]:
    """Every entry below ``folder`` (``.git`` aside) and what it holds."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if not (dirpath == str(folder) and d == ".git")]
        for name in dirnames + filenames:
            path = Path(dirpath) / name
            rel = path.relative_to(folder).as_posix()
            st = path.lstat()
            if stat.S_ISREG(st.st_mode):
                out[rel] = sha(path.read_bytes())
            elif stat.S_ISLNK(st.st_mode):
                out[rel] = "-> " + os.readlink(path)
            else:
                out[rel] = stat.filemode(st.st_mode)
    return out


def temp_files(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.rglob(".deepseek-review-*.tmp"))


@pytest.fixture
def world(
    repo: Path,
    tmp_path: Path,
    cli: Cli,
    make_simulator: MakeSim,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[World]:
    outside = tmp_path / "outside"
    outside.mkdir()
    outside = outside.resolve()
    (outside / "secret.md").write_bytes(b"sentinel: not yours to read\n")
    w = World(repo, outside, cli, make_simulator, monkeypatch)
    try:
        yield w
    finally:
        for stub in w.stubs:
            stub.stop()


def _check_one_run(c: Case, w: World, watch: Watch, args: list[str], *, as_json: bool) -> None:
    before = snapshot(w.repo)
    outside_before = snapshot(w.outside)
    watch.opened.clear()
    watch.sent.clear()
    r = w.cli(*args, *(["--json"] if as_json else []))
    touched = [p for p in watch.opened if p.startswith(str(w.outside))]
    sent = list(watch.sent)
    where = f"{c.id}{' --json' if as_json else ''}: exit {r.code}\nstderr:\n{r.err}"

    assert r.code == c.code, where
    lines = r.err.splitlines()
    errors = [ln for ln in lines if ln.startswith(ERROR)]
    assert len(errors) == 1, where
    if c.alone:
        assert lines == errors, where
    elif not c.verbose:
        assert lines[-1] == errors[0], where
    needle = c.needle(w) if callable(c.needle) else c.needle
    assert needle in errors[0], where
    assert "internal error" not in r.err, where
    if c.verbose:
        assert "Traceback (most recent call last)" in r.err, where
    else:
        assert "Traceback" not in r.err, where
    for text in c.absent:
        assert text not in r.err and text not in r.out, where

    if as_json:
        if r.out.strip():
            json.loads(r.out)  # one whole JSON value, or nothing
    else:
        assert r.out == "", where

    assert snapshot(w.repo) == before, f"{where}\nsomething was written"
    assert snapshot(w.outside) == outside_before
    assert temp_files(w.repo.parent) == [], where
    assert touched == [], f"{where}\nopened outside the root: {touched}"
    if not c.sends:
        assert sent == [], f"{where}\nsent: {sent}"


def _params() -> list[Any]:
    out = []
    for c in CASES:
        marks = [pytest.mark.xfail(strict=True, reason=c.xfail)] if c.xfail else []
        out.append(pytest.param(c, id=c.id, marks=marks))
    return out


@pytest.mark.parametrize("c", _params())
def test_bad_input_is_refused_cleanly(c: Case, world: World, watch: Watch) -> None:
    args = c.setup(world)
    _check_one_run(c, world, watch, args, as_json=False)
    if c.json:
        _check_one_run(c, world, watch, args, as_json=True)


def test_the_table_is_large_and_spans_every_command() -> None:
    assert len(CASES) >= 40
    assert len({c.id for c in CASES}) == len(CASES)
    commands = {c.id.split("/")[0] for c in CASES}
    assert {"run", "show", "continue", "verify", "batch", "config", "verbose"} <= commands


# --------------------------------------------------------------------------- outside the table


def test_batch_does_not_take_a_receipt_naming_an_answer_outside_the_root_as_done(
    world: World, watch: Watch
) -> None:
    w = world
    url = w.sim()
    w.write("reviews.toml", GOOD_ENTRY)
    planned = w.cli("batch", "reviews.toml", "--endpoint", url, "--dry-run", "--json").json()
    entry = planned["entries"][0]
    evil = w.outside / "spec_deepseek_deepseek-v4-flash_20260101T000000Z.md"
    evil.write_text("an answer nobody asked for\n")
    receipt = primary_receipt(os.path.relpath(evil, w.repo), evil.read_bytes(), ["docs/spec.md"])
    receipt.update(prompt_sha256=entry["prompt_sha256"], endpoint=entry["endpoint"])
    stem = "reviews/spec_deepseek_deepseek-v4-flash_20260101T000000Z"
    w.put_receipt(f"{stem}.receipt.json", receipt)
    w.write(f"{stem}.request.json", json.dumps({"record": RECORD_SCHEMA, "body": {}}))
    watch.opened.clear()
    r = w.cli("batch", "reviews.toml", "--endpoint", url, "--json")
    assert not [p for p in watch.opened if p.startswith(str(w.outside))]
    assert r.code == 0, r.err
    done = r.json()["entries"][0]
    assert done["status"] == "ok"  # reviewed again, not "skipped" on a hostile receipt's word
    assert all(not p.startswith("..") for p in done["answer_paths"])
