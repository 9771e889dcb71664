"""Where an exported finding may point: one rule for every format.

A finding's path is the model's text, and a diff review's paths come from its request record
(the framed patch, ``git.diff.shown``): a crafted record or a planted ``+++ b//etc/passwd``
header could otherwise send a SARIF reader, reviewdog or GitHub to a file outside the
repository. A location is exported only as a repository-relative path, normalised (``.``
and empty segments dropped), with no ``..``, no ``.git`` segment (in any case, with the
trailing dots and spaces Windows ignores), no leading ``/``, ``\\``, URI scheme or drive
letter, and no control character: the paths a git tree can hold. In SARIF it is also a
percent-encoded URI reference (RFC 3986) relative to ``%SRCROOT%``, so ``#``, ``?``, ``%``
and spaces name the file and nothing else.
"""

from __future__ import annotations

import re
from urllib.parse import quote

#: A leading URI scheme (``https:``, ``file:``) or drive letter (``C:``).
_SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")
#: C0 and C1 control characters, DEL, and the line and paragraph separators.
_CONTROL_RE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def refusal(path: str) -> str:
    """Why ``path`` cannot be exported as a location inside the repository ("" if it can)."""
    if not path:
        return "it is empty"
    if _CONTROL_RE.search(path):
        return "it holds a control character"
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return "it is not UTF-8"
    if "\\" in path:
        return "it holds a backslash"
    if path.startswith("/"):
        return "it is absolute"
    if _SCHEME_RE.match(path):
        return "it is a URL or a drive, not a repository path"
    segments = path.split("/")
    if ".." in segments:
        return "it climbs out with '..'"
    if any(s.lower().rstrip(". ") == ".git" for s in segments):
        return "it is inside .git"
    if not any(s not in ("", ".") for s in segments):
        return "it names no file"
    return ""


def repo_path(path: str) -> str | None:
    """``path`` as every export shows it (repository-relative, ``.`` and empty segments
    dropped), or None when it is not a location inside the repository (:func:`refusal`)."""
    if refusal(path):
        return None
    return "/".join(s for s in path.split("/") if s not in ("", "."))


def sarif_uri(path: str) -> str:
    """A :func:`repo_path` as a relative URI reference: every byte of its UTF-8 outside
    RFC 3986's unreserved characters (and ``/`` between segments) percent-encoded, so it
    resolves against ``%SRCROOT%`` to that file and decodes back to it."""
    return quote(path, safe="/")
