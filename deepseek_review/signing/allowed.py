"""git's allowed-signers file (``ssh-keygen(1)``, ALLOWED SIGNERS), read as ssh-keygen reads it.

Each line: ``principals [options] keytype base64-key [comment]``. The principals are one
word (double quotes may hold spaces) of comma-separated patterns: ``*`` and ``?`` wildcards,
``!`` negating, matched case-sensitively. The options, one word of comma-separated
names (any case): ``cert-authority``, ``namespaces="..."`` (a pattern list, quoted, commas
inside), ``valid-after="..."`` and ``valid-before="..."`` (``YYYYMMDD[HHMM[SS]]``, ``Z`` or
``UTC`` for UTC, else local time; quotes required, as ssh-keygen requires them). A ``#``
first on a line makes it a comment; lines are split on ``\\n`` only.

A line ssh-keygen would refuse (unbalanced quotes, an unknown or repeated option, a bad time,
a key that is not one) is a :class:`ConfigError` naming it, wherever it is: ssh-keygen
refuses it only when it reads it, for the principal asked about, and a file the operator
wrote wrong is said so, never half believed. Certificate authorities are not matched here:
a signature by a certified key is reported as by a key not in the file (fails closed).

Here the file only decides which principal may sign with a signature's key and why none
may; ``tests/signing/test_signing_allowed.py`` holds every form side by side with
``ssh-keygen -Y verify``.
"""

from __future__ import annotations

import base64
import calendar
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from deepseek_review.errors import ConfigError
from deepseek_review.signing import NAMESPACE
from deepseek_review.signing.sshsig import BadSignature, exact_strings, read_strings

_SPACE = " \t\r\n"
"""What ends the principals word (ssh-keygen's ``strdelimw``)."""
_BLANK = " \t"
"""What ends the options word and the key's fields."""


def _cert_name(name: str) -> str:
    """The certificate key type of a plain one (``ssh-ed25519-cert-v01@openssh.com``)."""
    base, at, domain = name.partition("@")
    return f"{base}-cert-v01@{domain if at else 'openssh.com'}"


_PLAIN_TYPES = {
    "ssh-ed25519": "ssh-ed25519",
    "sk-ssh-ed25519@openssh.com": "sk-ssh-ed25519@openssh.com",
    "ssh-rsa": "ssh-rsa",
    "rsa-sha2-256": "ssh-rsa",
    "rsa-sha2-512": "ssh-rsa",
    "ssh-dss": "ssh-dss",
    "ecdsa-sha2-nistp256": "ecdsa-sha2-nistp256",
    "ecdsa-sha2-nistp384": "ecdsa-sha2-nistp384",
    "ecdsa-sha2-nistp521": "ecdsa-sha2-nistp521",
    "sk-ecdsa-sha2-nistp256@openssh.com": "sk-ecdsa-sha2-nistp256@openssh.com",
}
#: A line's key type -> the type its base64 blob must name (ssh-keygen's key names).
_KEY_TYPES = {**_PLAIN_TYPES, **{_cert_name(k): _cert_name(v) for k, v in _PLAIN_TYPES.items()}}


@dataclass(frozen=True)
class Signer:
    """One line of the file."""

    principals: str
    """The pattern list as written (quotes removed)."""
    key: bytes
    namespaces: str | None
    valid_after: datetime | None
    valid_before: datetime | None
    cert_authority: bool


def _time(text: str, where: str) -> datetime:
    """A ``valid-after``/``valid-before`` value as ssh-keygen reads it (``timegm`` for UTC,
    ``mktime`` without daylight saving for local time, out-of-range days rolled over)."""
    digits, utc = text, False
    if len(text) > 1 and text[-1:].lower() == "z":
        digits, utc = text[:-1], True
    elif len(text) > 3 and text[-3:].lower() == "utc":
        digits, utc = text[:-3], True
    if not digits.isascii() or not digits.isdigit() or len(digits) not in (8, 12, 14):
        raise ConfigError(f"{where}: bad time {text!r} (YYYYMMDD[HHMM[SS]][Z])")
    year, month, day = int(digits[:4]), int(digits[4:6]), int(digits[6:8])
    hour, minute, second = (int(digits[i : i + 2] or 0) for i in (8, 10, 12))
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour <= 23 and minute <= 59 and second <= 61):
        raise ConfigError(f"{where}: bad time {text!r} (YYYYMMDD[HHMM[SS]][Z])")
    parts = (year, month, day, hour, minute, second, 0, 0, 0)
    try:
        epoch = calendar.timegm(parts) if utc else int(time.mktime(parts))
    except (OverflowError, ValueError):
        epoch = -1
    if epoch <= 0:
        raise ConfigError(f"{where}: bad time {text!r} (not after 1970-01-01 00:00:00)")
    return datetime.fromtimestamp(epoch, UTC) if utc else datetime.fromtimestamp(epoch).astimezone()


