"""Refusing to send secrets found in the context to an endpoint off this machine.

Detection runs detect-secrets' plugins (private keys, cloud and service tokens, keyword
assignments such as ``password = "..."``) through their public plugin interface
(:meth:`~detect_secrets.plugins.base.BasePlugin.analyze_line`, given the file name so the
keyword plugin reads ``password: ...`` in YAML and INI files as an assignment), filtered by
detect-secrets' public heuristics (``filters.heuristic``: UUIDs, ``${TEMPLATES}``, indirect
references). Its two high-entropy plugins and its public-IP plugin are left out: they flag
every sha256 in a receipt or lock file and would make the check useless here. Inline
``pragma: allowlist secret`` comments are not honoured: they are written by whoever wrote the
file, and the repository is not the operator (``--allow-secrets`` is).

Our own rules are detect-secrets plugins too (:class:`Rule`, a ``RegexBasedDetector``), for
what detect-secrets misses: unquoted ``.env``-style assignments, today's API key formats
(Anthropic, OpenAI project keys, Google, GitHub fine-grained, Hugging Face, DigitalOcean,
Shopify, Vault, age, Google OAuth client secrets, Slack app tokens), ``Authorization:
basic|bearer`` and API-key headers, npm, Docker and ``.netrc`` credentials, and private keys
that carry no PEM header (base64 of a PEM file, as in a kubeconfig's ``client-key-data``, or a
bare DER/OpenSSH key body). Each rule names the value it found and refuses placeholders
(``<token>``, ``${TOKEN}``, ``xxxx``), so docs that explain a format are not flagged.

A finding names file, line and kind; the secret itself is never printed. If detect-secrets
lacks a plugin the scan relies on, the scan refuses to run rather than pass everything.

This is a guard against accidents, not a guarantee: see docs/explanation/threat-model.md.
"""

from __future__ import annotations

import base64
import binascii
import importlib
import posixpath
import re
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from detect_secrets.plugins.base import BasePlugin, RegexBasedDetector

from deepseek_review.context.gather import ContextFile
from deepseek_review.errors import ConfigError, SecretsFound
from deepseek_review.options.table import name_of

#: detect-secrets' plugins the scan runs, by module under ``detect_secrets.plugins`` and class.
DETECT_SECRETS_PLUGINS: tuple[tuple[str, str], ...] = (
    ("artifactory", "ArtifactoryDetector"),
    ("aws", "AWSKeyDetector"),
    ("azure_storage_key", "AzureStorageKeyDetector"),
    ("basic_auth", "BasicAuthDetector"),
    ("cloudant", "CloudantDetector"),
    ("discord", "DiscordBotTokenDetector"),
    ("github_token", "GitHubTokenDetector"),
    ("gitlab_token", "GitLabTokenDetector"),
    ("ibm_cloud_iam", "IbmCloudIamDetector"),
    ("ibm_cos_hmac", "IbmCosHmacDetector"),
    ("jwt", "JwtTokenDetector"),
    ("keyword", "KeywordDetector"),
    ("mailchimp", "MailchimpDetector"),
    ("npm", "NpmDetector"),
    ("openai", "OpenAIDetector"),
    ("private_key", "PrivateKeyDetector"),
    ("pypi_token", "PypiTokenDetector"),
    ("sendgrid", "SendGridDetector"),
    ("slack", "SlackDetector"),
    ("softlayer", "SoftlayerDetector"),
    ("square_oauth", "SquareOAuthDetector"),
    ("stripe", "StripeDetector"),
    ("telegram_token", "TelegramBotTokenDetector"),
    ("twilio", "TwilioKeyDetector"),
)

_PLACEHOLDER = re.compile(
    r"^(?:x+|\*+|\.+|changeme|change[-_]me|replace[-_]?me|redacted|placeholder|todo|none|null"
    r"|(?:example|sample|your|my|dummy|fake|test)[\w.-]*)$",
    re.I,
)
_ENV_KIND = ".env-style secret assignment"
_KEYWORD_KIND = "Secret Keyword"
_PRIVATE_KEY_KIND = "Private Key"
#: Kinds that name where a secret sits, not what it is: a more specific kind wins the line.
_GENERIC_KINDS = (_KEYWORD_KIND, _ENV_KIND)


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    kind: str


