"""The secret scan knows today's key formats, names every finding, and fails closed.

Each kind is planted where no keyword gives it away (prose, a URL, a git config header), in a
context file of a real repository bound for a remote endpoint: ``run`` exits 8 naming file,
line and kind, and nothing is sent. Look-alikes (hashes, UUIDs, the word "basic", documented
placeholders) are sent. Keys are built at run time, so none sits in this repository.
"""

from __future__ import annotations

import base64
import secrets
import string
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.context.secrets import Finding
from tests.support.cli import files_under
from tests.support.secrets import (
    REMOTE,
    Sent,
)

Cli = Callable[..., Any]
FAST = ("--retry-wait", "0.01", "--max-attempts", "1")


@pytest.fixture
def sent(request: pytest.FixtureRequest) -> Sent:
    """test_secrets' ``offline``: every request is recorded and fails as unreachable."""
    recorder: Sent = request.getfixturevalue("offline")
    return recorder


_ALNUM = string.ascii_letters + string.digits
_URLSAFE = _ALNUM + "-_"


def _rand(alphabet: str, n: int) -> str:
    return "".join(secrets.choice(alphabet) for _ in range(n))


_ANTHROPIC = "sk-ant-api03-" + _rand(_URLSAFE, 93) + "AA"
_OPENAI = "sk-proj-" + _rand(_URLSAFE, 156)
_GOOGLE = "AIza" + _rand(_URLSAFE, 35)
_GITHUB_PAT = "github_pat_" + _rand(_ALNUM, 22) + "_" + _rand(_ALNUM, 59)
_CHECKOUT_TOKEN = "ghs_" + _rand(_ALNUM, 36)
_BASIC = base64.b64encode(f"x-access-token:{_CHECKOUT_TOKEN}".encode()).decode()

#: kind: (path, text, line of the finding, the kind named, the secret itself)
KINDS: dict[str, tuple[str, str, int, str, str]] = {
    "anthropic": (
        "docs/staging.md",
        "# Staging\n\nThe bot talks to Claude with\n" + _ANTHROPIC + "\nuntil we rotate it.\n",
        4,
        "Anthropic API Key",
        _ANTHROPIC,
    ),
    "openai-project": (
        "notes/eval.md",
        "Evaluation runs\n\nUse " + _OPENAI + " for the nightly job.\n",
        3,
        "OpenAI Token",
        _OPENAI,
    ),
    "google": (
        "web/map.html",
        '<html>\n<script src="https://maps.googleapis.com/maps/api/js?callback=init&v='
        + _GOOGLE
        + '"></script>\n</html>\n',
        2,
        "Google API Key",
        _GOOGLE,
    ),
    "github-fine-grained": (
        "scripts/mirror.sh",
        "#!/bin/sh\nset -e\ngit push https://" + _GITHUB_PAT + "@github.com/org/mirror.git\n",
        3,
        "GitHub Token",
        _GITHUB_PAT,
    ),
    "authorization-basic": (
        "ci/checkout.gitconfig",
        '[core]\n\tbare = false\n[http "https://github.com/"]\n'
        "\textraheader = AUTHORIZATION: basic " + _BASIC + "\n",
        4,
        "Basic Auth Credentials",
        _BASIC,
    ),
}


def plant(repo: Path, path: str, text: str) -> None:
    (repo / path).parent.mkdir(parents=True, exist_ok=True)
    (repo / path).write_text(text, encoding="utf-8")


def error_line(err: str) -> str:
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("deepseek-review: error: "), err
    return lines[0]


@pytest.mark.parametrize("kind", list(KINDS))
def test_key_format_in_context_bound_off_the_machine_is_refused_naming_file_line_and_kind(
    repo: Path, cli: Cli, sent: Sent, kind: str
) -> None:
    path, text, line, named, secret = KINDS[kind]
    plant(repo, path, text)
    before = files_under(repo)
    r = cli("run", "-c", "docs/spec.md", "-c", path, "-p", "Check.", "--endpoint", REMOTE, *FAST)
    assert r.code == 8, r.err
    assert error_line(r.err).startswith(
        f"deepseek-review: error: {path}:{line}: looks like a secret ({named}); refusing to send"
    )
    assert secret[-12:] not in r.err  # never the secret itself
    assert sent.urls == []
    assert files_under(repo) == before


def test_every_finding_is_listed_with_file_line_and_kind(repo: Path, cli: Cli, sent: Sent) -> None:
    specs = []
    for path, text, *_ in KINDS.values():
        plant(repo, path, text)
        specs += ["-c", path]
    plant(repo, "notes/two.md", f"first {_GOOGLE}\nnothing\nsecond {_ANTHROPIC}\n")
    r = cli("run", *specs, "-c", "notes/two.md", "-p", "Check.", "--endpoint", REMOTE, *FAST)
    assert r.code == 8, r.err
    listed = ", ".join(f"{path}:{line} ({named})" for path, _, line, named, _ in KINDS.values())
    listed += ", notes/two.md:1 (Google API Key), notes/two.md:3 (Anthropic API Key)"
    assert error_line(r.err).startswith(
        f"deepseek-review: error: 7 secrets found: {listed}; refusing to send them to {REMOTE}"
    )
    assert sent.urls == []


