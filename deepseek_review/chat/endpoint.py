"""Which URL a review is sent to, and whether the API key may travel there.

One rule reads every source of an endpoint (``--endpoint``, ``DEEPSEEK_REVIEW_ENDPOINT``,
``OLLAMA_HOST``, a config file, a manifest, a receipt): a URL with ``http://`` or ``https://``
is taken as written; anything else is read as Ollama reads ``OLLAMA_HOST`` (``envconfig.Host()``:
a bare host means http and port 11434, ``ollama.com`` means https). A base URL gets
``/v1/chat/completions`` added (``.../v1`` gets ``/chat/completions``); a full
``.../chat/completions`` URL is used as given; a path that names another API
(``.../v1/completions``, ``/api/chat``) is refused. The result is canonical (scheme and host in
lower case, no default port), so one server has one spelling in every receipt.

Trust: the operator chooses destinations with flags and the environment. A file in the
repository under review (its config, a manifest) or a receipt may name only a loopback endpoint
or one the operator chose (the flag or environment endpoint, a server of the pool a batch is
spread over, or one listed in ``DEEPSEEK_REVIEW_ALLOWED_ENDPOINTS``).
The key (``OLLAMA_API_KEY`` unless ``--api-key-env`` or ``DEEPSEEK_REVIEW_API_KEY_ENV`` names
another variable) goes only to an endpoint the operator chose, as ``Authorization: Bearer``:
the default variable over https only; a variable the operator named over https, or plain http
to loopback. A named key that would cross plain http to another host is refused. Credentials
inside the URL are refused outright because the URL is written into every receipt.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from urllib.parse import SplitResult, parse_qsl, urlsplit, urlunsplit

from deepseek_review.errors import ConfigError
from deepseek_review.options.option import ALLOWED_ENV, ENDPOINTS_ENV
from deepseek_review.options.table import ENV_PREFIX, OPTIONS, name_of

CHAT_PATH = "/v1/chat/completions"
DEFAULT_HOST = "http://localhost:11434"
DEFAULT_KEY_ENV = "OLLAMA_API_KEY"
ENDPOINT_ENV = ENV_PREFIX + "ENDPOINT"
_DEFAULT_PORTS = {"http": 80, "https": 443}
_UNSAFE_URL_CHARS = re.compile(r"[\x00-\x20\x7f-\x9f]")
_ENV_NAME_RE = re.compile(r"[^=\x00]+")
_SECRET_QUERY_RE = re.compile(r"key|token|secret|passw|auth|sig|credential", re.IGNORECASE)
#: Last path segments that name another API than chat completions: appending the chat path
#: to them would call a URL nobody meant.
#: A strict subset of RFC 3986 ``URI``s: http(s), a host of unreserved characters (a name or
#: an IPv4 address), a port, a path and a query of plain characters. The chat URLs this module
#: builds have this shape; anything else (IPv6, percent-escapes, fragments) is left to the full
#: RFC 3986 check.
_OTHER_API = re.compile(r"/(?:completions|chat|embeddings|models|responses|api/\w+)$")


@dataclass(frozen=True)
class Endpoint:
    """Where to send, and with which key (never printed: ``repr`` hides it)."""

    url: str
    api_key: str | None = field(default=None, repr=False)
    source: str = "default"
    """Where the URL came from: ``endpoint`` (the option), ``OLLAMA_HOST``, ``default``, or the
    file that named it."""

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


def _refuse_unsafe(value: str, what: str) -> None:
    """Control characters (urlsplit silently drops tabs and newlines, which would change the
    host) and userinfo are refused before anything else, and never echoed."""
    if _UNSAFE_URL_CHARS.search(value):
        escaped = value.encode("unicode_escape").decode("ascii")
        raise ConfigError(
            f"{what} '{safe_url(escaped)}': malformed URL (a space or control character in it)"
        )
    authority = value.split("://", 1)[-1].split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    if "@" in authority:
        raise ConfigError(
            f"{what}: credentials in the URL are refused (they would be written into "
            f"receipts); put the key in {DEFAULT_KEY_ENV} instead"
        )


def ollama_host_url(value: str, *, what: str = "OLLAMA_HOST") -> str:
    """A host without a scheme, as Ollama's ``envconfig.Host()`` reads ``OLLAMA_HOST``, as a
    base URL."""
    s = value.strip()
    _refuse_unsafe(s, what)
    default_port = "11434"
    if "://" in s:
        scheme, hostport = s.split("://", 1)
        if scheme == "http":
            default_port = "80"
        elif scheme == "https":
            default_port = "443"
        else:
            raise ConfigError(f"{what} {s!r}: unsupported scheme {scheme!r} (use http or https)")
    else:
        scheme, hostport = "http", s
        if s.rstrip("/") == "ollama.com":
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
        raise ConfigError(f"{what} {s!r}: invalid port {port!r}")
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


def _canonical_netloc(parts: SplitResult) -> str:
    host = (parts.hostname or "").lower()
    if ":" in host:
        host = f"[{host}]"
    port = parts.port
    return host if port is None or port == _DEFAULT_PORTS[parts.scheme] else f"{host}:{port}"


def chat_url(value: str, *, what: str | None = None) -> str:
    """Any spelling of an endpoint, validated, as its canonical chat-completions URL; ``what``
    names its source in errors (default: the ``endpoint`` option)."""
    what = what or name_of("endpoint")
    text = value.strip()
    _refuse_unsafe(text, what)
    if "://" not in text:
        text = ollama_host_url(text, what=what)
    try:
        parts: SplitResult = urlsplit(text)
        parts.port  # noqa: B018  (raises ValueError on a bad port)
    except ValueError as exc:
        raise ConfigError(f"{what} {text!r}: malformed URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        raise ConfigError(
            f"{what} '{safe_url(text)}': unsupported scheme {scheme or 'none'!r} "
            "(use http or https)"
        )
    parts = parts._replace(scheme=scheme)
    if not parts.hostname:
        raise ConfigError(f"{what} {safe_url(text)}: no host")
    if parts.fragment:
        raise ConfigError(f"{what} {safe_url(text)}: a URL fragment is not allowed")
    for name, _ in parse_qsl(parts.query, keep_blank_values=True):
        if _SECRET_QUERY_RE.search(name):
            raise ConfigError(
                f"{what}: query parameter {name!r} looks like a credential and would be "
                f"written into receipts; put the key in {DEFAULT_KEY_ENV} instead"
            )
    path = parts.path.rstrip("/")
    if path.endswith("/v1"):
        path += "/chat/completions"
    elif not path.endswith("/chat/completions"):
        if _OTHER_API.search(path) and not path.endswith("/api/v1"):
            raise ConfigError(
                f"{what} {safe_url(text)}: {path} is not a chat-completions path; give a base URL "
                f"(http://host:port or .../v1) or the full .../chat/completions URL"
            )
        path += CHAT_PATH
    return urlunsplit((scheme, _canonical_netloc(parts), path, parts.query, ""))


@functools.lru_cache(maxsize=256)
def canonical(url: str) -> str:
    """The canonical form of a URL already written somewhere (a receipt, say), or the URL as it
    is when it cannot be read: receipts written before canonical URLs compare equal to new ones.
    """
    try:
        return chat_url(url, what="url")
    except ConfigError:
        return url


def safe_url(url: str) -> str:
    """A URL for an error message: userinfo and query removed."""
    try:
        p = urlsplit(url)
        netloc = p.netloc.rpartition("@")[2]
        return urlunsplit((p.scheme, netloc, p.path, "", ""))
    except ValueError:
        return "<malformed URL>"


def _origin(url: str) -> tuple[str, str]:
    p = urlsplit(url)
    return p.scheme, p.netloc


def operator_endpoint(env: Mapping[str, str]) -> Endpoint:
    """The endpoint the environment chooses (``DEEPSEEK_REVIEW_ENDPOINT``, else
    ``OLLAMA_HOST``, else local Ollama), without a key."""
    if env.get(ENDPOINT_ENV, "").strip():
        return Endpoint(chat_url(env[ENDPOINT_ENV], what=ENDPOINT_ENV), source=ENDPOINT_ENV)
    if env.get("OLLAMA_HOST", "").strip():
        return Endpoint(chat_url(env["OLLAMA_HOST"], what="OLLAMA_HOST"), source="OLLAMA_HOST")
    return Endpoint(chat_url(DEFAULT_HOST), source="default")


def allowed_endpoints(env: Mapping[str, str]) -> list[str]:
    """``DEEPSEEK_REVIEW_ALLOWED_ENDPOINTS``: more endpoints the operator lets repository files
    and receipts name (and the key travel to), separated by spaces or commas."""
    raw = env.get(ALLOWED_ENV, "")
    return [chat_url(v, what=ALLOWED_ENV) for v in re.split(r"[\s,]+", raw) if v]


def endpoint_pool(given: str | Sequence[str] | None, env: Mapping[str, str]) -> tuple[str, ...]:
    """The servers the operator named for one run: each ``--endpoint`` given, else
    ``DEEPSEEK_REVIEW_ENDPOINTS`` (separated by spaces or commas); canonical chat URLs, each
    once, in the order given; () when neither names any. Never read from a file under review:
    only the operator spreads a run over servers (and so over keys)."""
    if isinstance(given, str):
        return (chat_url(given),)
    if given:
        return tuple(dict.fromkeys(chat_url(v) for v in given))
    raw = env.get(ENDPOINTS_ENV, "")
    named = (chat_url(v, what=ENDPOINTS_ENV) for v in re.split(r"[\s,]+", raw) if v)
    return tuple(dict.fromkeys(named))


def _read_key(env: Mapping[str, str], key_env: str | None) -> str | None:
    name = key_env if key_env is not None else DEFAULT_KEY_ENV
    if not _ENV_NAME_RE.fullmatch(name) or not name.strip():
        raise ConfigError(f"{name_of('api_key_env')} {name!r}: not an environment variable name")
    raw = env.get(name, "")
    key = raw.strip() or None
    if raw and (key is None or "\n" in key or "\r" in key):
        raise ConfigError(f"{name} is set but is not a usable key (empty or multi-line)")
    if key and not all("!" <= c <= "~" for c in key):
        # An HTTP header carries visible ASCII only; anything else would fail deep inside
        # the HTTP library, with the key quoted in its message.
        raise ConfigError(
            f"{name} is set but is not a usable key (it holds spaces, control or non-ASCII "
            "characters); check how it was copied"
        )
    return key


def resolve_endpoint(
    endpoint: str | None,
    env: Mapping[str, str],
    *,
    key_env: str | None = None,
    named_by: str | None = None,
    operator: Sequence[str] = (),
    what: str | None = None,
) -> Endpoint:
    """The endpoint and key for a run, refusing what would leak the key or let a file under
    review choose a destination.

    ``endpoint`` comes from the operator (a flag, the environment, a library call) unless
    ``named_by`` names the untrusted file it came from (a repository config, a manifest, a
    receipt). ``operator`` lists further URLs the operator chose (``batch --endpoint`` under a
    manifest's own). ``key_env`` None means the default variable, which is sent over https
    only. ``what`` names where ``endpoint`` came from in errors.
    """
    if not endpoint:
        ep = operator_endpoint(env)
        key = _read_key(env, key_env)
        return Endpoint(ep.url, _key_for(ep.url, key, key_env), ep.source)
    url = chat_url(endpoint, what=what)
    key = _read_key(env, key_env)
    if named_by is None:
        # A source label, not a message: the option's key (serverhints names it as the
        # reporting layer spells it).
        return Endpoint(url, _key_for(url, key, key_env), "endpoint")
    chosen = [operator_endpoint(env).url, *allowed_endpoints(env)]
    chosen += [chat_url(u) for u in operator]
    if _origin(url) in {_origin(u) for u in chosen}:
        return Endpoint(url, _key_for(url, key, key_env), named_by)
    if not is_loopback_host(urlsplit(url).hostname or ""):
        what = what or name_of("endpoint")
        # ``what`` names the file already when the config file set it: said once.
        who = "the repository's config" if what.startswith(named_by) else named_by
        raise ConfigError(
            f"{what} {safe_url(url)}: {who} may name only a loopback "
            f"endpoint or one the operator chose; choose it with {OPTIONS['endpoint'].long_flag}, "
            f"{ENDPOINT_ENV} or OLLAMA_HOST, or "
            f"allow it with {ALLOWED_ENV}"
        )
    return Endpoint(url, None, named_by)  # a local server a file named gets no key


def _key_for(url: str, key: str | None, key_env: str | None) -> str | None:
    """The key to send to ``url`` (an endpoint the operator chose), or None."""
    parts = urlsplit(url)
    if key is None or parts.scheme == "https":
        return key
    if key_env is None:
        return None  # the default variable holds ollama.com's key: https only
    if not is_loopback_host(parts.hostname or ""):
        raise ConfigError(
            f"refusing to send {key_env} over plain http to {parts.hostname} (not loopback); "
            f"use an https endpoint, or do not name a key for this endpoint"
        )
    return key
