"""git's allowed-signers file (``ssh-keygen(1)``, ALLOWED SIGNERS), read to find who may sign.

Each line: ``principals [options] keytype base64-key [comment]``; options ``namespaces="..."``,
``valid-after="..."``, ``valid-before="..."`` (``YYYYMMDD[HHMM[SS]]``, ``Z`` for UTC, else
local time) and ``cert-authority``. Here it only decides which principal a signature's key
belongs to and why none does (not listed, another namespace, outside its validity); the
cryptographic check is ``ssh-keygen -Y verify`` against the same file, which applies the same
rules again. Certificate authorities are not matched here: a signature by a certified key
is reported as by a key not in the file.
"""

from __future__ import annotations

import base64
import fnmatch
import shlex
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from ..errors import ConfigError
from . import NAMESPACE


@dataclass(frozen=True)
class Signer:
    """One line of the file."""

    principals: str
    key: bytes
    namespaces: str | None
    valid_after: datetime | None
    valid_before: datetime | None
    cert_authority: bool


def _time(text: str, where: str) -> datetime:
    utc = text.endswith(("Z", "z"))
    digits = text[:-1] if utc else text
    formats = {8: "%Y%m%d", 12: "%Y%m%d%H%M", 14: "%Y%m%d%H%M%S"}
    if not digits.isdigit() or len(digits) not in formats:
        raise ConfigError(f"{where}: bad time {text!r} (YYYYMMDD[HHMM[SS]][Z])")
    stamp = datetime.strptime(digits, formats[len(digits)])
    return stamp.replace(tzinfo=UTC) if utc else stamp.astimezone()


def _line(text: str, where: str) -> Signer | None:
    try:
        words = shlex.split(text, comments=False, posix=True)
    except ValueError:
        raise ConfigError(f"{where}: unbalanced quotes") from None
    if not words or words[0].startswith("#"):
        return None
    principals, rest = words[0], words[1:]
    opts: dict[str, str] = {}
    if rest and not rest[0].startswith(("ssh-", "ecdsa-", "sk-")):
        for opt in rest[0].split(","):
            name, _, value = opt.partition("=")
            opts[name.lower()] = value
        rest = rest[1:]
    if len(rest) < 2:
        raise ConfigError(f"{where}: expected principals [options] keytype key")
    try:
        key = base64.b64decode(rest[1], validate=True)
    except ValueError:
        raise ConfigError(f"{where}: the key is not base64") from None
    return Signer(
        principals=principals,
        key=key,
        namespaces=opts.get("namespaces"),
        valid_after=_time(opts["valid-after"], where) if "valid-after" in opts else None,
        valid_before=_time(opts["valid-before"], where) if "valid-before" in opts else None,
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
    for n, line in enumerate(text.splitlines(), 1):
        if line.strip() and not line.lstrip().startswith("#"):
            signer = _line(line, f"{shown}:{n}")
            if signer is not None:
                out.append(signer)
    return out


def _matches(patterns: str, value: str) -> bool:
    """OpenSSH's pattern lists: comma-separated, ``*``/``?``, ``!`` negates."""
    hit = False
    for pattern in patterns.split(","):
        negated = pattern.startswith("!")
        if fnmatch.fnmatchcase(value, pattern[1:] if negated else pattern):
            if negated:
                return False
            hit = True
    return hit


def principal_for(signers: list[Signer], key: bytes, now: datetime) -> tuple[str | None, str]:
    """The principal allowed to sign with ``key`` in our namespace at ``now``, or None and
    why not (the most telling reason when the key is listed but not allowed)."""
    why = "signed by a key not in the allowed signers"
    for s in signers:
        if s.key != key or s.cert_authority:
            continue
        if s.namespaces is not None and not _matches(s.namespaces, NAMESPACE):
            why = f"{s.principals} may not sign in the {NAMESPACE} namespace"
        elif s.valid_after is not None and now < s.valid_after:
            why = f"{s.principals} is not valid before {s.valid_after.isoformat()}"
        elif s.valid_before is not None and now >= s.valid_before:
            why = f"{s.principals} expired at {s.valid_before.isoformat()}"
        else:
            return s.principals.split(",")[0], ""
    return None, why