LOOKALIKES = """\
# Release notes

The tarball's sha256 is 3f0c2b6a1d9e8f7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f3a and
the run id 123e4567-e89b-12d3-a456-426614174000. The proxy uses basic authentication: send
`Authorization: Basic <base64 of user:password>`, e.g. Authorization: Basic $CREDENTIALS.
Basic: yes. Keys look like sk-ant-api03-... (Anthropic), sk-proj-XXXXXXXXXXXXXXXXXXXXXXXXXXXX
XXXXXXXXXXXXXXXXXXXXXXXX (OpenAI), AIzaXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX (Google) and
github_pat_XXXXXXXXXXXXXXXXXXXXXX_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX.
Set ANTHROPIC_API_KEY=$ANTHROPIC_API_KEY in the environment; the task-skip-ant-hill rule and
the AIzawa plugin are unrelated.
"""


def test_hashes_uuids_the_word_basic_and_placeholders_are_sent(
    repo: Path, cli: Cli, sent: Sent
) -> None:
    plant(repo, "docs/release.md", LOOKALIKES)
    r = cli("run", "-c", "docs/release.md", "-p", "Check.", "--endpoint", REMOTE, *FAST)
    assert r.code == 5, r.err  # not 8: it was sent (and the test blocked it)
    assert sent.urls[-1:] == [f"{REMOTE}/v1/chat/completions"]  # after the Ollama probe


# --------------------------------------------------------------------------- detect-secrets


def test_keyword_secrets_in_yaml_and_ini_are_found_through_the_public_plugin_interface() -> None:
    """The keyword plugin is given the file name, so ``password: ...`` in a YAML or INI file
    reads as an assignment (ad-hoc ``scan_line`` has no file name and misses it)."""
    from deepseek_review.context.gather import ContextFile
    from deepseek_review.context.secrets import scan_files

    files = [
        ContextFile("deploy/db.yaml", "db:\n  password: hunter2hunter2x\n", "", 0),
        ContextFile("deploy/db.ini", "[db]\npassword = hunter2hunter2x\n", "", 0),
    ]
    assert scan_files(files) == [
        Finding("deploy/db.yaml", 2, "Secret Keyword"),
        Finding("deploy/db.ini", 2, "Secret Keyword"),
    ]


def test_the_scan_uses_no_private_name_of_detect_secrets() -> None:
    """Public API only, so detect-secrets need not be held below its next minor release:
    nothing imported from it, nor any attribute of what was, nor a plugin module, is private."""
    import ast

    import deepseek_review.context.secrets as module

    tree = ast.parse(Path(module.__file__).read_text(encoding="utf-8"))
    imported: set[str] = set()
    names: list[str] = [f"plugins.{m}.{c}" for m, c in module.DETECT_SECRETS_PLUGINS]
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("detect_secrets"):
            names.append(node.module or "")
            names += [a.name for a in node.names]
            imported |= {a.asname or a.name for a in node.names}
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and getattr(node.value, "id", None) in imported:
            names.append(node.attr)
    assert len(names) > 30
    assert [n for n in names if any(p.startswith("_") for p in n.split("."))] == []


@pytest.mark.parametrize("missing", ["keyword.KeywordDetector", "private_key.PrivateKeyDetector"])
def test_a_detect_secrets_without_a_plugin_the_scan_needs_fails_closed(
    repo: Path, cli: Cli, sent: Sent, monkeypatch: pytest.MonkeyPatch, missing: str
) -> None:
    import importlib

    module, name = missing.split(".")
    monkeypatch.delattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
    r = cli("run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", REMOTE, *FAST)
    assert r.code == 2, r.err
    assert "detect-secrets" in error_line(r.err) and missing in error_line(r.err)
    assert "--allow-secrets" in r.err
    assert sent.urls == []


def test_the_scan_never_asks_a_service_whether_a_secret_is_live(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """detect-secrets can verify a finding by calling the issuer's API; with that switched on
    in its global settings (by anything in the process), the scan still sends nothing."""
    from detect_secrets.constants import VerifiedResult
    from detect_secrets.plugins.slack import SlackDetector
    from detect_secrets.settings import get_settings

    from deepseek_review.context.gather import ContextFile
    from deepseek_review.context.secrets import scan_files

    asked: list[str] = []

    def verify(self: SlackDetector, secret: str) -> VerifiedResult:
        asked.append(secret)
        return VerifiedResult.VERIFIED_TRUE

    monkeypatch.setattr(SlackDetector, "verify", verify)
    path = "detect_secrets.filters.common.is_ignored_due_to_verification_policies"
    monkeypatch.setitem(get_settings().filters, path, {"min_level": 2})
    token = "xoxb-" + _rand(string.digits, 12) + "-" + _rand(string.digits, 13) + "-a1"
    token += _rand(_ALNUM, 22)
    found = scan_files([ContextFile("bots/slack.md", f"bot: {token}\n", "", 0)])
    assert found == [Finding("bots/slack.md", 1, "Slack Token")]
    assert len(asked) == 0, "a finding was sent to its issuer to verify"