def _principals(text: str, where: str) -> tuple[str, str]:
    """The principals word and the rest of the line after it and its blanks."""
    end = next((i for i, c in enumerate(text) if c in _SPACE or c == '"'), len(text))
    if end < len(text) and text[end] == '"':
        close = text.find('"', end + 1)
        if close < 0:
            raise ConfigError(f"{where}: unbalanced quotes")
        word, rest = text[:end] + text[end + 1 : close], text[close + 1 :]
    else:
        word, rest = text[:end], text[end + 1 :]
    return word, rest.lstrip(_SPACE)


def _blank_split(text: str) -> tuple[str, str]:
    end = next((i for i, c in enumerate(text) if c in _BLANK), len(text))
    return text[:end], text[end:].lstrip(_BLANK)


def _key(text: str) -> bytes | None:
    """The key blob at the start of ``text`` (``keytype base64``, a comment may follow), or
    None when there is no key of a type ssh-keygen knows there."""
    key_type, rest = _blank_split(text)
    blob_text = _blank_split(rest)[0]
    if key_type not in _KEY_TYPES or not blob_text:
        return None
    try:
        blob = base64.b64decode("".join(blob_text.split()), validate=True)
    except ValueError:
        return None
    return blob if _well_formed(blob, _KEY_TYPES[key_type]) else None


def _well_formed(blob: bytes, key_type: str) -> bool:
    """Whether ``blob`` is a public key of ``key_type``: its fields and nothing after them,
    an ed25519 key of 32 bytes, an ECDSA key of its curve, an RSA modulus of at least 1,024
    bits (ssh-keygen's floor); other types (certificates, security keys) by their name."""
    fields = 3 if key_type == "ssh-rsa" or key_type.startswith("ecdsa-sha2-") else None
    fields = {"ssh-ed25519": 2, "ssh-dss": 5}.get(key_type, fields)
    try:
        out = read_strings(blob, 1) if fields is None else exact_strings(blob, fields)
    except BadSignature:
        return False
    if out[0] != key_type.encode():
        return False
    if key_type == "ssh-ed25519":
        return len(out[1]) == 32
    if key_type.startswith("ecdsa-sha2-"):
        return out[1] == key_type.removeprefix("ecdsa-sha2-").encode()
    if key_type == "ssh-rsa":
        return int.from_bytes(out[2], "big").bit_length() >= 1024
    return True


def _options_word(text: str, where: str) -> tuple[str, str]:
    """The options word (up to the first blank outside double quotes, ``\\"`` escaped) and
    the rest."""
    quoted, i = False, 0
    while i < len(text) and (quoted or text[i] not in _BLANK):
        if text[i] == "\\" and text[i + 1 : i + 2] == '"':
            i += 1
        elif text[i] == '"':
            quoted = not quoted
        i += 1
    if quoted:
        raise ConfigError(f"{where}: unbalanced quotes")
    return text[:i], text[i:].lstrip(_BLANK)


def _dequote(text: str, name: str, where: str) -> tuple[str, str]:
    """The double-quoted value at the start of ``text`` (``\\"`` for a quote) and the rest."""
    if not text.startswith('"'):
        raise ConfigError(f'{where}: {name} needs a double-quoted value ({name}="...")')
    out, i = [], 1
    while i < len(text) and text[i] != '"':
        if text[i] == "\\" and text[i + 1 : i + 2] == '"':
            i += 1
        out.append(text[i])
        i += 1
    if i >= len(text):
        raise ConfigError(f"{where}: {name}: missing end quote")
    return "".join(out), text[i + 1 :]


