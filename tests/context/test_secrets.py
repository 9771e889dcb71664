"""Secrets: the API key never leaves the Authorization header, and context bound off this
machine is scanned for secrets first.

A distinctive key (``sk-planted-<random hex>``) is planted in ``OLLAMA_API_KEY`` and every
command is run with it, succeeding and failing, with and without ``--verbose``. Then stdout,
stderr, every file under the test's folder (answers, receipts, request records, reasoning files,
batch reports, temporary files, the repository's ``.git``) and every log record (as emitted,
before any handler's filter) are searched for the key and for every 8-character piece of its
random part. The simulator checks the key, and the test checks it arrived as
``Authorization: Bearer <key>``, so the search is not vacuous.
"""

from __future__ import annotations

import base64
import html
import json
import logging
import re
import secrets
import string
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

import pytest

from deepseek_review.chat.endpoint import Endpoint
from deepseek_review.testing.simulator import Simulator
from tests.support.cli import files_under, use_key
from tests.support.ports import closed_port
from tests.support.secrets import REMOTE, Sent, go_offline
from tests.support.stubs import Reply, Stub

Cli = Callable[..., Any]
MakeSim = Callable[..., Simulator]
FAST = ("--retry-wait", "0.01")
VERBOSITY = [pytest.param((), id="plain"), pytest.param(("--verbose",), id="verbose")]


# --------------------------------------------------------------------------- the planted key


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> str:
    planted = "sk-planted-" + secrets.token_hex(16)
    use_key(monkeypatch, planted)
    return planted


@dataclass
class Evidence:
    """Everything the tool said or wrote while a test ran."""

    outputs: list[tuple[str, str]] = field(default_factory=list)
    records: list[logging.LogRecord] = field(default_factory=list)


