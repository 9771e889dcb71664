"""The secret scan finds today's credential formats wherever they sit, lets placeholders and
prose through, and finds nothing in this repository's own docs and source.

Every secret is built at run time from random characters (no secret-looking literal sits in
this repository); each is planted in the kind of file it lives in (a kubeconfig, an
``.npmrc``, a Docker ``config.json``, a ``.netrc``, a curl line in a script).
"""

from __future__ import annotations

import base64
import secrets
import string
import subprocess
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review.context.secrets import Finding, scan_files
from deepseek_review.context.types import ContextFile
from tests.support.cli import files_under
from tests.support.secrets import (
    REMOTE,
    Sent,
)

Cli = Callable[..., Any]
ROOT = Path(__file__).resolve().parents[2]
_ALNUM = string.ascii_letters + string.digits
_HEX = "0123456789abcdef"
_BECH32 = "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L"


def _rand(alphabet: str, n: int) -> str:
    # A digit and both cases first, so no draw reads as a word or a placeholder.
    return "".join(secrets.choice(alphabet) for _ in range(n))


def _token(n: int) -> str:
    return "7aQ" + _rand(_ALNUM, n - 3)


def _der_rsa_key() -> str:
    """Base64 of DER as an RSA private key starts: SEQUENCE, length, INTEGER 0, modulus."""
    der = b"\x30\x82\x04\xa4\x02\x01\x00\x02\x82\x01\x01\x00" + secrets.token_bytes(60)
    return base64.b64encode(der).decode()


def _pem_private_key_b64() -> str:
    pem = (
        "-----BEGIN EC " + "PRIVATE KEY-----\n"
        + base64.b64encode(secrets.token_bytes(90)).decode()
        + "\n-----END EC " + "PRIVATE KEY-----\n"
    )  # fmt: skip
    return base64.b64encode(pem.encode()).decode()


def _openssh_body() -> str:
    return base64.b64encode(b"openssh-key-v1\0" + secrets.token_bytes(48)).decode()


def _docker_auth() -> str:
    return base64.b64encode(f"robot:{_token(30)}".encode()).decode()


