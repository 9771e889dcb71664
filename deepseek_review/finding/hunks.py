"""A diff review's change as findings see it: each file's new-side hunks, with their lines.

GitHub accepts a review comment only on lines inside a hunk of the pull request's diff, so
a finding of a diff review is anchored only there. The change is read from the request
itself (the framed patch whose sha256 the record's ``git.diff`` holds), never made again
from the working tree: it stays true after the tree moved on, and needs no git objects (a
shallow CI clone exports the same findings).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from deepseek_review.records.canonical import sha256_tag

_HUNK_RE = re.compile(r"^@@ -\d+(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_OCTAL_RE = re.compile(rb"\\([0-7]{3})")
_SIMPLE_ESCAPES = {b"\\\\": b"\\", b'\\"': b'"', b"\\t": b"\t", b"\\n": b"\n"}
#: How the framed change begins (:func:`deepseek_review.context.git_plan.frame_diff`).
_FRAME_HEAD = "## Change from "
#: How ``gone`` says a file was deleted (its path is still one of the change's files).
DELETED = "deleted by the change"


@dataclass(frozen=True)
class Hunk:
    """One hunk's new side: its first line number and its lines (context and added)."""

    first: int
    lines: tuple[str, ...]

    @property
    def last(self) -> int:
        return self.first + len(self.lines) - 1

    def cited(self, start: int, end: int) -> tuple[str, ...] | None:
        """Lines ``start``..``end`` when all lie inside this hunk, else None."""
        if self.lines and self.first <= start and end <= self.last:
            return self.lines[start - self.first : end - self.first + 1]
        return None


@dataclass(frozen=True)
class NewSide:
    """The files of a change: ``hunks`` by new path (every file with a new side, even one
    without hunks: a pure rename, a mode change), ``gone`` the old paths the change deletes
    or renames away, with how; ``missing`` says why the change itself cannot be had."""

    hunks: dict[str, list[Hunk]] = field(default_factory=dict)
    gone: dict[str, str] = field(default_factory=dict)
    missing: str = ""


def unquote(name: str) -> str:
    """A path as git prints it in a diff header: C-quoted when it holds unusual bytes."""
    if not (name.startswith('"') and name.endswith('"')):
        return name
    raw = name[1:-1].encode("utf-8")
    raw = _OCTAL_RE.sub(lambda m: bytes([int(m.group(1), 8)]), raw)
    for k, v in _SIMPLE_ESCAPES.items():
        raw = raw.replace(k, v)
    return raw.decode("utf-8", "surrogateescape")


def _side(line: str, prefix: str) -> str | None:
    """The path of a ``--- a/P`` / ``+++ b/P`` line, None for ``/dev/null``."""
    name = unquote(line[4:].rstrip("\t"))
    return name[2:] if name.startswith(prefix) else None


class _Parser:
    """Reads a unified diff line by line, counting each hunk's lines so that a content line
    that looks like a header (an added ``++ x`` shows as ``+++ x``) is never taken for one."""

    def __init__(self) -> None:
        self.hunks: dict[str, list[tuple[int, list[str]]]] = {}
        self.gone: dict[str, str] = {}
        self.old: str | None = None
        self.new: str | None = None
        self.left = (0, 0)  # old and new lines still to come in the current hunk
        self.hunk: list[str] | None = None

    def result(self) -> NewSide:
        hunks = {
            p: [Hunk(first, tuple(lines)) for first, lines in hs] for p, hs in self.hunks.items()
        }
        return NewSide(hunks, self.gone)

    def line(self, line: str) -> None:
        if self.left != (0, 0) and self._body(line):
            return
        if line.startswith("diff --git "):
            self.old = self.new = None
        elif line.startswith("rename from "):
            self.old = unquote(line[12:])
        elif line.startswith("rename to "):
            self._new(unquote(line[10:]))
            self.gone[self.old or ""] = f"renamed by the change to {self.new}"
        elif line.startswith("--- "):
            self.old = _side(line, "a/")
        elif line.startswith("+++ "):
            self._new(_side(line, "b/"))
            if self.new is None and self.old is not None:
                self.gone[self.old] = DELETED
        elif m := _HUNK_RE.match(line):
            first = int(m.group(2))
            self.left = (int(m.group(1) or "1"), int(m.group(3) or "1"))
            self.hunk = None
            if self.new is not None:
                self.hunk = []
                self.hunks[self.new].append((first, self.hunk))

    def _new(self, path: str | None) -> None:
        self.new = path
        if path is not None:
            self.hunks.setdefault(path, [])

    def _body(self, line: str) -> bool:
        """Count one line of a hunk; False when it is not one (a malformed diff)."""
        old, new = self.left
        kind = line[:1]
        if kind == " ":
            self.left = (old - 1, new - 1)
        elif kind == "-":
            self.left = (old - 1, new)
        elif kind == "+":
            self.left = (old, new - 1)
        elif kind == "\\":
            return True  # "\ No newline at end of file"
        else:
            self.left = (0, 0)
            return False
        if kind != "-" and self.hunk is not None:
            self.hunk.append(line[1:-1] if line.endswith("\r") else line[1:])
        return True


def parse_diff(diff: str) -> NewSide:
    """The new side of every file of a unified diff (``git diff`` output), by new path."""
    parser = _Parser()
    for line in diff.split("\n"):
        parser.line(line)
    return parser.result()


def _patch_of(framed: str) -> str:
    """The patch inside a framed change: the lines between its opening ``diff`` fence and
    the fence that closes it (no line of the patch can)."""
    lines = framed.split("\n")
    opening = next((i for i, x in enumerate(lines) if x.endswith("diff") and x[:1] in "`~"), 0)
    fence = lines[opening][: -len("diff")]
    body = lines[opening + 1 :]
    end = next((i for i, x in enumerate(body) if x == fence), len(body))
    return "\n".join(body[:end])


def change_in(git: Mapping[str, Any] | None, parts: Iterable[object]) -> NewSide | None:
    """The change a request showed (its string ``parts``), found by the sha256 and size its
    record's ``git.diff`` holds; None when the review was not of a change."""
    diff = git.get("diff") if isinstance(git, Mapping) else None
    if not isinstance(diff, Mapping):
        return None
    sent = "".join(p for p in parts if isinstance(p, str)).encode("utf-8")
    size, digest = diff.get("bytes"), diff.get("sha256")
    at = sent.find(_FRAME_HEAD.encode())
    while at >= 0 and type(size) is int:
        framed = sent[at : at + size]
        if sha256_tag(framed) == digest:
            out = parse_diff(_patch_of(framed.decode("utf-8")))
            for path in diff.get("shown") or ():
                if isinstance(path, str) and path not in out.gone:
                    out.hunks.setdefault(path, [])
            return out
        at = sent.find(_FRAME_HEAD.encode(), at + 1)
    shown = [p for p in diff.get("shown") or () if isinstance(p, str)]
    why = "the request does not hold the change its record's git.diff hashes"
    return NewSide({p: [] for p in shown}, {}, why)