@pytest.fixture
def evidence(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> Evidence:
    """Every log record as it is emitted, before any handler or filter sees it: the tool's
    own (which do not propagate to caplog) and, at DEBUG, the HTTP libraries'."""
    ev = Evidence()
    caplog.set_level(logging.DEBUG)
    real = logging.Logger.handle

    def handle(self: logging.Logger, record: logging.LogRecord) -> None:
        ev.records.append(record)
        real(self, record)

    monkeypatch.setattr(logging.Logger, "handle", handle)
    return ev


@pytest.fixture
def run_cli(cli: Cli, evidence: Evidence) -> Cli:
    """The ``cli`` fixture, keeping every stdout and stderr for the search."""

    def run(*args: str, stdin: str | None = None) -> Any:
        r = cli(*args, stdin=stdin)
        evidence.outputs.append((f"stdout of {args}", r.out))
        evidence.outputs.append((f"stderr of {args}", r.err))
        return r

    return run


_DIGEST = re.compile(r"[0-9a-f]{40,}")


def _found(key: str, text: str) -> str | None:
    """The planted key or a piece of it in ``text``, or None.

    Pieces are 8 characters of the key's random part; a piece inside a long hex run (a
    sha256) is a coincidence of one in ~4 billion per position, not a leak, and is skipped.
    """
    if key in text:
        return key
    rand = key.removeprefix("sk-planted-")
    text = _DIGEST.sub("<digest>", text)
    for i in range(len(rand) - 7):
        if rand[i : i + 8] in text:
            return rand[i : i + 8]
    return None


def assert_key_nowhere(key: str, evidence: Evidence, folder: Path) -> int:
    """Search every output, log record and file below ``folder``; the number of files."""
    for where, text in evidence.outputs:
        hit = _found(key, text)
        assert hit is None, f"{hit!r} in {where}:\n{text}"
    formatter = logging.Formatter("%(message)s")
    for record in evidence.records:
        text = formatter.format(record) + repr(record.args) + repr(record.msg)
        hit = _found(key, text)
        assert hit is None, f"{hit!r} in a log record: {text}"
    files = [folder / rel for rel in files_under(folder)]
    for path in files:
        hit = _found(key, path.read_bytes().decode("latin-1"))
        assert hit is None, f"{hit!r} in {path}"
    return len(files)


def assert_sent_as_bearer(key: str, sim: Simulator) -> int:
    requests = sim.chat_requests()
    assert requests, "nothing reached the simulator: the search would prove nothing"
    for r in requests:
        assert r.headers.get("authorization") == f"Bearer {key}"
        assert key not in r.body.decode("utf-8")
    return len(requests)


@pytest.fixture
def echo_stub(make_stub: Callable[..., Stub]) -> Callable[[int, str, str], Stub]:
    """A careless server: every reply quotes the request's Authorization header (``{auth}``)."""

    def make(status: int, template: str, content_type: str = "application/json") -> Stub:
        reply = Reply(status, template.encode(), content_type=content_type)
        return make_stub([reply], echo_headers=True)

    return make


# --------------------------------------------------------------------------- the key


@pytest.mark.parametrize("verbose", VERBOSITY)
def test_key_is_in_no_output_file_or_log_of_any_successful_command(
    repo: Path,
    tmp_path: Path,
    make_simulator: MakeSim,
    run_cli: Cli,
    evidence: Evidence,
    key: str,
    verbose: tuple[str, ...],
) -> None:
    sim = make_simulator(api_key=key, answer_words=150, reasoning_words=12)
    v = verbose
    review = ("-c", "docs/spec.md", "-c", "src", "-p", "Check the mean.", "--endpoint")
    # run: a primary and one continuation, still cut off (4), with reasoning kept
    r = run_cli(*v, "run", *review, sim.base_url, "--max-tokens", "40", "--max-continuations",
                "1", "--keep-reasoning", "--topic", "chain", "--json", *FAST)  # fmt: skip
    assert r.code == 4, r.err
    last = r.json()["segments"][-1]["answer_path"]
    # run without --json, to completion
    r = run_cli(*v, "run", *review, sim.base_url, "--max-tokens", "60", "--topic", "plain", *FAST)
    assert r.code == 0, r.err
    r = run_cli(*v, "run", *review, sim.base_url, "--dry-run", "--json")
    assert r.code == 0, r.err
    # continue the cut-off chain, then show it whole
    r = run_cli(*v, "continue", last, "--endpoint", sim.base_url, "--keep-reasoning", "--json",
                "--max-continuations", "20", *FAST)  # fmt: skip
    assert r.code == 0, r.err
    r = run_cli(*v, "continue", last, "--endpoint", sim.base_url)  # complete: nothing to do
    assert r.code == 0, r.err
    r = run_cli(*v, "show", last)
    assert r.code == 0 and r.out, r.err
    r = run_cli(*v, "verify", "--json")
    assert r.code == 0, r.err
    r = run_cli(*v, "verify")
    assert r.code == 0, r.err
    # batch, with a report file and --json
    (repo / "out").mkdir()
    entries = "".join(
        f'[[review]]\ntopic = "b{i}"\nprompt = "Check {i}."\ncontext = "docs/spec.md"\n\n'
        for i in range(3)
    )
    (repo / "reviews.toml").write_text("[defaults]\nmax_tokens = 50\n\n" + entries)
    r = run_cli(*v, "batch", "reviews.toml", "--endpoint", sim.base_url, "--report",
                "out/report.json", "--json", *FAST)  # fmt: skip
    assert r.code == 0, r.err
    r = run_cli(*v, "batch", "reviews.toml", "--endpoint", sim.base_url)  # resumed: all skipped
    assert r.code == 0, r.err
    r = run_cli(*v, "config", "--json")
    assert r.code == 0, r.err

    assert assert_sent_as_bearer(key, sim) >= 8
    assert any(p.endswith(".reasoning.md") for p in files_under(repo))
    assert (repo / "out" / "report.json").is_file()
    assert assert_key_nowhere(key, evidence, tmp_path) > 20
    names = {r.name for r in evidence.records}
    assert {"deepseek_review", "httpcore.http11"} <= names, "the log search would prove little"


#: A failing command: (simulator knobs, or a stub's (status, body template, content type), or
#: "refused" for a closed port), the extra arguments, and the exit code.
_FAILURES: dict[str, tuple[Any, tuple[str, ...], int]] = {
    "401-wrong-key": ({"api_key": "sk-some-other-key"}, (), 5),
    "500": ({"fault_rate": 1.0, "fault_kinds": ("500",)}, ("--max-attempts", "2"), 5),
    "429-string": ({"fault_rate": 1.0, "fault_kinds": ("429-string",), "retry_after": 0}, (), 5),
    "reset": ({"fault_rate": 1.0, "fault_kinds": ("reset",)}, ("--max-attempts", "2"), 5),
    "html": ({"fault_rate": 1.0, "fault_kinds": ("html",)}, (), 5),
    "no-choices": ({"fault_rate": 1.0, "fault_kinds": ("no-choices",)}, ("--no-stream",), 6),
    "content-not-string": ({"fault_rate": 1.0, "fault_kinds": ("content-not-string",)}, (), 6),
    "malformed": ({"fault_rate": 1.0, "fault_kinds": ("malformed",)}, (), 6),
    "cut-stream": ({"fault_rate": 1.0, "fault_kinds": ("cut-stream",)}, (), 6),
    "connection-refused": ("refused", (), 5),
    "error-body-quotes-the-key": (
        (502, '{"error": "bad gateway; you sent {auth}"}', "json"),
        (),
        5,
    ),
    "401-quotes-the-key": ((401, '{"error": {"message": "invalid key {auth}"}}', "json"), (), 5),
    "html-page-quotes-the-key": ((200, "<html><title>{auth}</title></html>", "html"), (), 6),
    "not-json-quotes-the-key": ((200, "upstream said: {auth}", "text"), ("--no-stream",), 6),
    "stream-error-quotes-the-key": (
        (200, 'data: {"error": "token {auth} revoked"}\n\ndata: [DONE]\n\n', "sse"),
        (),
        6,
    ),
    "long-error-quotes-the-key-at-the-cut": (
        (500, '{"error": "' + "x" * 280 + ' {auth} and more"}', "json"),
        (),
        5,
    ),
}
_CTYPES = {"json": "application/json", "html": "text/html", "text": "text/plain",
           "sse": "text/event-stream"}  # fmt: skip


@pytest.mark.parametrize("verbose", VERBOSITY)
@pytest.mark.parametrize("failure", list(_FAILURES))
def test_key_is_in_no_output_or_log_of_a_failing_command(
    repo: Path,
    tmp_path: Path,
    make_simulator: MakeSim,
    echo_stub: Callable[..., Stub],
    run_cli: Cli,
    evidence: Evidence,
    key: str,
    failure: str,
    verbose: tuple[str, ...],
) -> None:
    server, extra, code = _FAILURES[failure]
    sim = None
    if server == "refused":
        url = f"http://127.0.0.1:{closed_port()}"
    elif isinstance(server, tuple):
        status, template, ctype = server
        url = echo_stub(status, template, _CTYPES[ctype]).base_url
    else:
        sim = make_simulator(**{"api_key": key, **server})
        url = sim.base_url
    attempts = () if "--max-attempts" in extra else ("--max-attempts", "1")  # given once
    base = ("-c", "docs/spec.md", "-p", "Check.", "--endpoint", url, *attempts)
    r = run_cli(*verbose, "run", *base, *FAST, *extra)
    assert r.code == code, r.err
    r = run_cli(*verbose, "run", *base, *FAST, *extra, "--json")
    assert r.code == code, r.err
    if verbose:
        assert "Traceback" in r.err
    (repo / "reviews.toml").write_text(
        '[[review]]\ntopic = "b"\nprompt = "Check."\ncontext = "docs/spec.md"\n'
    )
    r = run_cli(*verbose, "batch", "reviews.toml", "--endpoint", url, "--max-attempts", "1",
                "--report", "report.json", "--json", *FAST)  # fmt: skip
    assert r.code == 11, r.err
    assert json.loads((repo / "report.json").read_text())["entries"][0]["error"]

    if sim is not None:
        assert_sent_as_bearer(key, sim)
    assert_key_nowhere(key, evidence, tmp_path)


#: The key as a careless or hostile server may echo it in an error: transformed, so that a
#: plain search for the key (and a plain replace) misses it.
_TRANSFORMS: dict[str, Callable[[str], str]] = {
    "reversed": lambda k: k[::-1],
    "base64": lambda k: base64.b64encode(k.encode()).decode(),
    "base64-of-the-header": lambda k: base64.b64encode(f"Bearer {k}".encode()).decode(),
    "base64-urlsafe-unpadded": lambda k: (
        base64.urlsafe_b64encode(f"u:{k}".encode()).decode().rstrip("=")
    ),
    "base64-json-escaped-slashes": lambda k: (
        base64.b64encode(b"\xff\xfe" + k.encode()).decode().replace("/", "\\/")
    ),
    "hex": lambda k: k.encode().hex(),
    "zero-width-spaces": lambda k: "\u200b".join(k),
    "zero-width-json-escapes": lambda k: "\\u200b".join(k),
    "word-joiners-and-soft-hyphens": lambda k: "".join(c + "\u2060\u00ad" for c in k),
    "url-encoded": lambda k: "".join(f"%{ord(c):02X}" for c in k),
    "url-encoded-in-part": lambda k: k.replace("-", "%2d").replace("a", "%61"),
    "json-unicode-escapes": lambda k: "".join(f"\\u{ord(c):04x}" for c in k),
    "html-entities": lambda k: "".join(f"&#{ord(c)};" for c in k),
    "upper-case": str.upper,
}

#: Where the transformed key sits: (status, body template with ``{k}``, content type, code).
_ECHOES = {
    "json-error": (401, '{{"error": {{"message": "invalid key {k}"}}}}', "application/json", 5),
    "plain-text": (502, "upstream refused {k} (bad gateway)", "text/plain", 5),
    "stream-error": (
        200,
        'data: {{"error": "token {k} revoked"}}\n\ndata: [DONE]\n\n',
        "text/event-stream",
        6,
    ),
}
_INVISIBLE = re.compile(
    r"[\u00ad\u200b-\u200f\u2060-\u2064\ufeff]|\\u(?:00ad|200[b-f]|206[0-4]|feff)"
)


def _revealed(key: str, text: str) -> str | None:
    """The key, or a piece of it, in ``text`` read back through each transform: decoded
    (percent, HTML, JSON escapes, base64 and hex runs), invisible characters dropped, in lower
    case, and reversed."""
    plain = html.unescape(unquote(text))
    plain = re.sub(r"\\u([0-9a-fA-F]{4})", lambda m: chr(int(m.group(1), 16)), plain)
    plain = _INVISIBLE.sub("", plain)
    decoded = [plain]
    for run in re.findall(r"(?:[A-Za-z0-9+/_-]|\\/){12,}", text):
        run = run.replace("\\/", "/").replace("-", "+").replace("_", "/")
        for skip in range(4):
            part = run[skip:][: (len(run) - skip) // 4 * 4]
            decoded.append(base64.b64decode(part, validate=False).decode("latin-1"))
    for run in re.findall(r"(?:[0-9a-f]{2}){12,}", text):
        decoded.append(bytes.fromhex(run).decode("latin-1"))
    for candidate in decoded:
        for form in (candidate.lower(), candidate.lower()[::-1]):
            hit = _found(key, form)
            if hit:
                return hit
    return None


@pytest.mark.parametrize("echo", list(_ECHOES))
@pytest.mark.parametrize("transform", list(_TRANSFORMS))
def test_key_echoed_transformed_in_an_error_body_is_in_no_output_or_log(
    repo: Path,
    tmp_path: Path,
    make_stub: Callable[..., Stub],
    run_cli: Cli,
    evidence: Evidence,
    key: str,
    transform: str,
    echo: str,
) -> None:
    status, template, ctype, code = _ECHOES[echo]
    body = template.format(k=_TRANSFORMS[transform](key)).encode()
    assert _revealed(key, body.decode()), "the oracle must see the key in what the server sends"
    url = make_stub([Reply(status, body, content_type=ctype)]).base_url
    r = run_cli("--verbose", "run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", url,
                "--max-attempts", "1", "--json", *FAST)  # fmt: skip
    assert r.code == code, r.err
    assert "[redacted]" in r.err  # the server's words were shown, without the key
    for where, text in evidence.outputs:
        assert _revealed(key, text) is None, f"{transform} key in {where}:\n{text}"
    formatter = logging.Formatter("%(message)s")
    for record in evidence.records:
        text = formatter.format(record) + repr(record.args) + repr(record.msg)
        assert _revealed(key, text) is None, f"{transform} key in a log record: {text}"
    for path in (tmp_path / rel for rel in files_under(tmp_path)):
        assert _revealed(key, path.read_bytes().decode("latin-1")) is None, path


def test_redaction_keeps_text_that_only_resembles_the_key(key: str) -> None:
    """Digests, other base64 and the word "Bearer" are not taken for the key."""
    from deepseek_review.util.redact import redact

    text = (
        "sha256:" + "ab" * 32 + " Bearer token " + base64.b64encode(b"user:other").decode()
        + " sk-planted-" + "0" * 32 + " %41%42 &#65;"
    )  # fmt: skip
    assert redact(text, key) == text


@pytest.mark.parametrize("verbose", VERBOSITY)
def test_key_is_in_no_output_of_a_failing_continue(
    repo: Path,
    tmp_path: Path,
    make_simulator: MakeSim,
    run_cli: Cli,
    evidence: Evidence,
    key: str,
    verbose: tuple[str, ...],
) -> None:
    good = make_simulator(api_key=key, answer_words=150)
    r = run_cli("run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", good.base_url,
                "--max-tokens", "30", "--max-continuations", "0", "--json")  # fmt: skip
    assert r.code == 4, r.err
    answer = r.json()["segments"][0]["answer_path"]
    for bad in (
        make_simulator(api_key="sk-not-this-one"),
        make_simulator(api_key=key, fault_rate=1.0, fault_kinds=("500",)),
        make_simulator(api_key=key, fault_rate=1.0, fault_kinds=("content-missing",)),
    ):
        r = run_cli(*verbose, "continue", answer, "--endpoint", bad.base_url,
                    "--max-attempts", "1", "--json")  # fmt: skip
        assert r.code in (5, 6), r.err
    assert_sent_as_bearer(key, good)
    assert_key_nowhere(key, evidence, tmp_path)


def test_receipt_naming_a_remote_endpoint_does_not_get_the_key(
    repo: Path,
    make_simulator: MakeSim,
    run_cli: Cli,
    key: str,
    offline_after: Callable[[], Sent],
) -> None:
    """Anyone who can edit a receipt could otherwise send your key wherever they like."""
    chain = _local_chain(repo, make_simulator, run_cli, key)
    offline = offline_after()
    receipt_path = repo / chain["receipt_path"]
    receipt = json.loads(receipt_path.read_text())
    receipt["endpoint"] = f"{REMOTE}/v1/chat/completions"
    receipt_path.write_text(json.dumps(receipt, indent=2))
    r = run_cli("continue", chain["answer_path"])
    assert r.code == 2, r.err
    assert r.err.splitlines()[-1].startswith(
        f"deepseek-review: error: {chain['receipt_path']}: endpoint {REMOTE}/v1/chat/completions:"
        " a receipt may name only a loopback endpoint or one the operator chose; choose it with"
        " --endpoint"
    )
    assert offline.urls == []


def test_receipt_endpoint_that_is_the_configured_one_gets_the_key(
    repo: Path,
    make_simulator: MakeSim,
    run_cli: Cli,
    key: str,
    offline_after: Callable[[], Sent],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    chain = _local_chain(repo, make_simulator, run_cli, key)
    offline = offline_after()
    receipt_path = repo / chain["receipt_path"]
    receipt = json.loads(receipt_path.read_text())
    receipt["endpoint"] = f"{REMOTE}/v1/chat/completions"
    receipt_path.write_text(json.dumps(receipt, indent=2))
    monkeypatch.setenv("OLLAMA_HOST", REMOTE)
    r = run_cli("continue", chain["answer_path"], "--max-attempts", "1")
    assert r.code == 5, r.err
    assert "blocked by the test" in r.err
    assert offline.urls[-1:] == [f"{REMOTE}/v1/chat/completions"]  # after the Ollama probe


def _local_chain(repo: Path, make_simulator: MakeSim, run_cli: Cli, key: str) -> dict[str, Any]:
    sim = make_simulator(api_key=key, answer_words=150)
    r = run_cli("run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", sim.base_url,
                "--max-tokens", "30", "--max-continuations", "0", "--json")  # fmt: skip
    assert r.code == 4, r.err
    segment: dict[str, Any] = r.json()["segments"][0]
    return segment


# --------------------------------------------------------------------------- the secret scan


def _rand(alphabet: str, n: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


# Built at run time, so no secret-looking literal sits in this repository.
_UPPER_DIGITS = string.ascii_uppercase + string.digits
_ALNUM = string.ascii_letters + string.digits
_RSA_BODY = _rand(_ALNUM, 64)
_AWS_ID = "AKIA" + _rand(_UPPER_DIGITS, 16)
_GH_TOKEN = "ghp_" + _rand(_ALNUM, 36)
# A digit first: a random start such as "my…" or "test…" would read as a placeholder, which
# the scan rightly lets through (about 1 run in 1,000 failed so).
_DB_PASSWORD = _rand(string.digits, 1) + _rand(_ALNUM, 13)
#: kind: (path, text, line of the finding, what the finding is called, the secret itself)
SECRET_FILES: dict[str, tuple[str, str, int, str, str]] = {
    "private-key": (
        "deploy/id_rsa.txt",
        "deploy key follows\n\n-----BEGIN RSA " + "PRIVATE KEY-----\n" + _RSA_BODY + "\n",
        3,
        "Private Key",
        _RSA_BODY,
    ),
    "aws-key": (
        "config/aws.ini",
        "[default]\nregion = eu-west-1\naws_access_key_id = " + _AWS_ID + "\n",
        3,
        "AWS Access Key",
        _AWS_ID,
    ),
    "github-token": (
        "scripts/release.sh",
        "#!/bin/sh\n# publish\nGH=" + _GH_TOKEN + "\ngh release create\n",
        3,
        "GitHub Token",
        _GH_TOKEN,
    ),
    "dotenv-password": (
        "app/.env",
        "DEBUG=false\nDB_HOST=db.internal\nDB_PASSWORD=" + _DB_PASSWORD + "\n",
        3,
        ".env-style secret assignment",
        _DB_PASSWORD,
    ),
}


@pytest.mark.parametrize("kind", list(SECRET_FILES))
def test_secret_in_context_bound_off_the_machine_is_refused_naming_file_and_line(
    repo: Path, cli: Cli, offline: Sent, kind: str
) -> None:
    path, text, line, finding, secret = SECRET_FILES[kind]
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)
    before = files_under(repo)
    r = cli("run", "-c", "docs/spec.md", "-c", path, "-p", "Check.", "--endpoint", REMOTE)
    assert r.code == 8, r.err
    assert r.err.splitlines() == [r.err.splitlines()[0]]
    assert r.err.startswith(f"deepseek-review: error: {path}:{line}: looks like a secret")
    assert finding in r.err
    assert secret[-10:] not in r.err  # never the secret itself
    assert offline.urls == []
    assert files_under(repo) == before


def test_every_secret_is_named_with_file_line_and_kind(repo: Path, cli: Cli, offline: Sent) -> None:
    specs = []
    for path, text, *_ in SECRET_FILES.values():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
        specs += ["-c", path]
    r = cli("run", *specs, "-p", "Check.", "--endpoint", REMOTE, "--dry-run")
    assert r.code == 8, r.err
    assert (
        "4 secrets found: deploy/id_rsa.txt:3 (Private Key), config/aws.ini:3 (AWS Access Key), "
        "scripts/release.sh:3 (GitHub Token), app/.env:3 (.env-style secret assignment); "
        "refusing to send them to"
    ) in r.err
    assert offline.urls == []


def test_allow_secrets_skips_the_scan(repo: Path, cli: Cli, offline: Sent) -> None:
    path, text, *_ = SECRET_FILES["dotenv-password"]
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)
    r = cli("run", "-c", path, "-p", "Check.", "--endpoint", REMOTE, "--allow-secrets",
            "--max-attempts", "1")  # fmt: skip
    assert r.code == 5, r.err  # it got as far as sending, which the test blocks
    assert "blocked by the test" in r.err
    assert offline.urls[-1:] == [f"{REMOTE}/v1/chat/completions"]  # after the Ollama probe


def test_context_for_a_loopback_endpoint_is_not_scanned(
    repo: Path, simulator: Simulator, cli: Cli
) -> None:
    for path, text, *_ in SECRET_FILES.values():
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text)
    r = cli("run", "-c", "deploy", "-c", "config", "-c", "scripts", "-c", "app/.env",
            "-p", "Check.", "--endpoint", simulator.base_url)  # fmt: skip
    assert r.code == 0, r.err
    assert len(simulator.chat_requests()) == 1


@pytest.mark.parametrize(
    "url", ["http://localhost:11434", "http://127.0.0.5:8080", "http://[::1]:11434"]
)
def test_every_loopback_address_counts_as_local(url: str) -> None:
    assert Endpoint(url=url).is_local


@pytest.mark.parametrize("url", [REMOTE, "http://10.0.0.2:11434", "http://localhost.evil.com"])
def test_other_hosts_are_not_local(url: str) -> None:
    assert not Endpoint(url=url).is_local


HARMLESS = """\
# Hashes, ids and secrets read from elsewhere: nothing here is a secret.
import os
import uuid

RECEIPT = "sha256:3f0c2b6a1d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a"
COMMIT = "9fceb02d0ae598e95dc970b74767f19372d61af8"
RUN_ID = "123e4567-e89b-12d3-a456-426614174000"
REQUEST_ID = uuid.UUID("c9bf9e57-1685-4c89-bafb-ff5af830be8a")

password = os.environ["DB_PASSWORD"]
api_key = os.getenv("API_KEY")
token = None
SECRET_KEY = settings.get("secret_key")
"""

HARMLESS_ENV = """\
# .env.example
DB_PASSWORD=${DB_PASSWORD}
API_KEY=$API_KEY
SECRET_TOKEN=changeme
AWS_SECRET_ACCESS_KEY=
export GITHUB_TOKEN="${{ secrets.GITHUB_TOKEN }}"
DB_HOST=localhost
"""

HARMLESS_LOCK = """\
[[package]]
name = "httpx"
version = "0.28.1"
files = [
    {file = "httpx-0.28.1-py3-none-any.whl",
     hash = "sha256:d909fcccc110f8c7faf814ca82a9a4d816bc5a6dbfea25d6591d6985b8ba59ad"},
]
"""


def test_hashes_uuids_and_secrets_read_from_the_environment_are_not_flagged(
    repo: Path, cli: Cli, offline: Sent
) -> None:
    (repo / "src" / "settings.py").write_text(HARMLESS)
    (repo / ".env.example").write_text(HARMLESS_ENV)
    (repo / "poetry.lock").write_text(HARMLESS_LOCK)
    r = cli("run", "-c", "src/settings.py", "-c", ".env.example", "-c", "poetry.lock",
            "-p", "Check.", "--endpoint", REMOTE, "--max-attempts", "1")  # fmt: skip
    assert r.code == 5, r.err  # not 8: it was sent (and the test blocked it)
    assert offline.urls


def test_receipts_and_records_as_context_are_not_flagged(
    repo: Path, simulator: Simulator, cli: Cli, offline_after: Callable[[], Sent]
) -> None:
    r = cli("run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", simulator.base_url,
            "--max-tokens", "30", "--max-continuations", "1")  # fmt: skip
    assert r.code in (0, 4), r.err
    sent = offline_after()
    named = [arg for rel in files_under(repo / "reviews") for arg in ("-c", f"reviews/{rel}")]
    r = cli("run", *named, "-p", "Check.", "--endpoint", REMOTE, "--max-attempts", "1")
    assert r.code == 5, r.err  # not 8: receipts and records are hashes and paths
    assert sent.urls


def test_continuing_off_the_machine_scans_the_context_again(
    repo: Path, make_simulator: MakeSim, run_cli: Cli, offline_after: Callable[[], Sent]
) -> None:
    """A chain made against a local server, continued against a remote one."""
    path, text, line, *_ = SECRET_FILES["github-token"]
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)
    sim = make_simulator(answer_words=150)
    r = run_cli("run", "-c", path, "-p", "Check.", "--endpoint", sim.base_url,
                "--max-tokens", "30", "--max-continuations", "0", "--json")  # fmt: skip
    assert r.code == 4, r.err
    answer = r.json()["segments"][0]["answer_path"]
    sent = offline_after()
    before = files_under(repo)
    r = run_cli("continue", answer, "--endpoint", REMOTE)
    assert r.code == 8, r.err
    assert f"{path}:{line}: looks like a secret" in r.err
    assert sent.urls == []
    assert files_under(repo) == before