# --------------------------------------------------------------------------- value checks


#: What docs put where a key's random part goes: ``sk_live_xxxxxxxx``, ``hf_********``.
_FILLER = re.compile(r"([xX*.0])\1{5,}")


def _not_placeholder(value: str) -> bool:
    return not _PLACEHOLDER.match(value) and value[:1] not in "$<{%" and not _FILLER.search(value)


_CODE_REFERENCE = re.compile(
    r"[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)*,|[a-z_][a-z0-9_]*(?:\.[a-z_][a-z0-9_]*)+"
)
_NAME = re.compile(
    r"[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|[a-z]+(?:_[a-z]+)+|[A-Z][a-z]+(?: [A-Z][a-z]+)+|\S+(?: \S+){2,}"
)


def _env_value(value: str) -> bool:
    """A value, not code: ``max_tokens=options.max_tokens,`` is a Python argument, and a
    value without a letter (``20_000_000``) is a number."""
    return (
        _not_placeholder(value)
        and any(c.isalpha() for c in value)
        and not _CODE_REFERENCE.fullmatch(value)
    )


def _a_name(value: str) -> bool:
    """What a keyword assignment holds when it is not a secret: the name of a variable
    (``GITHUB_TOKEN``), an identifier (``api_key_env``), a title (``Private Key``) or a
    sentence."""
    return bool(_NAME.fullmatch(value))


def _random_looking(value: str) -> bool:
    """A real key has many distinct characters; ``XXXX…`` or ``0000…`` in docs has few."""
    return len(set(value)) >= 8 and _not_placeholder(value)


def _token(value: str) -> bool:
    """An opaque token: random-looking, with a digit or both cases (not a word or a name)."""
    mixed = any(c.isupper() for c in value) and any(c.islower() for c in value)
    return _random_looking(value) and (mixed or any(c.isdigit() for c in value))


def _b64(value: str) -> bytes:
    """``value`` decoded as (standard or URL-safe) base64, cut to whole quanta; b"" if not."""
    value = value.rstrip("=")
    value = value[: len(value) - len(value) % 4]
    try:
        return base64.b64decode(value.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError):
        return b""


def _credentials(value: str) -> bool:
    """Basic auth is base64 of ``user:password``; a word after "basic" is not."""
    try:
        decoded = base64.b64decode(value + "=" * (-len(value) % 4), validate=True)
    except (binascii.Error, ValueError):
        return False
    return b":" in decoded


def _pem_private_key(value: str) -> bool:
    """Base64 of a PEM private key (a kubeconfig's ``client-key-data``), not a certificate."""
    return b"PRIVATE KEY" in _b64(value)


def _key_body(value: str) -> bool:
    """A private key's body without its PEM lines: an OpenSSH key, or DER that starts as
    every private key structure does (a SEQUENCE whose first element is the version 0 or 1:
    PKCS#1, PKCS#8, SEC1). Certificates and public keys start with a SEQUENCE instead."""
    der = _b64(value)
    if der.startswith(b"openssh-key-v1\0"):
        return True
    if len(der) < 8 or der[0] != 0x30:
        return False
    size = der[1]
    at = 2 + (size - 0x80 if 0x81 <= size <= 0x83 else 0)
    return der[at : at + 3] in (b"\x02\x01\x00", b"\x02\x01\x01")


# --------------------------------------------------------------------------- our plugins


