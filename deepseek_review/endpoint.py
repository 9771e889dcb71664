"""Which URL a review is sent to, and whether the API key may travel there.

Precedence: ``--endpoint`` (a full ``.../chat/completions`` URL, or a base URL to which
``/v1/chat/completions`` is added), else ``OLLAMA_HOST`` read by Ollama's own rules
(``envconfig.Host()``: bare host → http and port 11434, ``ollama.com`` → https), else
``http://localhost:11434``.

The key (``OLLAMA_API_KEY`` by default) is sent as ``Authorization: Bearer``. It is never sent
over plain http to a host that is not loopback: that is refused, not silently dropped, so a
misconfiguration is noticed. Credentials inside the URL are refused outright because the URL is
written into every receipt.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import SplitResult, parse_qsl, urlsplit, urlunsplit

from .errors import ConfigError

CHAT_PATH = "/v1/chat/completions"
DEFAULT_HOST = "http://localhost:11434"
DEFAULT_KEY_ENV = "OLLAMA_API_KEY"
_UNSAFE_URL_CHARS = re.compile(r"[\x00-\x20\x7f]")
_ENV_NAME_RE = re.compile(r"[^=\x00]+")
_SECRET_QUERY_RE = re.compile(r"key|token|secret|passw|auth|sig|credential", re.IGNORECASE)


@dataclass(frozen=True)
class Endpoint:
    """Where to send, and with which key (never printed: ``repr`` hides it)."""

    url: str
    api_key: str | None = field(default=None, repr=False)
    source: str = "default"
    """Where the URL came from: ``--endpoint``, ``OLLAMA_HOST`` or ``default``."""

    @property
    def is_loopback(self) -> bool:
        return is_loopback_host(urlsplit(self.url).hostname or "")

    @property
    def is_local(self) -> bool:
        """Loopback: context sent there does not leave this machine."""
        return self.is_loopback


def is_loopback_host(host: str) -> bool:
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def ollama_host_url(value: str) -> str:
    """``OLLAMA_HOST`` as Ollama's ``envconfig.Host()`` reads it, as a base URL."""
    s = value.strip()
    default_port = "11434"
    if "://" in s:
        scheme, hostport = s.split("://", 1)
        if scheme == "http":
            default_port = "80"
        elif scheme == "https":
            default_port = "443"
        else:
            raise ConfigError(f"OLLAMA_HOST {value!r}: unsupported scheme {scheme!r}")
    else:
        scheme, hostport = "http", s
        if s == "ollama.com":
            scheme, hostport = "https", "ollama.com:443"
    hostport, _, path = hostport.partition("/")
    host, port = _split_host_port(hostport)
    if host is None:
        host = hostport.strip("[]")
        port = default_port
    if host in ("", "0.0.0.0"):  # none (":7000"), or a bind address: clients reach loopback
        host = "127.0.0.1"
    elif host == "::":
        host = "::1"
    if port is None or not port.isdigit() or not 0 < int(port) <= 65535:
        raise ConfigError(f"OLLAMA_HOST {value!r}: invalid port {port!r}")
    netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    return urlunsplit((scheme, netloc, "/" + path if path else "", "", ""))


def _split_host_port(hostport: str) -> tuple[str | None, str | None]:
    """Go's ``net.SplitHostPort``: None when there is no port."""
    if hostport.startswith("["):
        end = hostport.find("]")
        if end != -1 and hostport[end + 1 : end + 2] == ":":
            return hostport[1:end], hostport[end + 2 :]
        return None, None
    if hostport.count(":") == 1:
        host, port = hostport.split(":")
        return host, port
    return None, None