def test_continue_with_allow_secrets_skips_the_scan(
    repo: Path, make_simulator: MakeSim, run_cli: Cli, offline_after: Callable[[], Sent]
) -> None:
    path, text, *_ = SECRET_FILES["github-token"]
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)
    sim = make_simulator(answer_words=150)
    r = run_cli("run", "-c", path, "-p", "Check.", "--endpoint", sim.base_url,
                "--max-tokens", "30", "--max-continuations", "0", "--json")  # fmt: skip
    answer = r.json()["segments"][0]["answer_path"]
    sent = offline_after()
    r = run_cli("continue", answer, "--endpoint", REMOTE, "--allow-secrets", "--max-attempts", "1")
    assert r.code == 5, r.err
    assert sent.urls[-1:] == [f"{REMOTE}/v1/chat/completions"]  # after the Ollama probe


def test_batch_bound_off_the_machine_refuses_secrets_naming_entry_file_and_line(
    repo: Path, cli: Cli, offline: Sent
) -> None:
    path, text, line, *_ = SECRET_FILES["aws-key"]
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text)
    (repo / "reviews.toml").write_text(
        f'[[review]]\ntopic = "aws"\nprompt = "Check."\ncontext = "{path}"\n'
    )
    before = files_under(repo)
    r = cli("batch", "reviews.toml", "--endpoint", REMOTE)
    assert r.code == 3, r.err  # a manifest problem (docs/guide/batch.md); nothing sent or written
    assert f"{path}:{line}: looks like a secret" in r.err.splitlines()[-1]
    assert offline.urls == []
    assert files_under(repo) == before


