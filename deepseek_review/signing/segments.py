"""Signing one segment: its statement ``<stem>.intoto.json``, then ``<stem>.intoto.json.sig``.

The receipt stays the commit point: these two come after it, and a segment without them is
a valid, unsigned segment. A crash between the statement and its signature leaves a
statement that ``sign`` rebuilds from the files and, when the bytes agree, signs; one that
disagrees was not written by this segment's files and is refused, never overwritten.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from deepseek_review.errors import OutputError
from deepseek_review.git.runner import read_regular_file
from deepseek_review.records.naming import sibling
from deepseek_review.records.storage import write_output
from deepseek_review.signing import sshsig
from deepseek_review.signing.statement import SegmentFiles, statement_bytes


@dataclass(frozen=True)
class SigningKey:
    """The key ssh-keygen signs with: a private key file, or a public key whose private half
    an ssh-agent holds. Never written anywhere; ``shown`` is how messages name it."""

    path: Path
    shown: str
    env: Mapping[str, str] | None = None
    """ssh-keygen's environment (``SSH_AUTH_SOCK``); None: this process's."""


SignOutcome = Literal["signed", "already signed"]


def sign_segment(root: Path, receipt_rel: str, key: SigningKey) -> SignOutcome:
    """Write and sign the statement of the segment whose receipt is ``receipt_rel``."""
    statement_rel = sibling(receipt_rel, "statement")
    signature_rel = sibling(receipt_rel, "signature")
    statement_path, signature_path = root / statement_rel, root / signature_rel
    if signature_path.exists():
        return "already signed"
    data = statement_bytes(SegmentFiles.read(root, receipt_rel))
    try:
        existing: bytes | None = read_regular_file(statement_path)
    except FileNotFoundError:
        existing = None
    except OSError as exc:
        raise OutputError(f"{statement_rel}: cannot read ({exc.strerror or exc})") from None
    if existing is None:
        write_output(statement_path, data, shown=statement_rel)
    elif existing != data:
        raise OutputError(
            f"{statement_rel}: an unsigned statement that does not match its segment's files "
            "(changed since it was written); remove it to sign the segment as it is now"
        )
    write_output(signature_path, sshsig.sign(data, key.path, env=key.env), shown=signature_rel)
    return "signed"
