"""An in-process sshsig verifier (``cryptography``): what ``ssh-keygen -Y verify`` checks of
the signature itself, without a process per segment.

The sshsig format (OpenSSH's PROTOCOL.sshsig): the blob holds the signer's public key, the
namespace, a reserved string, the hash algorithm (sha256 or sha512) and the signature; what
was signed is ``"SSHSIG" || string(namespace) || string(reserved) || string(hash_alg) ||
string(H(message))``. Key types: ssh-ed25519, ssh-rsa (signatures rsa-sha2-256/512; SHA-1
is refused, as ssh-keygen refuses it), ecdsa-sha2-nistp256/384/521. Anything else
(security keys ``sk-*``, certificates) returns None: the caller asks ssh-keygen instead.
The tests check every key type they make against ssh-keygen's verdict, both ways.

Why a second verifier beside ssh-keygen, the reference: ``ssh-keygen -Y verify`` checks one
signature per process and every segment's statement is different, so nothing batches; a
process per segment would put a signed verify far over its guard (3x an unsigned one).
"""

from __future__ import annotations

import functools
import hashlib
import struct
from typing import Any

from deepseek_review.signing.sshsig import BadSignature, _strings, exact_strings, unarmor

_MAGIC = b"SSHSIG"
_HASHES = {"sha256": hashlib.sha256, "sha512": hashlib.sha512}
_RSA_MIN_BITS = 1024
"""ssh-keygen's floor (``SSH_RSA_MINIMUM_MODULUS_SIZE``): a smaller key is not a key to it."""
_RSA_SIGS = {"rsa-sha2-256": "sha256", "rsa-sha2-512": "sha512"}
_CURVES = {
    b"nistp256": ("SECP256R1", "SHA256"),
    b"nistp384": ("SECP384R1", "SHA384"),
    b"nistp521": ("SECP521R1", "SHA512"),
}


def _mpint(data: bytes) -> int:
    return int.from_bytes(data, "big", signed=True)


def supported(key_type: str) -> bool:
    return key_type in ("ssh-ed25519", "ssh-rsa") or key_type.startswith("ecdsa-sha2-nistp")


def verify(message: bytes, armored: bytes, namespace: str) -> bool | None:
    """True when ``armored`` is a valid sshsig signature of ``message`` in ``namespace`` by
    the key it names (whether that key is allowed is the caller's business); False when it
    is not; None when this key type is not handled here (ask ssh-keygen). Read as
    ``ssh-keygen -Y verify`` reads it: nothing after the last field of the blob, its key or
    its signature; the signed data's reserved field empty, whatever the blob holds."""
    try:
        from cryptography.exceptions import InvalidSignature
    except ImportError:  # an install without cryptography: ssh-keygen does it
        return None
    blob = unarmor(armored)
    if not blob.startswith(_MAGIC) or len(blob) < 10 or struct.unpack_from(">I", blob, 6)[0] != 1:
        return False
    key, ns, _reserved, hash_alg, sig = exact_strings(blob, 5, len(_MAGIC) + 4)
    if ns.decode("utf-8", "replace") != namespace or hash_alg.decode() not in _HASHES:
        return False
    digest = _HASHES[hash_alg.decode()](message).digest()
    signed = _MAGIC + b"".join(struct.pack(">I", len(s)) + s for s in (ns, b"", hash_alg, digest))
    key_type = _strings(key, 1)[0].decode("ascii", "replace")
    if not supported(key_type):
        return None
    try:
        sig_type, sig_bytes = exact_strings(sig, 2)
        _check(key_type, key, sig_type.decode("ascii", "replace"), sig_bytes, signed)
    except (InvalidSignature, BadSignature, ValueError):
        return False
    return True


def _check(key_type: str, key: bytes, sig_type: str, sig: bytes, signed: bytes) -> None:
    """Raise unless ``sig`` (of ``sig_type``) by ``key`` signs ``signed``. Only the
    ``cryptography`` modules of this key type are imported."""
    if key_type == "ssh-ed25519":
        if sig_type != key_type:
            raise BadSignature("signature type")
        _public_key(key_type, key).verify(sig, signed)
    elif key_type == "ssh-rsa":
        if sig_type not in _RSA_SIGS:
            raise BadSignature("an RSA signature must be rsa-sha2-256 or rsa-sha2-512")
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        algorithm = hashes.SHA256() if _RSA_SIGS[sig_type] == "sha256" else hashes.SHA512()
        _public_key(key_type, key).verify(sig, signed, padding.PKCS1v15(), algorithm)
    else:
        if sig_type != key_type:
            raise BadSignature("signature type")
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import ec, utils

        public_ec = _public_key(key_type, key)
        r, s = (_mpint(v) for v in exact_strings(sig, 2))
        der = utils.encode_dss_signature(r, s)
        hash_name = _CURVES[key_type.removeprefix("ecdsa-sha2-").encode()][1]  # checked above
        public_ec.verify(der, signed, ec.ECDSA(getattr(hashes, hash_name)()))


@functools.lru_cache(maxsize=64)
def _public_key(key_type: str, key: bytes) -> Any:
    """The ``cryptography`` key object of an SSH public key blob: built once per key, not
    once per signature (a verify checks thousands of signatures by a handful of keys).
    :class:`BadSignature` or ``ValueError`` for a blob that is not a key of ``key_type``."""
    if key_type == "ssh-ed25519":
        from cryptography.hazmat.primitives.asymmetric import ed25519

        (raw,) = exact_strings(key, 1, 4 + len(key_type))
        return ed25519.Ed25519PublicKey.from_public_bytes(raw)
    if key_type == "ssh-rsa":
        from cryptography.hazmat.primitives.asymmetric import rsa

        e, n = (_mpint(v) for v in exact_strings(key, 2, 4 + len(key_type)))
        if n.bit_length() < _RSA_MIN_BITS:
            raise BadSignature(f"RSA keys under {_RSA_MIN_BITS} bits are refused")
        return rsa.RSAPublicNumbers(e, n).public_key()
    from cryptography.hazmat.primitives.asymmetric import ec

    curve_name, point = exact_strings(key, 2, 4 + len(key_type))
    if curve_name not in _CURVES or key_type != "ecdsa-sha2-" + curve_name.decode():
        raise BadSignature("curve")
    return ec.EllipticCurvePublicKey.from_encoded_point(
        getattr(ec, _CURVES[curve_name][0])(), point
    )
