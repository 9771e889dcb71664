"""Gathering the context files of a review: what is read, in what order, and what is refused.

A ``--context`` spec is a file, a folder or a glob, relative to the repository root. Folders
and globs are expanded by git itself (``git ls-files --cached --others --exclude-standard``)
so git's ignore rules apply exactly (nested ``.gitignore``, ``.git/info/exclude``,
``core.excludesFile``); outside a git work tree the ``.gitignore`` files are honoured with
``pathspec``'s git-compatible matcher. A file named explicitly is taken even if ignored: the
user asked for it.

Everything that could not be sent faithfully is refused before anything is sent, with a
one-line error naming the path: outside the root, missing, not a regular file, binary (NUL
bytes), not UTF-8, over ``max_file_bytes``, the total over ``max_context_bytes``.
"""

from __future__ import annotations

import hashlib
import os
import re
import stat
import subprocess
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from .errors import ConfigError, InputError
from .repo import git_executable, has_unsafe_chars, resolve_inside

#: Sized for a 128k-token model: ~4 bytes a token leaves about 28k tokens for the template
#: and the answer.
DEFAULT_MAX_CONTEXT_BYTES = 400_000
DEFAULT_MAX_FILE_BYTES = 200_000

_GLOB_CHARS = re.compile(r"[*?\[]")


@dataclass(frozen=True)
class ContextFile:
    """One file as it goes into the prompt."""

    path: str
    """Repo-relative POSIX path, as receipts name it."""
    text: str
    """The file's text (decoded UTF-8, byte for byte what is sent)."""
    sha256: str
    """``sha256:<hex>`` of the file's bytes."""
    size: int
    """Size in bytes."""


@dataclass(frozen=True)
class ContextLimits:
    """Size limits checked before anything is sent."""

    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES
    max_context_bytes: int = DEFAULT_MAX_CONTEXT_BYTES

    def __post_init__(self) -> None:
        if self.max_file_bytes <= 0:
            raise ConfigError(f"--max-file-bytes must be positive, got {self.max_file_bytes}")
        if self.max_context_bytes <= 0:
            raise ConfigError(f"--max-context-bytes must be positive, got {self.max_context_bytes}")