class Rule(RegexBasedDetector):
    """One of our rules as a detect-secrets plugin: each pattern has a ``secret`` group, which
    ``accept`` must take (not a placeholder); ``files`` limits the rule by file name."""

    secret_type = "deepseek_review_rule"
    denylist: tuple[re.Pattern[str], ...] = ()

    def __init__(
        self,
        kind: str,
        patterns: Iterable[re.Pattern[str]],
        accept: Callable[[str], bool],
        files: re.Pattern[str] | None = None,
    ) -> None:
        self.secret_type = kind
        self.denylist = tuple(patterns)
        self._accept = accept
        self._files = files

    def analyze_string(self, string: str) -> Generator[str, None, None]:
        for pattern in self.denylist:
            for m in pattern.finditer(string):
                if self._accept(m.group("secret")):
                    yield m.group("secret")

    def applies_to(self, filename: str) -> bool:
        return not self._files or bool(self._files.fullmatch(posixpath.basename(filename)))

    def analyze_line(self, filename: str, line: str, *args: Any, **kwargs: Any) -> Any:
        if not self.applies_to(filename):
            return set()
        return super().analyze_line(filename, line, *args, **kwargs)

    def json(self) -> dict[str, Any]:
        return {"name": f"deepseek-review: {self.secret_type}"}


def _key(prefix: str, body: str) -> re.Pattern[str]:
    """A token that starts with ``prefix``, not in the middle of a longer word."""
    return re.compile(rf"(?<![\w-]){prefix}(?P<secret>{body})(?![\w-])")


def _header(names: str) -> re.Pattern[str]:
    """``Name: value`` as a header line, a curl ``-H``, or a JSON/YAML/dict entry."""
    return re.compile(
        rf"""(?<![\w-])(?:{names})["']?[ \t]*[:=][ \t]*["']?"""
        r"(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)(?![\w.~+/=-])",
        re.IGNORECASE,
    )


_ENV = re.compile(
    r"""^\s*(?:export\s+)?
    (?P<name>[A-Za-z0-9_]*(?:PASSWORD|PASSWD|SECRET|TOKEN|API_?KEY|ACCESS_?KEY|PRIVATE_?KEY|CREDENTIALS?)[A-Za-z0-9_]*)
    \s*=\s*
    (?P<secret>[^\s#'"$`{}()<>]{8,})\s*(?:\#.*)?$""",
    re.VERBOSE | re.IGNORECASE | re.MULTILINE,
)
_B64 = r"[A-Za-z0-9+/]"
#: A .netrc password, perhaps quoted; a quote alone is code that builds one.
_NETRC_VALUE = r"""[ \t]+["']?(?P<secret>[^\s"']{4,})"""
_NETRC_FILES = re.compile(r"[._]?netrc", re.IGNORECASE)