def chat_url(base_or_full: str, *, what: str = "--endpoint") -> str:
    """Validate a URL and complete it to the chat-completions path."""
    if "://" not in base_or_full:
        shown = _safe("http://" + base_or_full.strip().lstrip("/"))
        raise ConfigError(
            f"{what} {shown[7:]!r}: not a URL (no http:// or https://); did you mean {shown}?"
        )
    if _UNSAFE_URL_CHARS.search(base_or_full.strip()):
        # urlsplit silently drops tabs and newlines: "http://exam\nple.com" would become
        # another host, and the URL goes into every receipt. Refuse instead.
        escaped = base_or_full.strip().encode("unicode_escape").decode("ascii")
        raise ConfigError(
            f"{what} '{_safe(escaped)}': malformed URL (a space or control character in it)"
        )
    try:
        parts: SplitResult = urlsplit(base_or_full.strip())
        parts.port  # noqa: B018  (raises ValueError on a bad port)
    except ValueError as exc:
        raise ConfigError(f"{what} {base_or_full!r}: malformed URL ({exc})") from None
    if parts.scheme not in ("http", "https"):
        shown = parts.scheme or "none"
        raise ConfigError(
            f"{what} {_safe(base_or_full)}: unsupported scheme {shown!r} (use http or https)"
        )
    if not parts.hostname:
        raise ConfigError(f"{what} {_safe(base_or_full)}: no host")
    if parts.username is not None or parts.password is not None:
        raise ConfigError(
            f"{what}: credentials in the URL are refused (they would be written into "
            f"receipts); put the key in {DEFAULT_KEY_ENV} instead"
        )
    if parts.fragment:
        raise ConfigError(f"{what} {_safe(base_or_full)}: a URL fragment is not allowed")
    for name, _ in parse_qsl(parts.query, keep_blank_values=True):
        if _SECRET_QUERY_RE.search(name):
            raise ConfigError(
                f"{what}: query parameter {name!r} looks like a credential and would be "
                f"written into receipts; put the key in {DEFAULT_KEY_ENV} instead"
            )
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path = path + "/chat/completions" if path.endswith("/v1") else path + CHAT_PATH
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def _safe(url: str) -> str:
    """A URL for an error message: userinfo and query removed."""
    try:
        p = urlsplit(url)
        netloc = p.netloc.rpartition("@")[2]
        return urlunsplit((p.scheme, netloc, p.path, "", ""))
    except ValueError:
        return "<malformed URL>"


def resolve_endpoint(
    endpoint: str | None,
    env: Mapping[str, str],
    *,
    key_env: str = DEFAULT_KEY_ENV,
    what: str = "--endpoint",
) -> Endpoint:
    """The endpoint and key for a run, refusing combinations that would leak the key.

    ``what`` names where ``endpoint`` came from in errors (a receipt's field, say).
    """
    if endpoint:
        url, source = chat_url(endpoint, what=what), "--endpoint"
    elif env.get("OLLAMA_HOST", "").strip():
        url, source = (
            chat_url(ollama_host_url(env["OLLAMA_HOST"]), what="OLLAMA_HOST"),
            ("OLLAMA_HOST"),
        )
    else:
        url, source = chat_url(DEFAULT_HOST), "default"
    if not _ENV_NAME_RE.fullmatch(key_env) or not key_env.strip():
        raise ConfigError(f"--api-key-env {key_env!r}: not an environment variable name")
    raw = env.get(key_env, "")
    key = raw.strip() or None
    if raw and (key is None or "\n" in key or "\r" in key):
        raise ConfigError(f"{key_env} is set but is not a usable key (empty or multi-line)")
    if key and not all("!" <= c <= "~" for c in key):
        # An HTTP header carries visible ASCII only; anything else would fail deep inside
        # the HTTP library, with the key quoted in its message.
        raise ConfigError(
            f"{key_env} is set but is not a usable key (it holds spaces, control or non-ASCII "
            "characters); check how it was copied"
        )
    ep = Endpoint(url=url, api_key=key, source=source)
    if key and urlsplit(url).scheme == "http" and not ep.is_loopback:
        host = urlsplit(url).hostname
        raise ConfigError(
            f"refusing to send {key_env} over plain http to {host} (not loopback); "
            f"use an https endpoint, or unset {key_env} for this run"
        )
    return ep
