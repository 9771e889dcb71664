"""git's ignore rules, exactly: git lists what a folder or glob holds; outside a git work
tree the ``.gitignore`` files are honoured with ``pathspec``'s git-compatible matcher."""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from deepseek_review.git.runner import git_output, in_git_work_tree


def git_ls_files(root: Path, pathspecs: Sequence[str]) -> list[str] | None:
    """Paths git would consider part of the tree under ``pathspecs``, or None without git."""
    out = git_output(
        root,
        *("-c", "core.quotePath=false", "ls-files", "-z", "--cached", "--others"),
        *("--exclude-standard", "--", *pathspecs),
    )
    if out is None:
        return None
    # Decoded whole, as os.fsdecode decodes each name (the encoding is ASCII-compatible, its
    # errors handler escapes byte by byte: a NUL ends no character).
    names = set(
        out.decode(sys.getfilesystemencoding(), sys.getfilesystemencodeerrors()).split("\0")
    )
    names.discard("")
    return sorted(names)


def glob_to_regex(pattern: str) -> re.Pattern[str]:
    """Git ``:(glob)`` semantics: ``*`` and ``?`` stay within a segment, ``**`` crosses them."""
    i, out = 0, []
    while i < len(pattern):
        c = pattern[i]
        if pattern.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = pattern.find("]", i + 2 if pattern.startswith("[!", i) else i + 1)
            if j == -1:
                out.append(re.escape(c))
                i += 1
            else:
                body = pattern[i + 1 : j]
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append("[" + body.replace("\\", "\\\\") + "]")
                i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    return re.compile("".join(out) + r"\Z")


class IgnoreWalker:
    """Walks a folder outside git, honouring every ``.gitignore`` from the root down."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self._specs: dict[str, object | None] = {}

    def _spec(self, rel_dir: str) -> object | None:
        if rel_dir not in self._specs:
            from pathspec import GitIgnoreSpec

            f = self.root / rel_dir / ".gitignore" if rel_dir else self.root / ".gitignore"
            try:
                lines = f.read_text(encoding="utf-8", errors="replace").splitlines()
            except OSError:
                self._specs[rel_dir] = None
            else:
                self._specs[rel_dir] = GitIgnoreSpec.from_lines(lines)
        return self._specs[rel_dir]

    def ignored(self, rel: str, is_dir: bool) -> bool:
        parts = rel.split("/")
        # Deeper .gitignore files take precedence; within one, the last matching rule wins.
        for depth in range(len(parts) - 1, -1, -1):
            base = "/".join(parts[:depth])
            spec = self._spec(base)
            if spec is None:
                continue
            sub = "/".join(parts[depth:]) + ("/" if is_dir else "")
            result = spec.check_file(sub)  # type: ignore[attr-defined]
            if result.include is not None:
                return bool(result.include)
        return False

    def excluded(self, rel: str, is_dir: bool) -> bool:
        """Whether git would list nothing at ``rel``: it, or a folder above it, is ignored."""
        parts = rel.split("/")
        for i in range(1, len(parts) + 1):
            last = i == len(parts)
            if parts[i - 1] == ".git" or self.ignored("/".join(parts[:i]), is_dir or not last):
                return True
        return False

    def walk(self, rel_top: str) -> Iterator[str]:
        top = self.root / rel_top if rel_top not in ("", ".") else self.root
        prefix = "" if rel_top in ("", ".") else rel_top.rstrip("/") + "/"
        # Ancestors of the folder may be ignored too (git would list nothing below them).
        if prefix and self.excluded(prefix.rstrip("/"), True):
            return
        stack = [(top, prefix)]
        while stack:
            folder, pre = stack.pop()
            try:
                entries = sorted(os.scandir(folder), key=lambda e: e.name)
            except OSError:
                continue
            subdirs = []
            for entry in entries:
                rel = pre + entry.name
                if entry.name == ".git":
                    continue
                is_dir = entry.is_dir(follow_symlinks=False)
                if self.ignored(rel, is_dir):
                    continue
                if is_dir:
                    subdirs.append((Path(entry.path), rel + "/"))
                else:
                    yield rel
            stack.extend(reversed(subdirs))


def git_lists(root: Path, rel: str, is_dir: bool) -> bool:
    """Whether git (or, outside git, the ``.gitignore`` rules) would list ``rel``: tracked,
    or untracked and not ignored; for a folder, anything below it."""
    if not in_git_work_tree(root):
        return not IgnoreWalker(root).excluded(rel, is_dir)
    listed = git_ls_files(root, [f":(literal){rel}"])
    if listed is None:  # git failed: assume the worst
        return False
    return bool(listed) if is_dir else rel in listed