#: (kind, patterns, accept, file names or None), made plugins by :func:`own_plugins`.
_RULES: tuple[
    tuple[str, tuple[re.Pattern[str], ...], Callable[[str], bool], re.Pattern[str] | None], ...
] = (
    (_ENV_KIND, (_ENV,), _env_value, None),
    # sk-ant-api03-<93>AA, sk-ant-admin01-..., sk-ant-oat01-...
    (
        "Anthropic API Key",
        (_key(r"sk-ant-[a-z]+\d*-", r"[A-Za-z0-9_-]{32,}"),),
        _random_looking,
        None,
    ),
    # Project, service-account and admin keys; detect-secrets finds only those whose
    # "T3BlbkFJ" marker sits between two runs of 20 letters and digits.
    (
        "OpenAI Token",
        (_key(r"sk-(?:proj|svcacct|admin)-", r"[A-Za-z0-9_-]{40,}"),),
        _random_looking,
        None,
    ),
    ("Google API Key", (_key("AIza", r"[0-9A-Za-z_-]{35}"),), _random_looking, None),
    ("Google OAuth Client Secret", (_key("GOCSPX-", r"[0-9A-Za-z_-]{28}"),), _random_looking, None),
    # Fine-grained tokens: github_pat_<22>_<59>; detect-secrets knows only ghp_ and friends.
    ("GitHub Token", (_key("github_pat_", r"[A-Za-z0-9_]{60,}"),), _random_looking, None),
    ("Hugging Face Token", (_key("hf_", r"[A-Za-z0-9]{34,}"),), _token, None),
    ("DigitalOcean Token", (_key("do[opr]_v1_", r"[a-f0-9]{64}"),), _random_looking, None),
    ("Shopify Token", (_key("shp(?:at|ca|pa|ss)_", r"[a-fA-F0-9]{32}"),), _random_looking, None),
    ("Vault Token", (_key(r"hv[sbr]\.", r"[A-Za-z0-9_-]{24,}"),), _token, None),
    (
        "age Secret Key",
        (_key("AGE-SECRET-KEY-1", "[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),),
        _random_looking,
        None,
    ),
    ("Slack Token", (_key(r"xapp-\d-", r"[A-Z0-9]+-\d+-[a-f0-9]{32,}"),), _random_looking, None),
    (
        "Basic Auth Credentials",
        (
            re.compile(
                rf"authorization:[ \t]*basic[ \t]+(?P<secret>{_B64}{{8,}}={{0,2}})(?![\w+/=])", re.I
            ),
        ),
        _credentials,
        None,
    ),
    (
        "Bearer Token",
        (
            re.compile(
                r"""(?<![\w-])authorization["']?[ \t]*[:=][ \t]*["']?bearer[ \t]+"""
                r"(?P<secret>[A-Za-z0-9._~+/-]{16,}=*)(?![\w.~+/=-])",
                re.IGNORECASE,
            ),
        ),
        _token,
        None,
    ),
    (
        "API Key Header",
        (_header(r"x-api-key|x-auth-token|x-api-token|private-token|x-goog-api-key"),),
        _token,
        None,
    ),
    (
        "npm Token",
        (
            re.compile(
                r"""(?<![\w-])_(?:authToken|auth|password)[ \t]*=[ \t]*(?P<secret>[^\s'"`]{8,})"""
            ),
        ),
        _not_placeholder,
        None,
    ),
    (
        "Docker Registry Auth",
        (re.compile(rf'"auth"[ \t]*:[ \t]*"(?P<secret>{_B64}{{8,}}={{0,2}})"'),),
        _credentials,
        None,
    ),
    (
        "Docker Registry Auth",
        (
            re.compile(
                r'"(?:identitytoken|registrytoken)"[ \t]*:[ \t]*"(?P<secret>[^"\s]{16,})"', re.I
            ),
        ),
        _token,
        None,
    ),
    (
        ".netrc Password",
        (
            re.compile(r"(?<!\S)machine[ \t]+\S+.*?(?<!\S)password" + _NETRC_VALUE),
            re.compile(r"(?<!\S)login[ \t]+\S+[ \t]+password" + _NETRC_VALUE),
        ),
        _not_placeholder,
        None,
    ),
    (
        ".netrc Password",
        (re.compile(r"^\s*password" + _NETRC_VALUE, re.MULTILINE),),
        _not_placeholder,
        _NETRC_FILES,
    ),
    (
        _PRIVATE_KEY_KIND,
        (
            re.compile(
                r"(?<![\w-])client-key-data[\"']?[ \t]*:[ \t]*[\"']?"
                rf"(?P<secret>{_B64}{{40,}}={{0,2}})"
            ),
            re.compile(rf"(?<![\w+/=])(?P<secret>LS0tLS1CRUdJTi{_B64}{{20,}}={{0,2}})"),
        ),
        _pem_private_key,
        None,
    ),
    (
        _PRIVATE_KEY_KIND,
        (
            re.compile(
                rf"(?<![\w+/=])(?P<secret>(?:M|b3BlbnNzaC1rZXktdjE){_B64}{{39,}}={{0,2}})(?![\w+/=])"
            ),
        ),
        _key_body,
        None,
    ),
)


def own_plugins() -> list[Rule]:
    """Our rules, one plugin per kind and pattern set."""
    return [Rule(kind, patterns, accept, files) for kind, patterns, accept, files in _RULES]


def detect_secrets_plugins() -> list[BasePlugin]:
    """detect-secrets' plugins, or a refusal to scan at all (never a silent pass)."""
    out: list[BasePlugin] = []
    for module, name in DETECT_SECRETS_PLUGINS:
        try:
            cls = getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), name)
            plugin = cls()
        except (ImportError, AttributeError, TypeError) as exc:
            from importlib.metadata import version

            raise ConfigError(
                f"the secret scan cannot run: detect-secrets {version('detect-secrets')} lacks "
                f"the plugin {module}.{name} ({type(exc).__name__})",
                hint=f"install a detect-secrets that has it, or pass {name_of('allow_secrets')} "
                "to send unscanned",
            ) from None
        if not isinstance(plugin, BasePlugin):
            raise ConfigError(
                f"the secret scan cannot run: detect-secrets' {module}.{name} is not a plugin",
                hint=f"pass {name_of('allow_secrets')} to send unscanned",
            )
        out.append(plugin)
    return out