#: name: (path, text, line of the finding, the kind named, the secret)
def _formats() -> dict[str, tuple[str, str, int, str, str]]:
    bearer = _token(40)
    npm = str(uuid.uuid4())
    hf = "hf_" + _token(34)
    do = "dop_v1_" + _rand(_HEX, 64)
    shop = "shpat_" + _rand(_HEX, 32)
    vault = "hvs." + _token(90)
    age = "AGE-SECRET-KEY-1" + _rand(_BECH32, 58)
    gocspx = "GOCSPX-" + _token(28)
    docker = _docker_auth()
    netrc = _token(20)
    der = _der_rsa_key()
    ssh = _openssh_body()
    kube = _pem_private_key_b64()
    apikey = _token(32)
    slack = "xoxb-" + _rand("123456789", 12) + "-" + _rand("123456789", 13) + "-" + _token(24)
    slack_app = "xapp-1-A" + _rand("ABCDEFGHJK0123456789", 10) + "-" + _rand("0123456789", 13)
    slack_app += "-" + _rand(_HEX, 64)
    stripe = "sk_live_" + _token(99)
    return {
        "authorization-bearer": (
            "scripts/call.sh",
            f"#!/bin/sh\ncurl -H 'Authorization: Bearer {bearer}' https://api.example.com/v1\n",
            2,
            "Bearer Token",
            bearer,
        ),
        "authorization-bearer-json": (
            "client/headers.json",
            '{\n  "headers": {"Authorization": "Bearer ' + bearer + '"}\n}\n',
            2,
            "Bearer Token",
            bearer,
        ),
        "kubeconfig-client-key-data": (
            "deploy/kubeconfig",
            "users:\n- name: ci\n  user:\n    client-key-data: " + kube + "\n",
            4,
            "Private Key",
            kube,
        ),
        "npmrc-authtoken-uuid": (
            ".npmrc",
            "registry=https://registry.npmjs.org/\n//registry.npmjs.org/:_authToken=" + npm + "\n",
            2,
            "npm Token",
            npm,
        ),
        "npmrc-bare-authtoken": (
            "web/.npmrc",
            "always-auth=true\n_authToken=" + npm + "\n",
            2,
            "npm Token",
            npm,
        ),
        "hugging-face": (
            "train/notes.md",
            "Pull the weights with\n\n    HF_HUB=" + hf + " huggingface-cli download\n",
            3,
            "Hugging Face Token",
            hf,
        ),
        "digitalocean": (
            "infra/do.tf",
            'provider "digitalocean" {\n  token = "' + do + '"\n}\n',
            2,
            "DigitalOcean Token",
            do,
        ),
        "shopify": (
            "shop/app.rb",
            "ShopifyAPI::Context.setup(\n  api_key: ENV['KEY'],\n  access_token: '"
            + shop
            + "',\n)\n",
            3,
            "Shopify Token",
            shop,
        ),
        "vault": (
            "ops/runbook.md",
            "# Unseal\n\nLog in with `vault login " + vault + "`.\n",
            3,
            "Vault Token",
            vault,
        ),
        "age": (
            "keys/age.txt",
            "# created: 2026-01-01T00:00:00Z\n# public key: age1qqq\n" + age + "\n",
            3,
            "age Secret Key",
            age,
        ),
        "google-oauth-json": (
            "auth/client_secret.json",
            '{"web": {"client_id": "1234.apps.googleusercontent.com",\n "client_secret": "'
            + gocspx
            + '"}}\n',
            2,
            "Google OAuth Client Secret",
            gocspx,
        ),
        "docker-auths": (
            "ci/docker/config.json",
            '{\n  "auths": {\n    "ghcr.io": {\n      "auth": "' + docker + '"\n    }\n  }\n}\n',
            4,
            "Docker Registry Auth",
            docker,
        ),
        "netrc-one-line": (
            "home/.netrc",
            "machine api.example.com login bot password " + netrc + "\n",
            1,
            ".netrc Password",
            netrc,
        ),
        "netrc-multi-line": (
            "home/_netrc",
            "machine api.example.com\n  login bot\n  password " + netrc + "\n",
            3,
            ".netrc Password",
            netrc,
        ),
        "der-key-body-without-header": (
            "deploy/key.b64",
            "# the deploy key, header stripped\n" + der + "\n",
            2,
            "Private Key",
            der,
        ),
        "openssh-key-body-without-header": (
            "deploy/id_ed25519.body",
            ssh + "\n",
            1,
            "Private Key",
            ssh,
        ),
        "x-api-key": (
            "api/request.http",
            "GET https://api.example.com/items\nX-Api-Key: " + apikey + "\n",
            2,
            "API Key Header",
            apikey,
        ),
        "x-api-key-python": (
            "api/client.py",
            'HEADERS = {\n    "x-api-key": "' + apikey + '",\n}\n',
            2,
            "API Key Header",
            apikey,
        ),
        "slack-bot": (
            "bots/slack.md",
            "Our bot posts as\n" + slack + "\n",
            2,
            "Slack Token",
            slack,
        ),
        "slack-app": (
            "bots/app.md",
            "Socket mode uses " + slack_app + " today.\n",
            1,
            "Slack Token",
            slack_app,
        ),
        "stripe-live": (
            "billing/setup.md",
            "Charge with " + stripe + " in production.\n",
            1,
            "Stripe Access Key",
            stripe,
        ),
    }


FORMATS = _formats()


def _scan(path: str, text: str) -> list[Finding]:
    return scan_files([ContextFile(path, text, "", len(text))])


@pytest.mark.parametrize("name", list(FORMATS))
def test_each_format_is_found_naming_its_line_and_kind(name: str) -> None:
    path, text, line, kind, _ = FORMATS[name]
    assert _scan(path, text) == [Finding(path, line, kind)]


@pytest.mark.parametrize(
    "comment", ["  # pragma: allowlist secret", "  // pragma: allowlist secret"]
)
def test_an_allowlist_comment_in_the_file_does_not_silence_the_scan(comment: str) -> None:
    """The file under review does not decide what may leave the machine; the operator's
    ``--allow-secrets`` does."""
    path, text, line, kind, _ = FORMATS["digitalocean"]
    lines = text.splitlines()
    lines[line - 1] += comment
    gh = "ghp_" + _rand(_ALNUM, 36)
    planted = "\n".join(lines) + "\n# pragma: allowlist nextline secret\ntoken = '" + gh + "'\n"
    assert _scan(path, planted) == [Finding(path, line, kind), Finding(path, 5, "GitHub Token")]


