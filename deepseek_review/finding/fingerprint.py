"""A finding's identity across runs: from its content, never from its line numbers.

GitHub code scanning matches an alert across uploads by ``partialFingerprints``; a fingerprint
made from line numbers changes whenever lines are added above the finding, and a dismissed
alert comes back. This one hashes the rule, the path and the cited lines' text with
whitespace normalised (indentation, trailing spaces and blank lines do not count), so the
same problem on the same code keeps its identity wherever the code moves in the file. A
finding without cited lines (not anchored) hashes its title instead.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

#: The key under ``partialFingerprints`` (versioned: a change of recipe is a new key).
KEY = "deepseekReviewFinding/v1"


def normalised(lines: Iterable[str]) -> str:
    """Lines with runs of whitespace collapsed and stripped; blank lines left out."""
    out = (" ".join(line.split()) for line in lines)
    return "\n".join(line for line in out if line)


def fingerprint(rule: str, path: str, cited: Iterable[str], title: str) -> str:
    """``sha256`` hex of the rule, the path and the normalised cited text (or, when nothing
    is cited, the normalised title)."""
    text = normalised(cited)
    body = f"lines\0{text}" if text else f"title\0{normalised([title.lower()])}"
    return hashlib.sha256(f"v1\0{rule}\0{path}\0{body}".encode()).hexdigest()