def _filtered(plugin: BasePlugin, secret: str, line: str) -> bool:
    """detect-secrets' public heuristics, which its own scan applies to every finding:
    sequences, UUIDs, ``{templates}``, ``$VARIABLES``, ``x = get_secret()``, ``id = ...``."""
    from detect_secrets.filters import heuristic as h

    return (
        h.is_sequential_string(secret)
        or h.is_potential_uuid(secret)
        or h.is_likely_id_string(secret, line, plugin)
        or h.is_templated_secret(secret)
        or h.is_prefixed_with_dollar_sign(secret)
        or h.is_indirect_reference(line)
        or h.is_not_alphanumeric_string(secret)
        or bool(_FILLER.search(secret))
        or (plugin.secret_type == _KEYWORD_KIND and _a_name(secret))
    )


def _findings(files: Sequence[ContextFile]) -> Iterator[Finding]:
    theirs = detect_secrets_plugins()
    ours = own_plugins()
    for f in files:
        plugins = [*theirs, *(rule for rule in ours if rule.applies_to(f.path))]
        # NOTE: scans the text that will be sent, not the file on disk (which may differ).
        for n, raw in enumerate(f.text.splitlines(), start=1):
            line = raw.rstrip()
            for plugin in plugins:
                for s in plugin.analyze_line(filename=f.path, line=line, line_number=n):
                    if isinstance(plugin, Rule) or not _filtered(
                        plugin, s.secret_value or "", line
                    ):
                        yield Finding(f.path, n, s.type)


def scan_files(files: Sequence[ContextFile]) -> list[Finding]:
    """One finding per line that holds a secret, in context order; a private key, which
    spans lines (its PEM header, then the body), is one finding at its first line.

    Where a generic rule (a ``.env`` assignment, a secret keyword) and a specific one both
    fire on one line (e.g. ``aws_access_key_id = AKIA...``), the specific kind names it.
    """
    from detect_secrets.settings import transient_settings

    best: dict[tuple[str, int], Finding] = {}
    # Default filters only: never the verification one, which would send what it found to
    # the service that issued it (Slack, Stripe...) to ask whether it is live.
    with transient_settings({"filters_used": []}):
        found = list(_findings(files))
    for finding in found:
        where = (finding.path, finding.line)
        if where not in best or _rank(finding) < _rank(best[where]):
            best[where] = finding
    order = {f.path: i for i, f in enumerate(files)}
    ordered = sorted(best.values(), key=lambda x: (order[x.path], x.line))
    return [f for f in ordered if not _continues_a_key(f, best)]


def _continues_a_key(finding: Finding, best: dict[tuple[str, int], Finding]) -> bool:
    """A private key's line right below another: the same key's body."""
    above = best.get((finding.path, finding.line - 1))
    return finding.kind == above.kind == _PRIVATE_KEY_KIND if above else False


def _rank(finding: Finding) -> tuple[int, str]:
    generic = finding.kind in _GENERIC_KINDS
    return (_GENERIC_KINDS.index(finding.kind) + 1 if generic else 0, finding.kind)


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
