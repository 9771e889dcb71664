"""SSH signatures (the sshsig format git signs commits with), made and checked by ssh-keygen.

Signing runs ``ssh-keygen -Y sign`` with the data on stdin and the armored signature on
stdout, so the file is written by :func:`records.storage.write_new` (atomic, never overwritten).
The key is a private key file, or a public key whose private half an ssh-agent holds
(ssh-keygen asks the agent first). ssh-keygen runs in a new session with
``SSH_ASKPASS_REQUIRE=never``: it has no terminal to ask a passphrase on, so a
passphrase-protected key without an agent fails at once instead of waiting for input.

Checking runs ``ssh-keygen -Y verify`` against the principal that :mod:`.allowed` found for
the signature's key. The signature's own fields (its public key, its namespace) are read here
first, in Python: a key that is not allowed, or another namespace, fails without a process.
Nothing here reads a private key; its path only goes to ssh-keygen, never into a file or
message of ours beyond the path the operator gave.
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
import subprocess
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from deepseek_review.errors import ConfigError
from deepseek_review.git.programs import require_program
from deepseek_review.signing import NAMESPACE

_ARMOR_BEGIN = b"-----BEGIN SSH SIGNATURE-----"
_ARMOR_END = b"-----END SSH SIGNATURE-----"
_MAGIC = b"SSHSIG"
TIMEOUT = 30.0
"""Seconds one ssh-keygen call may take (an agent that asks for confirmation, a slow card)."""


def ssh_keygen() -> str:
    """The ssh-keygen on PATH (absolute entries only), or :class:`ConfigError` saying it is
    missing."""
    return require_program("ssh-keygen", "signing needs OpenSSH's ssh-keygen")


def _env(agent: Mapping[str, str] | None) -> dict[str, str]:
    """ssh-keygen's environment: ours, never a passphrase prompt."""
    env = dict(os.environ if agent is None else agent)
    env["SSH_ASKPASS_REQUIRE"] = "never"
    env.pop("DISPLAY", None)
    return env


def _last_line(stderr: bytes) -> str:
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
    return lines[-1] if lines else "no message"


def _ssh_keygen(
    args: list[str], data: bytes, env: Mapping[str, str] | None
) -> subprocess.CompletedProcess[bytes]:
    """``ssh-keygen ARGS`` with ``data`` on stdin, in a new session (no controlling
    terminal: no passphrase prompt); a :class:`ConfigError` when it cannot run or hangs."""
    try:
        return subprocess.run(
            [ssh_keygen(), *args],
            input=data,
            capture_output=True,
            env=_env(env),
            start_new_session=True,
            timeout=TIMEOUT,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise ConfigError(f"ssh-keygen did not answer within {TIMEOUT:g} s") from None
    except OSError as exc:
        raise ConfigError(f"cannot run ssh-keygen ({exc.strerror or exc})") from None


def sign(data: bytes, key: Path, *, env: Mapping[str, str] | None = None) -> bytes:
    """The armored sshsig signature of ``data`` by ``key`` in :data:`NAMESPACE`."""
    done = _ssh_keygen(["-q", "-Y", "sign", "-n", NAMESPACE, "-f", str(key)], data, env)
    if done.returncode != 0 or not done.stdout.startswith(_ARMOR_BEGIN):
        raise ConfigError(f"{key}: ssh-keygen could not sign ({_last_line(done.stderr)})")
    return done.stdout


@dataclass(frozen=True)
class Signature:
    """The fields of an sshsig blob that decide whether to check it at all."""

    public_key: bytes
    """The signer's public key blob (SSH wire format)."""
    namespace: str

    @property
    def key_type(self) -> str:
        return read_strings(self.public_key, 1)[0].decode("ascii", "replace")

    @property
    def fingerprint(self) -> str:
        """As ``ssh-keygen -l`` shows it: ``SHA256:`` and unpadded base64."""
        digest = hashlib.sha256(self.public_key).digest()
        return "SHA256:" + base64.b64encode(digest).decode("ascii").rstrip("=")


class BadSignature(ValueError):
    """Not an sshsig signature this tool can read."""


def read_strings(blob: bytes, count: int, offset: int = 0) -> list[bytes]:
    out = []
    for _ in range(count):
        if offset + 4 > len(blob):
            raise BadSignature("truncated")
        (n,) = struct.unpack_from(">I", blob, offset)
        offset += 4
        if offset + n > len(blob):
            raise BadSignature("truncated")
        out.append(blob[offset : offset + n])
        offset += n
    return out


def exact_strings(blob: bytes, count: int, offset: int = 0) -> list[bytes]:
    """Exactly ``count`` strings from ``offset`` to the end of ``blob``; trailing bytes are
    refused, as ssh-keygen refuses them (:class:`BadSignature`)."""
    out = read_strings(blob, count, offset)
    if offset + sum(4 + len(f) for f in out) != len(blob):
        raise BadSignature("trailing data")
    return out


def unarmor(armored: bytes) -> bytes:
    """The sshsig blob inside an armored signature (:class:`BadSignature`), cut as ssh-keygen
    cuts it: the header first (nothing before it) and on its own line, the body up to the
    first footer line, anything after the footer ignored."""
    for eol in (b"\n", b"\r\n"):
        if armored.startswith(_ARMOR_BEGIN + eol):
            body = armored[len(_ARMOR_BEGIN) + len(eol) :]
            break
    else:
        raise BadSignature("not an SSH SIGNATURE block")
    end = body.find(b"\n" + _ARMOR_END)
    if end < 0:
        raise BadSignature("not an SSH SIGNATURE block")
    try:
        return base64.b64decode(b"".join(body[:end].split()), validate=True)
    except ValueError:
        raise BadSignature("its base64 is damaged") from None


def parse(armored: bytes) -> Signature:
    """The public key and namespace of an armored sshsig signature (:class:`BadSignature`)."""
    blob = unarmor(armored)
    if not blob.startswith(_MAGIC) or len(blob) < 10:
        raise BadSignature("no SSHSIG header")
    (version,) = struct.unpack_from(">I", blob, len(_MAGIC))
    if version != 1:
        raise BadSignature(f"sshsig version {version}")
    key, namespace = read_strings(blob, 2, len(_MAGIC) + 4)
    return Signature(key, namespace.decode("utf-8", "replace"))


def verify(data: bytes, armored: bytes, *, allowed_signers: Path, principal: str) -> str | None:
    """None when ``ssh-keygen -Y verify`` accepts ``armored`` over ``data`` for
    ``principal`` in :data:`NAMESPACE`; else its reason, one line."""
    with tempfile.NamedTemporaryFile(prefix="deepseek-review-", suffix=".sig") as sig:
        sig.write(armored)
        sig.flush()
        args = ["-Y", "verify", "-f", str(allowed_signers), "-I", principal, "-n", NAMESPACE]
        try:
            done = _ssh_keygen([*args, "-s", sig.name], data, None)
        except ConfigError as exc:
            return exc.message
    if done.returncode == 0:
        return None
    return _last_line(done.stderr)