def _options(text: str, where: str) -> dict[str, object]:
    """The options of one line, as ``sshsigopt_parse`` reads them."""
    found: dict[str, object] = {}
    while text:
        lowered = text.lower()
        if lowered.startswith("cert-authority"):
            found["cert-authority"] = True
            text = text[len("cert-authority") :]
        else:
            name = next(
                (n for n in ("namespaces", "valid-after", "valid-before")
                 if lowered.startswith(n + "=")), None,
            )  # fmt: skip
            if name is not None:
                if name in found:
                    raise ConfigError(f'{where}: more than one "{name}" option')
                value, text = _dequote(text[len(name) + 1 :], name, where)
                found[name] = value if name == "namespaces" else _time(value, where)
        if not text:
            break
        if text[0] != ",":
            shown = text.split(",", 1)[0]
            raise ConfigError(f"{where}: unknown option {shown!r} (cert-authority, "
                              "namespaces, valid-after, valid-before)")  # fmt: skip
        text = text[1:]
        if not text:
            raise ConfigError(f"{where}: the options end with a comma")
    after, before = found.get("valid-after"), found.get("valid-before")
    if isinstance(after, datetime) and isinstance(before, datetime) and before <= after:
        raise ConfigError(f'{where}: "valid-before" is not after "valid-after"')
    return found


def _line(text: str, where: str) -> Signer | None:
    text = text.lstrip(_SPACE)
    if not text or text.startswith("#"):
        return None
    principals, rest = _principals(text, where)
    found = _key(rest)
    opts: dict[str, object] = {}
    if found is None:
        options, rest = _options_word(rest, where)
        if not rest:
            raise ConfigError(f"{where}: expected principals [options] keytype key")
        found = _key(rest)
        if found is None:
            raise ConfigError(f"{where}: not a public key (keytype base64-key)")
        opts = _options(options, where)
    after, before = opts.get("valid-after"), opts.get("valid-before")
    namespaces = opts.get("namespaces")
    return Signer(
        principals=principals,
        key=found,
        namespaces=namespaces if isinstance(namespaces, str) else None,
        valid_after=after if isinstance(after, datetime) else None,
        valid_before=before if isinstance(before, datetime) else None,
        cert_authority="cert-authority" in opts,
    )


def read(path: Path, shown: str) -> list[Signer]:
    """Every signer of the file; a :class:`ConfigError` naming the line that is not one."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else exc
        raise ConfigError(f"{shown}: cannot read the allowed signers ({why})") from None
    out = []
    for n, line in enumerate(text.split("\n"), 1):
        signer = _line(line, f"{shown}:{n}")
        if signer is not None:
            out.append(signer)
    return out


def _match(value: str, pattern: str) -> bool:
    """OpenSSH's ``match_pattern``: ``*`` any run, ``?`` any one character, else literal."""
    if not pattern:
        return not value
    if pattern[0] == "*":
        rest = pattern.lstrip("*")
        return not rest or any(_match(value[i:], rest) for i in range(len(value) + 1))
    return bool(value) and pattern[0] in ("?", value[0]) and _match(value[1:], pattern[1:])


def matches(value: str, patterns: str) -> bool:
    """OpenSSH's ``match_pattern_list`` said yes: a comma-separated list of patterns, one
    matches ``value`` and none of the ``!``-negated ones does."""
    hit = False
    for pattern in patterns.split(","):
        negated = pattern.startswith("!")
        if _match(value, pattern[1:] if negated else pattern):
            if negated:
                return False
            hit = True
    return hit


def principal_of(patterns: str) -> str | None:
    """A principal ``ssh-keygen -Y verify -I`` accepts for a line with these principals:
    the first listed one that the whole list matches (a plain name; a pattern matches
    itself), or None when no listed pattern does (then none is named here)."""
    for pattern in patterns.split(","):
        if pattern and not pattern.startswith("!") and matches(pattern, patterns):
            return pattern
    return None


def principal_for(signers: list[Signer], key: bytes, now: datetime) -> tuple[str | None, str]:
    """The principal allowed to sign with ``key`` in our namespace at ``now``, or None and
    why not (the most telling reason when the key is listed but not allowed). A line is
    allowed as ``ssh-keygen -Y verify`` allows it: its key (not a certificate authority's),
    ``namespaces`` matching ours, ``valid-after <= now <= valid-before`` in whole seconds."""
    why = "signed by a key not in the allowed signers"
    seconds = int(now.timestamp())
    for s in signers:
        if s.key != key or s.cert_authority:
            continue
        principal = principal_of(s.principals)
        if principal is None:
            why = f"the allowed signers line of this key names no principal ({s.principals!r})"
        elif s.namespaces is not None and not matches(NAMESPACE, s.namespaces):
            why = f"{principal} may not sign in the {NAMESPACE} namespace"
        elif s.valid_after is not None and seconds < s.valid_after.timestamp():
            why = f"{principal} is not valid before {s.valid_after.isoformat()}"
        elif s.valid_before is not None and seconds > s.valid_before.timestamp():
            why = f"{principal} expired at {s.valid_before.isoformat()}"
        else:
            return principal, ""
    return None, why