#: What documentation and templates write where a secret would go.
PLACEHOLDERS = {
    "bearer-angle": (
        "docs/api.md",
        "curl -H 'Authorization: Bearer <token>' https://api.example.com\n",
    ),
    "bearer-variable": ("ci.sh", 'curl -H "Authorization: Bearer ${TOKEN}" "$URL"\n'),
    "bearer-shell": ("ci.sh", 'curl -H "Authorization: Bearer $API_TOKEN" "$URL"\n'),
    "bearer-format": ("client.py", 'headers = {"Authorization": f"Bearer {key}"}\n'),
    "bearer-xxxx": ("docs/api.md", "Authorization: Bearer xxxxxxxxxxxxxxxxxxxxxxxx\n"),
    "bearer-prose": (
        "docs/auth.md",
        "Send a Bearer token in the Authorization header; the Bearer token is your API key.\n",
    ),
    "bearer-example": ("docs/api.md", "Authorization: Bearer your-api-key-goes-here\n"),
    "npm-variable": (".npmrc", "//registry.npmjs.org/:_authToken=${NPM_TOKEN}\n"),
    "npm-angle": (".npmrc", "_authToken=<your token>\n"),
    "x-api-key-variable": ("api.http", "X-Api-Key: {{apiKey}}\n"),
    "x-api-key-angle": ("docs/api.md", "X-Api-Key: <key>\n"),
    "hf-prose": (
        "docs/models.md",
        "Set HF_TOKEN to a token that starts with hf_ (read access is enough).\n",
    ),
    "hf-xxxx": ("docs/models.md", "export HF_TOKEN=hf_xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n"),
    "vault-prose": ("docs/vault.md", "Service tokens start with hvs. and batch tokens with hvb.\n"),
    "age-public": (
        "keys.txt",
        "# public key: age1ql3z7hjy54pw3hyww5ayyfg7zqgvc7w3j2elw8zmrj2kg5sfn9aqmcac8p\n",
    ),
    "docker-empty": ("config.json", '{"auths": {"ghcr.io": {"auth": ""}}}\n'),
    "docker-word": ("config.json", '{"auth": "required", "type": "basic"}\n'),
    "netrc-variable": (".netrc", "machine api.example.com login bot password $NETRC_PASSWORD\n"),
    "netrc-built-in-code": ("t.py", 'netrc = "machine h login bot password " + pw + "\\n"\n'),
    "netrc-prose": ("docs/login.md", "Type your password when the login prompt asks for it.\n"),
    "kubeconfig-certificate": (
        "kubeconfig",
        "    certificate-authority-data: "
        + base64.b64encode(b"-----BEGIN CERTIFICATE-----\n" + b"A" * 60).decode()
        + "\n",
    ),
    "python-kwargs": (
        "job.py",
        "    run(\n        max_tokens=options.max_tokens,\n"
        "        prompt_token_estimate=estimate,\n    )\n",
    ),
    "env-number": ("native.py", "EVAL_TOKEN_NS = 20_000_000\n"),
    "keyword-names": (
        "cfg.py",
        'NAMES = {"api_key_env": "api_key_env", "api_key": "api_run"}\n'
        'api_key_env = "GITHUB_TOKEN"\nSECRET_KIND = "Secret Keyword"\n',
    ),
    "stripe-test-placeholder": (
        "docs/billing.md",
        "Use sk_live_xxxxxxxxxxxxxxxxxxxxxxxx in production.\n",
    ),
    "uuid-and-sha": (
        "lock.md",
        "id 123e4567-e89b-12d3-a456-426614174000 sha256 " + "ab" * 32 + "\n",
    ),
}


@pytest.mark.parametrize("name", list(PLACEHOLDERS))
def test_placeholders_prose_and_code_are_not_flagged(name: str) -> None:
    path, text = PLACEHOLDERS[name]
    assert _scan(path, text) == []


def test_every_format_is_refused_before_sending_and_no_value_is_printed(
    repo: Path, cli: Cli, request: pytest.FixtureRequest
) -> None:
    sent: Sent = request.getfixturevalue("offline")  # every request recorded, none sent
    specs: list[str] = []
    seen: set[str] = set()
    for path, text, *_ in FORMATS.values():
        if path in seen:
            continue
        seen.add(path)
        (repo / path).parent.mkdir(parents=True, exist_ok=True)
        (repo / path).write_text(text, encoding="utf-8")
        specs += ["-c", path]
    before = files_under(repo)
    r = cli("run", *specs, "-p", "Check.", "--endpoint", REMOTE, "--max-attempts", "1")
    assert r.code == 8, r.err
    assert f"{len(seen)} secrets found: " in r.err
    for name, (path, _, line, kind, secret) in FORMATS.items():
        if name in {"authorization-bearer-json", "x-api-key-python", "netrc-multi-line"}:
            continue  # a second value of a file planted once
        assert f"{path}:{line} ({kind})" in r.err, name
        assert secret[-12:] not in r.err + r.out, name
    assert sent.urls == []
    assert files_under(repo) == before


def test_this_repository_s_docs_prompts_and_source_hold_no_finding() -> None:
    """Zero false positives on what a user is most likely to send: the README, docs/,
    prompts/ and the package itself (tests/ plant fake secrets on purpose)."""
    tracked = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "README.md", "docs", "prompts", "deepseek_review"],
        capture_output=True, text=True, check=True,
    ).stdout.split()  # fmt: skip
    files = []
    for rel in tracked:
        try:
            text = (ROOT / rel).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        files.append(ContextFile(rel, text, "", len(text)))
    assert len(files) > 50 and any(f.path == "README.md" for f in files)
    assert scan_files(files) == []
