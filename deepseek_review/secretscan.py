"""Refusing to send secrets found in the context to an endpoint off this machine.

Detection is detect-secrets' plugins (private keys, cloud and service tokens, keyword
assignments such as ``password = "..."``), minus its two high-entropy plugins, which flag
every sha256 in a receipt or lock file and would make the check useless here. detect-secrets
misses unquoted ``.env``-style assignments (``DB_PASSWORD=hunter2``), so one rule for exactly
those is added. A finding names file, line and kind; the secret itself is never printed.

This is a guard against accidents, not a guarantee: see the README's threat model.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from .context import ContextFile
from .errors import SecretsFound

_SKIPPED_PLUGINS = {"Base64HighEntropyString", "HexHighEntropyString", "IPPublicDetector"}
_ENV_ASSIGNMENT = re.compile(
    r"""^\s*(?:export\s+)?
    (?P<name>[A-Za-z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?)[A-Za-z0-9_]*)
    \s*=\s*
    (?P<value>[^\s#'"$`{}()<>]{8,})\s*(?:\#.*)?$""",
    re.VERBOSE | re.IGNORECASE,
)
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


def _env_findings(f: ContextFile) -> Iterable[Finding]:
    for n, line in enumerate(f.text.splitlines(), start=1):
        m = _ENV_ASSIGNMENT.match(line)
        if m and not _PLACEHOLDER.match(m.group("value")):
            yield Finding(f.path, n, _ENV_KIND)


def _detect_secrets_findings(files: Sequence[ContextFile]) -> Iterable[Finding]:
    from detect_secrets.core import scan
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.settings import transient_settings

    classes: list[type] = list(get_mapping_from_secret_type_to_class().values())
    plugins = [{"name": c.__name__} for c in classes if c.__name__ not in _SKIPPED_PLUGINS]
    with transient_settings({"plugins_used": plugins}):
        for f in files:
            lines = list(enumerate(f.text.splitlines(), start=1))
            # NOTE: scans the text that will be sent, not the file on disk (which may differ).
            for secret in scan._process_line_based_plugins(lines, f.path):
                yield Finding(f.path, secret.line_number, secret.type)


def scan_files(files: Sequence[ContextFile]) -> list[Finding]:
    """One finding per line that holds a secret, in context order.

    Where the ``.env`` rule and a detect-secrets plugin both fire on one line (e.g.
    ``aws_access_key_id = AKIA...``), the plugin's more specific kind names it.
    """
    best: dict[tuple[str, int], Finding] = {}
    env = (x for f in files for x in _env_findings(f))
    for finding in (*_detect_secrets_findings(files), *env):
        where = (finding.path, finding.line)
        if where not in best or _rank(finding) < _rank(best[where]):
            best[where] = finding
    order = {f.path: i for i, f in enumerate(files)}
    return sorted(best.values(), key=lambda x: (order[x.path], x.line))


def _rank(finding: Finding) -> tuple[bool, str]:
    return (finding.kind == _ENV_KIND, finding.kind)


def refuse_secrets(files: Sequence[ContextFile], *, endpoint: str) -> None:
    """Raise :class:`SecretsFound` naming the first finding, before anything is sent."""
    findings = scan_files(files)
    if not findings:
        return
    first = findings[0]
    more = f" and {len(findings) - 1} more" if len(findings) > 1 else ""
    raise SecretsFound(
        f"{first.path}:{first.line}: looks like a secret ({first.kind}){more}; refusing to "
        f"send it to {endpoint}",
        hint="remove it from the context, or pass --allow-secrets if it is not a secret",
    )