@pytest.fixture
def offline_after(monkeypatch: pytest.MonkeyPatch) -> Callable[[], Sent]:
    """Like ``offline``, switched on in the middle of a test (after a local run)."""

    return lambda: go_offline(monkeypatch)


def test_a_secret_in_the_prompt_itself_is_refused_for_a_remote_endpoint(
    repo: Path, cli: Cli, offline: Sent
) -> None:
    prompt = "Check this config:\nDB_PASSWORD=hunter2hunter2\n"
    r = cli("run", "-c", "docs/spec.md", "-p", prompt, "--endpoint", REMOTE)
    assert r.code == 8, r.err
    assert "<prompt>:2: looks like a secret" in r.err
    assert "hunter2" not in r.err
    assert offline.urls == []


def test_the_continue_hint_names_a_remote_endpoint_explicitly(repo: Path, cli: Cli) -> None:
    from types import SimpleNamespace

    from deepseek_review.cli.review_cmds import _raise_if_truncated
    from deepseek_review.errors import TruncatedReview

    result = SimpleNamespace(
        truncated=True,
        stalled=False,
        endpoint="https://ollama.com/v1/chat/completions",
        segments=[SimpleNamespace(answer_path="reviews/x.md")],
    )
    with pytest.raises(TruncatedReview) as exc:
        _raise_if_truncated(result, 3)
    assert exc.value.hint.endswith(
        "deepseek-review continue reviews/x.md --endpoint https://ollama.com/v1/chat/completions"
    )
