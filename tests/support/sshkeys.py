"""Real SSH keys and a real ssh-agent for the signing tests (made by OpenSSH's own tools)."""

from __future__ import annotations

import base64
import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

HAVE_OPENSSH = shutil.which("ssh-keygen") is not None and shutil.which("ssh-agent") is not None
needs_openssh = pytest.mark.skipif(not HAVE_OPENSSH, reason="OpenSSH's ssh-keygen/ssh-agent")


@dataclass(frozen=True)
class Key:
    private: Path
    principal: str

    @property
    def public(self) -> Path:
        return self.private.with_name(self.private.name + ".pub")

    def allowed_line(self, options: str = "") -> str:
        """This key's line in an allowed-signers file."""
        return " ".join(p for p in (self.principal, options, self.public.read_text().strip()) if p)


def make_key(folder: Path, kind: str, principal: str, passphrase: str = "") -> Key:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"id_{kind}_{principal.split('@')[0]}"
    bits = ["-b", "2048"] if kind == "rsa" else []
    subprocess.run(
        ["ssh-keygen", "-q", "-t", kind, *bits, "-N", passphrase, "-C", principal, "-f", str(path)],
        check=True,
        capture_output=True,
    )
    return Key(path, principal)


HAVE_OPENSSL = shutil.which("openssl") is not None


def small_rsa_key(folder: Path, principal: str) -> Key:
    """A 768-bit RSA key in OpenSSH's formats: ssh-keygen will not make one (nor read one),
    so openssl makes it and ``cryptography`` writes it out."""
    from cryptography.hazmat.primitives import serialization as ser

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "id_rsa_small"
    subprocess.run(["openssl", "genrsa", "-out", str(path), "768"], check=True, capture_output=True)
    key: Any = ser.load_pem_private_key(path.read_bytes(), None)
    fmt = ser.PrivateFormat.OpenSSH
    path.write_bytes(key.private_bytes(ser.Encoding.PEM, fmt, ser.NoEncryption()))
    public = key.public_key().public_bytes(ser.Encoding.OpenSSH, ser.PublicFormat.OpenSSH)
    path.with_name(path.name + ".pub").write_bytes(public + f" {principal}\n".encode())
    return Key(path, principal)


def armor(blob: bytes) -> bytes:
    """An sshsig blob armored as ssh-keygen writes it."""
    body = base64.b64encode(blob)
    lines = [body[i : i + 70] for i in range(0, len(body), 70)]
    return (
        b"\n".join([b"-----BEGIN SSH SIGNATURE-----", *lines, b"-----END SSH SIGNATURE-----"])
        + b"\n"
    )


def allowed_signers(path: Path, *lines: str) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


@contextmanager
def ssh_agent(folder: Path) -> Iterator[str]:
    """A real ssh-agent on a socket in ``folder`` (its ``SSH_AUTH_SOCK``), killed after."""
    sock = folder / "agent.sock"
    proc = subprocess.Popen(
        ["ssh-agent", "-D", "-a", str(sock)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        deadline = time.monotonic() + 10
        while not sock.exists():
            assert time.monotonic() < deadline, "ssh-agent did not start"
            time.sleep(0.02)
        yield str(sock)
    finally:
        proc.kill()
        proc.wait()


def agent_add(sock: str, key: Key) -> None:
    env = {**os.environ, "SSH_AUTH_SOCK": sock}
    subprocess.run(["ssh-add", "-q", str(key.private)], env=env, check=True, capture_output=True)


KINDS = ["ed25519", "rsa", "ecdsa-256", "ecdsa-384", "ecdsa-521"]


MESSAGE = b'{"_type": "https://in-toto.io/Statement/v1"}\n'


def key_of_kind(tmp_path: Path, kind: str) -> Key:
    if kind.startswith("ecdsa-"):
        path = tmp_path / f"id_{kind}"
        bits = kind.split("-")[1]
        subprocess.run(
            ["ssh-keygen", "-q", "-t", "ecdsa", "-b", bits, "-N", "", "-C", "a@x", "-f", str(path)],
            check=True,
        )
        return Key(path, "a@x")
    return make_key(tmp_path, kind, "a@x")


def sign_message(key: Key, data: bytes, namespace: str = "deepseek-review") -> bytes:
    return subprocess.run(
        ["ssh-keygen", "-q", "-Y", "sign", "-n", namespace, "-f", str(key.private)],
        input=data, capture_output=True, check=True,
    ).stdout  # fmt: skip