def sha256_tag(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def is_glob(spec: str) -> bool:
    return _GLOB_CHARS.search(spec) is not None


# --------------------------------------------------------------------------- expansion


def _git_ls_files(root: Path, pathspecs: Sequence[str]) -> list[str] | None:
    """Paths git would consider part of the tree under ``pathspecs``, or None without git."""
    git = git_executable()
    if git is None:
        return None
    try:
        out = subprocess.run(
            [
                git,
                "-c",
                "core.quotePath=false",
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
                "--",
                *pathspecs,
            ],
            cwd=root,
            capture_output=True,
            check=False,
        )
    except OSError:
        return None
    if out.returncode != 0:
        return None
    names = {os.fsdecode(n) for n in out.stdout.split(b"\0") if n}
    return sorted(names)


@cache
def _in_git_work_tree(root: Path) -> bool:
    git = git_executable()
    if git is None:
        return False
    try:
        out = subprocess.run(
            [git, "rev-parse", "--is-inside-work-tree"],
            cwd=root,
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError:
        return False
    return out.returncode == 0 and out.stdout.strip() == "true"


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


class _IgnoreWalker:
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

    def walk(self, rel_top: str) -> Iterator[str]:
        top = self.root / rel_top if rel_top not in ("", ".") else self.root
        prefix = "" if rel_top in ("", ".") else rel_top.rstrip("/") + "/"
        # Ancestors of the folder may be ignored too (git would list nothing below them).
        if prefix:
            parts = prefix.rstrip("/").split("/")
            for i in range(1, len(parts) + 1):
                if parts[i - 1] == ".git" or self.ignored("/".join(parts[:i]), True):
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


def _is_listable(root: Path, rel: str) -> bool:
    """Whether a path git (or the walker) listed is a file to read, as git sees files.

    Dropped: entries that are gone from the work tree (deleted but still tracked), nested
    repositories and submodules (git lists them as ``dir/`` or as a gitlink folder), FIFOs,
    sockets and devices, and symlinks to folders inside the root. A symlink that leads out
    is kept, so reading it refuses it by name.
    """
    if rel.endswith("/"):
        return False
    try:
        st = os.lstat(root / rel)
    except OSError:
        return False
    if stat.S_ISLNK(st.st_mode):
        target = (root / rel).resolve()
        try:
            target.relative_to(root)
        except ValueError:
            return True
        return not target.is_dir()
    return stat.S_ISREG(st.st_mode)


def _expand_folder(root: Path, rel: str) -> list[str]:
    if _in_git_work_tree(root):
        listed = _git_ls_files(root, [rel if rel != "." else "."])
        if listed is not None:
            return [p for p in listed if _is_listable(root, p)]
    return sorted(p for p in _IgnoreWalker(root).walk(rel) if _is_listable(root, p))


def _expand_glob(root: Path, pattern: str) -> list[str]:
    pattern = pattern.removeprefix("./")
    if pattern.startswith("/") or ".." in pattern.split("/"):
        raise InputError(f"context pattern {pattern}: must stay inside the repository root")
    if _in_git_work_tree(root):
        listed = _git_ls_files(root, [f":(glob){pattern}"])
        if listed is not None:
            return [p for p in listed if _is_listable(root, p)]
    rx = glob_to_regex(pattern)
    return sorted(p for p in _IgnoreWalker(root).walk("") if rx.match(p) and _is_listable(root, p))


def _exists_literally(root: Path, spec: str) -> bool:
    """A path such as ``app/[id]/page.tsx`` that exists as named is a path, not a glob."""
    try:
        return os.path.lexists(root / spec)
    except (OSError, ValueError):
        return False


def expand_specs(root: Path, specs: Iterable[str]) -> list[tuple[str, bool]]:
    """Repo-relative paths for ``specs`` in the order given, de-duplicated.

    Each path is paired with whether it was named explicitly (explicit files may be empty
    or ignored; files found in folders and globs are taken as git lists them).
    """
    seen: set[str] = set()
    result: list[tuple[str, bool]] = []

    def add(rel: str, explicit: bool) -> None:
        if rel not in seen:
            seen.add(rel)
            result.append((rel, explicit))

    any_spec = False
    for spec in specs:
        any_spec = True
        if is_glob(spec) and not _exists_literally(root, spec):
            matches = _expand_glob(root, spec)
            if not matches:
                raise InputError(
                    f"context pattern {spec}: matches no file (after git's ignore rules)"
                )
            for rel in matches:
                add(rel, False)
            continue
        resolved, rel = resolve_inside(root, spec, what="context path")
        if _in_git_dir(root, rel) or _in_git_dir(root, resolved):
            raise InputError(f"context path {spec}: inside .git/ (git's own data, never context)")
        try:
            st = resolved.stat()
        except FileNotFoundError:
            raise InputError(f"context path {spec}: no such file or folder") from None
        except OSError as exc:
            raise InputError(f"context path {spec}: cannot read ({exc.strerror})") from None
        if stat.S_ISDIR(st.st_mode):
            matches = _expand_folder(root, rel)
            matches = [m for m in matches if m == rel or rel == "." or m.startswith(rel + "/")]
            if not matches:
                raise InputError(f"context folder {spec}: holds no file (after git's ignore rules)")
            for m in matches:
                add(m, False)
        else:
            add(rel, True)
    if not any_spec:
        raise InputError("no context given: pass --context with a file, folder or glob")
    return result


# --------------------------------------------------------------------------- reading


def _in_git_dir(root: Path, path: str | Path) -> bool:
    """Whether ``path`` (repo-relative, or absolute inside ``root``) is inside ``.git/``."""
    rel = Path(path).relative_to(root) if isinstance(path, Path) else Path(path)
    return bool(rel.parts) and rel.parts[0] == ".git"


def _stat_listed(root: Path, rel: str) -> tuple[Path, os.stat_result]:
    """Stat a path git (or the walker) listed. Neither descends into symlinked folders, so
    only the last component can be a symlink: resolving just that keeps 20k-file trees fast."""
    path = root / rel
    st = os.lstat(path)
    if stat.S_ISLNK(st.st_mode):
        target = path.resolve()
        try:
            target.relative_to(root)
        except ValueError:
            raise InputError(
                f"context file {rel}: a symlink leads outside the repository root ({target})"
            ) from None
        st = target.stat()
    return path, st


def read_context_file(root: Path, rel: str, *, explicit: bool, max_file_bytes: int) -> ContextFile:
    """Read one file, refusing what cannot be sent faithfully."""
    if has_unsafe_chars(rel):
        raise InputError(f"context file {rel!r}: name holds control characters (e.g. a newline)")
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"context file {rel!r}: name is not valid UTF-8") from None
    try:
        if explicit:
            path, _ = resolve_inside(root, rel, what="context file")
            st = path.stat()
        else:
            path, st = _stat_listed(root, rel)
    except FileNotFoundError:
        raise InputError(f"context file {rel}: no such file") from None
    except OSError as exc:
        raise InputError(f"context file {rel}: cannot read ({exc.strerror})") from None
    if not stat.S_ISREG(st.st_mode):
        raise InputError(f"context file {rel}: not a regular file")
    if st.st_size > max_file_bytes:
        raise InputError(
            f"context file {rel}: {st.st_size} bytes is over --max-file-bytes {max_file_bytes}"
        )
    try:
        with open(path, "rb") as fh:
            data = fh.read(max_file_bytes + 1)
    except OSError as exc:
        raise InputError(f"context file {rel}: cannot read ({exc.strerror})") from None
    if len(data) > max_file_bytes:
        raise InputError(f"context file {rel}: over --max-file-bytes {max_file_bytes}")
    if explicit and not data:
        raise InputError(f"context file {rel}: is empty, nothing to review")
    nul = data.find(b"\0")
    if nul != -1:
        raise InputError(f"context file {rel}: binary (NUL byte at offset {nul})")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"context file {rel}: not UTF-8 (invalid byte at offset {exc.start})"
        ) from None
    return ContextFile(path=rel, text=text, sha256=sha256_tag(data), size=len(data))


def gather_context(
    root: Path, specs: Sequence[str], limits: ContextLimits | None = None
) -> list[ContextFile]:
    """Expand ``specs`` and read every file, refusing the whole set on the first bad one."""
    limits = limits or ContextLimits()
    files: list[ContextFile] = []
    total = 0
    for rel, explicit in expand_specs(root, specs):
        cf = read_context_file(root, rel, explicit=explicit, max_file_bytes=limits.max_file_bytes)
        total += cf.size
        if total > limits.max_context_bytes:
            raise InputError(
                f"context total reaches {total} bytes at {rel}, over --max-context-bytes "
                f"{limits.max_context_bytes}"
            )
        files.append(cf)
    return files
