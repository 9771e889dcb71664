"""Refusing to send secrets found in the context to an endpoint off this machine.

Detection is detect-secrets' plugins (private keys, cloud and service tokens, keyword
assignments such as ``password = "..."``), minus its two high-entropy plugins, which flag
every sha256 in a receipt or lock file and would make the check useless here, plus rules of
our own for what detect-secrets 1.5 misses: unquoted ``.env``-style assignments
(``DB_PASSWORD=hunter2``), today's API key formats (Anthropic ``sk-ant-``, OpenAI
``sk-proj-``, Google ``AIza``, GitHub ``github_pat_``) wherever they appear, and
``Authorization: basic`` headers (what ``actions/checkout`` writes into ``.git/config``).
A finding names file, line and kind; the secret itself is never printed.

detect-secrets is called through ``scan._process_line_based_plugins``, which is private: its
public ``scan_line`` scans without the file name, so it misses keyword secrets in YAML and INI
files. pyproject.toml therefore pins the minor version, a test checks the call's shape, and if
the function is gone the scan refuses to run rather than pass everything.

This is a guard against accidents, not a guarantee: see the README's threat model.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from .context import ContextFile
from .errors import ConfigError, SecretsFound
from .options import name_of

_SKIPPED_PLUGINS = {"Base64HighEntropyString", "HexHighEntropyString", "IPPublicDetector"}
_PLACEHOLDER = re.compile(
    r"^(?:x+|\*+|\.+|changeme|change[-_]me|replace[-_]?me|redacted|placeholder|todo|none|null"
    r"|(?:example|sample|your|my|dummy|fake|test)[\w.-]*)$",
    re.I,
)
_ENV_KIND = ".env-style secret assignment"


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    kind: str


@dataclass(frozen=True)
class _Rule:
    """A line holds a secret of ``kind`` if ``pattern`` finds a ``secret`` group that
    ``accept`` takes (not a placeholder)."""

    kind: str
    pattern: re.Pattern[str]
    accept: Callable[[str], bool]


def _not_placeholder(value: str) -> bool:
    return not _PLACEHOLDER.match(value)


def _random_looking(value: str) -> bool:
    """A real key has many distinct characters; ``XXXX…`` or ``0000…`` in docs has few."""
    return len(set(value)) >= 8


def _credentials(value: str) -> bool:
    """Basic auth is base64 of ``user:password``; a word after "basic" is not."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded


def _key(prefix: str, body: str) -> re.Pattern[str]:
    """A token that starts with ``prefix``, not in the middle of a longer word."""
    return re.compile(rf"(?<![\w-]){prefix}(?P<secret>{body})(?![\w-])")


_RULES: tuple[_Rule, ...] = (
    _Rule(
        _ENV_KIND,
        re.compile(
            r"""^\s*(?:export\s+)?
            (?P<name>[A-Za-z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?)[A-Za-z0-9_]*)
            \s*=\s*
            (?P<secret>[^\s#'"$`{}()<>]{8,})\s*(?:\#.*)?$""",
            re.VERBOSE | re.IGNORECASE,
        ),
        _not_placeholder,
    ),
    # sk-ant-api03-<93>AA, sk-ant-admin01-..., sk-ant-oat01-...
    _Rule("Anthropic API Key", _key(r"sk-ant-[a-z]+\d*-", r"[A-Za-z0-9_-]{32,}"), _random_looking),
    # Project, service-account and admin keys; detect-secrets finds only those whose
    # "T3BlbkFJ" marker sits between two runs of 20 letters and digits.
    _Rule(
        "OpenAI Token",
        _key(r"sk-(?:proj|svcacct|admin)-", r"[A-Za-z0-9_-]{40,}"),
        _random_looking,
    ),
    _Rule("Google API Key", _key("AIza", r"[0-9A-Za-z_-]{35}"), _random_looking),
    # Fine-grained tokens: github_pat_<22>_<59>; detect-secrets knows only ghp_ and friends.
    _Rule("GitHub Token", _key("github_pat_", r"[A-Za-z0-9_]{60,}"), _random_looking),
    _Rule(
        "Basic Auth Credentials",
        re.compile(
            r"authorization:[ \t]*basic[ \t]+(?P<secret>[A-Za-z0-9+/]{8,}={0,2})(?![\w+/=])",
            re.IGNORECASE,
        ),
        _credentials,
    ),
)


def _rule_findings(f: ContextFile) -> Iterator[Finding]:
    for n, line in enumerate(f.text.splitlines(), start=1):
        for rule in _RULES:
            m = rule.pattern.search(line)
            if m and rule.accept(m.group("secret")):
                yield Finding(f.path, n, rule.kind)


def _line_scanner() -> Callable[[list[tuple[int, str]], str], Iterable[Any]]:
    """detect-secrets' line scanner, or a refusal to scan at all (never a silent pass)."""
    from detect_secrets.core import scan

    scanner = getattr(scan, "_process_line_based_plugins", None)
    if scanner is None:
        from importlib.metadata import version

        raise ConfigError(
            f"the secret scan cannot run: detect-secrets {version('detect-secrets')} lacks "
            "the line scanner deepseek-review calls",
            hint=f"install detect-secrets>=1.5,<1.6, or pass {name_of('allow_secrets')} to send "
            "unscanned",
        )
    return scanner  # type: ignore[no-any-return]


def _detect_secrets_findings(files: Sequence[ContextFile]) -> Iterable[Finding]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.settings import transient_settings

    scan_lines = _line_scanner()
    classes: list[type] = list(get_mapping_from_secret_type_to_class().values())
    plugins = [{"name": c.__name__} for c in classes if c.__name__ not in _SKIPPED_PLUGINS]
    with transient_settings({"plugins_used": plugins}):
        for f in files:
            lines = list(enumerate(f.text.splitlines(), start=1))
            # NOTE: scans the text that will be sent, not the file on disk (which may differ).
            for secret in scan_lines(lines, f.path):
                yield Finding(f.path, secret.line_number, secret.type)


def scan_files(files: Sequence[ContextFile]) -> list[Finding]:
    """One finding per line that holds a secret, in context order.

    Where the ``.env`` rule and a more specific rule or plugin both fire on one line (e.g.
    ``aws_access_key_id = AKIA...``), the specific kind names it.
    """
    best: dict[tuple[str, int], Finding] = {}
    own = (x for f in files for x in _rule_findings(f))
    for finding in (*_detect_secrets_findings(files), *own):
        where = (finding.path, finding.line)
        if where not in best or _rank(finding) < _rank(best[where]):
            best[where] = finding
    order = {f.path: i for i, f in enumerate(files)}
    return sorted(best.values(), key=lambda x: (order[x.path], x.line))


def _rank(finding: Finding) -> tuple[bool, str]:
    return (finding.kind == _ENV_KIND, finding.kind)


def refuse_secrets(files: Sequence[ContextFile], *, endpoint: str) -> None:
    """Raise :class:`SecretsFound` naming every finding, before anything is sent."""
    findings = scan_files(files)
    if not findings:
        return
    if len(findings) == 1:
        (f,) = findings
        raise SecretsFound(
            f"{f.path}:{f.line}: looks like a secret ({f.kind}); refusing to send it to {endpoint}",
            hint=f"remove it from the context, or pass {name_of('allow_secrets')} if it is not a "
            "secret",
        )
    listed = ", ".join(f"{f.path}:{f.line} ({f.kind})" for f in findings)
    raise SecretsFound(
        f"{len(findings)} secrets found: {listed}; refusing to send them to {endpoint}",
        hint=f"remove them from the context, or pass {name_of('allow_secrets')} if they are not "
        "secrets",
    )
