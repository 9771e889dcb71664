"""Gathering the context files of a review: what is read, in what order, and what is refused.

A ``--context`` spec is a file, a folder or a glob, relative to the repository root. Folders
and globs are expanded by git itself (``git ls-files --cached --others --exclude-standard``)
so git's ignore rules apply exactly (nested ``.gitignore``, ``.git/info/exclude``,
``core.excludesFile``); outside a git work tree the ``.gitignore`` files are honoured with
``pathspec``'s git-compatible matcher. A file named explicitly is taken even if ignored: the
user asked for it.

A file named explicitly that could not be sent faithfully is refused before anything is
sent, with a one-line error naming the path: outside the root, missing, not a regular file,
binary (NUL bytes), not UTF-8, over ``max_file_bytes``; so is the total over
``max_context_bytes`` and a name with control, bidi or invisible characters. A file a folder
or glob finds that cannot be sent (binary, not UTF-8, over the limit, a symlink out, unreadable)
is left out instead (:class:`Skipped`): one such file does not stop the review of a folder.

A review's own outputs are never its context: folders and globs leave out the output folders
in play (:class:`Output`) and every file named as this tool names what it writes
(:func:`written_by_tool`), wherever it is. Named explicitly, such a file is sent.

The repository may be hostile. Files are opened one folder at a time without following a
symlink (:class:`Opener`), so a path swapped after a check cannot lead elsewhere; a symlink is
resolved and checked before anything is opened there. git's own data (any ``.git`` folder,
the git dir wherever it is) is never context, and neither is a file git ignores when a
symlink leads to it (``docs/env -> ../.env``). Named explicitly, such a path is refused;
found by a folder or a glob, it is skipped and reported (:class:`Skipped`).
"""

from __future__ import annotations

import errno
import hashlib
import logging
import os
import re
import stat
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from .errors import InputError
from .options import check, default, name_of
from .records.naming import name_order, topic_of
from .repo import (
    git_dirs,
    git_output,
    has_unsafe_chars,
    in_git_work_tree,
    resolve_inside,
    under_dot_git,
)
from .storage import TEMP_PREFIX, TEMP_SUFFIX

#: Sized for a 128k-token model: ~4 bytes a token leaves about 28k tokens for the template
#: and the answer.
DEFAULT_MAX_CONTEXT_BYTES: int = default("max_context_bytes")
DEFAULT_MAX_FILE_BYTES: int = default("max_file_bytes")

_GLOB_CHARS = re.compile(r"[*?\[]")

log = logging.getLogger("deepseek_review")


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
        check("max_file_bytes", self.max_file_bytes)
        check("max_context_bytes", self.max_context_bytes)


#: The kinds of what a folder or glob leaves out, as the summary line counts them.
KIND_GIT_DATA = "in git's data"
KIND_IGNORED_LINK = "a symlink to what git ignores"
KIND_LINK_OUT = "a symlink out of the repository"
KIND_BINARY = "binary"
KIND_NOT_UTF8 = "not UTF-8"
KIND_TOO_BIG = "over --max-file-bytes"
KIND_UNREADABLE = "unreadable"
KIND_WRITTEN = "written by deepseek-review"
#: Left out for safety: each is warned about on its own line (a repository that links into
#: git's data or to an ignored file may be trying something).
WARNED_KINDS = frozenset({KIND_GIT_DATA, KIND_IGNORED_LINK})


@dataclass(frozen=True)
class Skipped:
    """What a folder or glob listed that is left out, and why (``--dry-run`` lists it, a
    review sums it up in one line)."""

    path: str
    """Repo-relative; a folder left out whole ends in ``/``."""
    reason: str
    kind: str = ""
    """What the summary line counts it as: a ``KIND_*`` word, or where an output is."""
    files: int = 1
    """How many listed files this stands for (a folder left out whole: all of them)."""
    own: bool = False
    """The tool's own output (left out as a rule, not because it could not be sent)."""


@dataclass(frozen=True)
class Output:
    """A path the tool writes to (an output folder, a batch report): folders and globs never
    list it, nor anything below it. ``path`` is repo-relative; ``.`` (writing into the root)
    leaves out nothing by place, only by name (:func:`written_by_tool`)."""

    path: str
    what: str = "the output folder"

    def holds(self, rel: str) -> bool:
        return self.path != "." and (rel == self.path or rel.startswith(self.path + "/"))


class Gathered(list[ContextFile]):
    """The context files in order (a list), and what expansion found but left out."""

    def __init__(self, files: Iterable[ContextFile] = (), skipped: Iterable[Skipped] = ()) -> None:
        super().__init__(files)
        self.skipped = tuple(skipped)


#: Why a path is refused (named) or skipped (listed): git's own data, in ``where``.
GIT_DATA = "inside {where} (git's own data, never context)"
LINK_TO_GIT_DATA = "a symlink into {where} (git's own data, never context)"
LINK_OUT = "a symlink leads outside the repository root ({real})"
UNSAFE_NAME = (
    "name holds control characters (e.g. a newline, a bidi override or a zero-width space)"
)
_STAMP_END = re.compile(r"_[0-9]{8}T[0-9]{6}Z\Z")


def written_by_tool(rel: str) -> bool:
    """Whether ``rel`` is named as this tool names the files it writes: an answer, receipt,
    request record or kept reasoning (``<topic>_deepseek_<model>[_continuation]_<stamp>
    [-N].{md,receipt.json,request.json,reasoning.md}``, see :func:`.records.naming.stem_for`), or
    a temporary file a killed writer left."""
    name = rel.rpartition("/")[2]
    if name.startswith(TEMP_PREFIX) and name.endswith(TEMP_SUFFIX):
        return True
    _, base, _, suffix = name_order(name)
    return bool(suffix) and topic_of(base) is not None and _STAMP_END.search(base) is not None


def plural(n: int, word: str) -> str:
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def sha256_tag(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


def is_glob(spec: str) -> bool:
    return _GLOB_CHARS.search(spec) is not None


# --------------------------------------------------------------------------- expansion


def _git_ls_files(root: Path, pathspecs: Sequence[str]) -> list[str] | None:
    """Paths git would consider part of the tree under ``pathspecs``, or None without git."""
    out = git_output(
        root,
        *("-c", "core.quotePath=false", "ls-files", "-z", "--cached", "--others"),
        *("--exclude-standard", "--", *pathspecs),
    )
    if out is None:
        return None
    return sorted({os.fsdecode(n) for n in out.split(b"\0") if n})


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


def _expand_folder(root: Path, rel: str) -> list[str]:
    if in_git_work_tree(root):
        listed = _git_ls_files(root, [rel if rel != "." else "."])
        if listed is not None:
            return [p for p in listed if not p.endswith("/")]
    return sorted(_IgnoreWalker(root).walk(rel))


def _expand_glob(root: Path, pattern: str) -> list[str]:
    pattern = pattern.removeprefix("./")
    if pattern.startswith("/") or ".." in pattern.split("/"):
        raise InputError(f"context pattern {pattern}: must stay inside the repository root")
    if in_git_work_tree(root):
        listed = _git_ls_files(root, [f":(glob){pattern}"])
        if listed is not None:
            return [p for p in listed if not p.endswith("/")]
    rx = glob_to_regex(pattern)
    return sorted(p for p in _IgnoreWalker(root).walk("") if rx.match(p))


def _exists_literally(root: Path, spec: str) -> bool:
    """A path such as ``app/[id]/page.tsx`` that exists as named is a path, not a glob."""
    try:
        return os.path.lexists(root / spec)
    except (OSError, ValueError):
        return False


@dataclass(frozen=True)
class Expansion:
    """What the specs name, before reading: paths in order, and which spec listed what."""

    entries: list[tuple[str, bool]]
    """Repo-relative paths in the order given, de-duplicated, each with whether it was named
    explicitly (explicit files may be empty or ignored; listed ones are taken as git lists
    them, and skipped if they turn out not to be files)."""
    groups: list[tuple[str, str, list[str]]]
    """(spec, "folder" or "pattern", what it listed) for every folder and glob spec."""
    left_out: list[Skipped] = field(default_factory=list)
    """The tool's own outputs that folders and globs listed, left out of ``entries`` (a file
    also named explicitly stays in)."""
    left_out_of: dict[str, Skipped] = field(default_factory=dict)
    """Which of ``left_out`` each listed path left out falls under."""


def _leave_out_outputs(
    listed: Iterable[str], named: set[str], outputs: Sequence[Output]
) -> tuple[list[Skipped], dict[str, Skipped]]:
    """What of ``listed`` (not ``named`` explicitly) is the tool's own output: one entry per
    output folder (its file count) or file, and one per file named as the tool names its own."""
    below: dict[Output, list[str]] = {}
    by_name: list[str] = []
    for rel in listed:
        if rel in named:
            continue
        output = next((o for o in outputs if o.holds(rel)), None)
        if output is not None:
            below.setdefault(output, []).append(rel)
        elif written_by_tool(rel):
            by_name.append(rel)
    left: list[Skipped] = []
    of: dict[str, Skipped] = {}
    for output, rels in below.items():
        if rels == [output.path]:  # a file: the batch report
            skip = Skipped(rels[0], output.what, f"{output.what} ({rels[0]})", own=True)
        else:
            path, count = output.path + "/", plural(len(rels), "file")
            kind = f"in {output.what} {path}"
            skip = Skipped(path, f"{output.what} ({count})", kind, len(rels), own=True)
        left.append(skip)
        of.update(dict.fromkeys(rels, skip))
    for rel in by_name:
        skip = Skipped(rel, f"{KIND_WRITTEN} (name it to send it)", KIND_WRITTEN, own=True)
        left.append(skip)
        of[rel] = skip
    return left, of


def expand_specs(root: Path, specs: Iterable[str], outputs: Sequence[Output] = ()) -> Expansion:
    """Expand every spec; refuse paths outside the root, in .git/, missing, or empty globs.

    What a folder or glob lists of the tool's own output (``outputs``, and files named as
    the tool names them) is left out, unless a spec names the file itself.
    """
    seen: set[str] = set()
    entries: list[tuple[str, bool]] = []
    groups: list[tuple[str, str, list[str]]] = []
    listed: dict[str, None] = {}
    named: set[str] = set()

    def add(rel: str, explicit: bool) -> None:
        if explicit:
            named.add(rel)
        else:
            listed[rel] = None
        if rel not in seen:
            seen.add(rel)
            entries.append((rel, explicit))

    any_spec = False
    for spec in specs:
        any_spec = True
        if has_unsafe_chars(spec):
            raise InputError(f"context path {spec!r}: {UNSAFE_NAME}")
        if is_glob(spec) and not _exists_literally(root, spec):
            matches = _expand_glob(root, spec)
            if not matches:
                raise InputError(
                    f"context pattern {spec}: matches no file (after git's ignore rules)"
                )
            groups.append((spec, "pattern", matches))
            for rel in matches:
                add(rel, False)
            continue
        resolved, rel = resolve_inside(root, spec, what="context path")
        if under_dot_git(rel):
            raise InputError(f"context path {spec}: {GIT_DATA.format(where='.git/')}")
        try:
            st = resolved.stat()
        except FileNotFoundError:
            raise InputError(f"context path {spec}: no such file or folder") from None
        except OSError as exc:
            raise InputError(f"context path {spec}: cannot read ({exc.strerror})") from None
        # Checked again on the open file when it is read: this only refuses early, by name.
        why = why_not_context(root, rel, os.fspath(resolved), stat.S_ISDIR(st.st_mode))
        if why is not None:
            raise InputError(f"context path {spec}: {why[0]}")
        if stat.S_ISDIR(st.st_mode):
            matches = _expand_folder(root, rel)
            matches = [m for m in matches if m == rel or rel == "." or m.startswith(rel + "/")]
            if not matches:
                raise InputError(f"context folder {spec}: holds no file (after git's ignore rules)")
            groups.append((spec, "folder", matches))
            for m in matches:
                add(m, False)
        else:
            add(rel, True)
    if not any_spec:
        raise InputError(f"no context given: pass {name_of('context')} with a file, folder or glob")
    left_out, left_out_of = _leave_out_outputs(listed, named, outputs)
    if left_out_of:
        entries = [(rel, explicit) for rel, explicit in entries if rel not in left_out_of]
    return Expansion(entries, groups, left_out, left_out_of)


# --------------------------------------------------------------------------- reading


def _git_lists(root: Path, rel: str, is_dir: bool) -> bool:
    """Whether git (or, outside git, the ``.gitignore`` rules) would list ``rel``: tracked,
    or untracked and not ignored; for a folder, anything below it."""
    if not in_git_work_tree(root):
        return not _IgnoreWalker(root).excluded(rel, is_dir)
    listed = _git_ls_files(root, [f":(literal){rel}"])
    if listed is None:  # git failed: assume the worst
        return False
    return bool(listed) if is_dir else rel in listed


@dataclass(frozen=True)
class _Layout:
    """What every check on a file below ``root`` needs, worked out once per root."""

    prefix: str
    """``root`` ending in a separator: the path of ``rel`` is ``prefix + rel``."""
    git_dirs: tuple[tuple[str, str], ...]
    """(path, repo-relative name) of the repository's git dirs inside the tree that
    :func:`.repo.under_dot_git` does not already catch (``--separate-git-dir``); usually none.
    git lists their files as untracked."""


_LAYOUTS: dict[Path, _Layout] = {}


def _layout(root: Path) -> _Layout:
    # A plain dict, not functools.cache: looked up once per file, and a Path key found by
    # identity costs no comparison.
    layout = _LAYOUTS.get(root)
    if layout is None:
        prefix = os.path.join(os.fspath(root), "")
        dirs = tuple(
            (d, d[len(prefix) :].replace(os.sep, "/") + "/")
            for d in git_dirs(root)
            if d.startswith(prefix) and not under_dot_git(d[len(prefix) :].replace(os.sep, "/"))
        )
        layout = _LAYOUTS.setdefault(root, _Layout(prefix, dirs))
    return layout


def _git_data(layout: _Layout, real: str, real_rel: str) -> str | None:
    """Which of git's folders ``real`` (``real_rel`` below the root) is in, or None."""
    if under_dot_git(real_rel):
        return ".git/"
    for path, name in layout.git_dirs:
        if real == path or real.startswith(path + os.sep):
            return name
    return None


def why_not_context(root: Path, rel: str, real: str, is_dir: bool) -> tuple[str, str] | None:
    """Why ``rel`` (as named), which really is ``real`` (resolved), may not be context: the
    reason and its kind (``KIND_*``), or None when it may.

    Nothing outside the root may. git's own data never may (any folder named ``.git``, the
    repository's git dir wherever it is); through a symlink (``real`` is not ``rel``) neither
    may a file or folder git ignores, which the link would smuggle in (``.env``).
    """
    layout = _layout(root)
    if real.startswith(layout.prefix):
        real_rel = real[len(layout.prefix) :]
    elif real + os.sep == layout.prefix:
        real_rel = "."
    else:
        return LINK_OUT.format(real=real), KIND_LINK_OUT
    linked = real_rel != rel
    where = _git_data(layout, real, real_rel)
    if where is not None:
        return (LINK_TO_GIT_DATA if linked else GIT_DATA).format(where=where), KIND_GIT_DATA
    if linked and not _git_lists(root, real_rel, is_dir):
        return f"a symlink to {real_rel}, which git ignores", KIND_IGNORED_LINK
    return None


_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
_OPEN_FLAGS |= getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_WALKS = os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")


class Opener:
    """Opens files below ``root`` one folder at a time, never following a symlink.

    Each folder of a path is opened relative to its parent, and the file relative to its
    folder, all with ``O_NOFOLLOW``: a path through a symlink -- or a file or folder swapped
    for one after any check (the check-then-open race) -- fails with ``ELOOP`` instead of
    leading elsewhere, so what is opened is exactly ``root/rel``. The folders of the last
    path stay open (git lists a folder's files together): most files cost one ``openat``.
    Where ``dir_fd`` is not supported, only the last component is protected.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._prefix = _layout(root).prefix
        self._root_fd = os.open(root, _DIR_FLAGS) if _WALKS else -1
        self._dirs: list[tuple[str, int]] = []

    def open(self, rel: str) -> int:
        """A descriptor of ``root/rel`` (``O_NONBLOCK``: a FIFO does not block the open)."""
        wrapped = f"/{rel}/"
        if "//" in wrapped or "/./" in wrapped or "/../" in wrapped:
            raise OSError(errno.EINVAL, "not a plain path below the root", rel)
        *folders, name = rel.split("/")
        if not _WALKS:
            return os.open(self._prefix + rel, _OPEN_FLAGS)
        fd = self._root_fd
        for i, part in enumerate(folders):
            if i < len(self._dirs):
                if self._dirs[i][0] == part:
                    fd = self._dirs[i][1]
                    continue
                self._close_from(i)
            fd = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            self._dirs.append((part, fd))
        return os.open(name, _OPEN_FLAGS, dir_fd=fd)

    def _close_from(self, i: int) -> None:
        for _, fd in self._dirs[i:]:
            os.close(fd)
        del self._dirs[i:]

    def close(self) -> None:
        self._close_from(0)
        if self._root_fd >= 0:
            os.close(self._root_fd)
            self._root_fd = -1

    def __enter__(self) -> Opener:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def _refuse_or_skip(rel: str, why: str, kind: str, *, explicit: bool) -> Skipped:
    """A file named explicitly that cannot be sent is refused; one a folder or glob listed
    is left out."""
    if explicit:
        raise InputError(f"context file {rel}: {why}")
    return Skipped(rel, why, kind)


def _open_checked(
    opener: Opener, rel: str, *, explicit: bool
) -> tuple[int, os.stat_result] | Skipped | None:
    """Open ``rel`` to read, where :func:`why_not_context` allows it.

    The path is opened through :class:`Opener`, which follows no symlink. On one (``ELOOP``)
    it is resolved and checked *before* anything is opened there -- nothing outside the root
    or in git's data is opened at all, not even a device, whose open can act -- and the
    resolved path is opened the same way, so a link swapped in meanwhile fails rather than
    being followed.

    Returns the descriptor and its ``fstat``; None for a listed path that is not a file to
    read (gone though still tracked, a dangling symlink, a symlink to a folder);
    :class:`Skipped` for a listed path that may not be context. An explicit path is opened or
    refused.
    """
    root = opener.root
    layout = _layout(root)
    try:
        try:
            fd = opener.open(rel)
            # Not through a symlink; but git lists the files of a --separate-git-dir.
            where = _git_data(layout, layout.prefix + rel, rel) if layout.git_dirs else None
            if under_dot_git(rel):
                where = ".git/"
            if where is not None:
                os.close(fd)
                inside = GIT_DATA.format(where=where)
                return _refuse_or_skip(rel, inside, KIND_GIT_DATA, explicit=explicit)
        except OSError as exc:
            # A symlink met: ELOOP (EMLINK on FreeBSD); ENOTDIR for a folder on the way.
            if exc.errno not in (errno.ELOOP, errno.EMLINK, errno.ENOTDIR):
                raise
            checked = os.path.realpath(layout.prefix + rel)
            if checked == layout.prefix + rel:  # no symlink after all: a file on the way
                raise FileNotFoundError(errno.ENOENT, "no such file", rel) from None
            is_dir = stat.S_ISDIR(os.stat(checked).st_mode)  # FileNotFoundError: dangling
            why = why_not_context(root, rel, checked, is_dir)
            if why is not None:
                return _refuse_or_skip(rel, *why, explicit=explicit)
            if is_dir:
                if explicit:
                    raise InputError(f"context file {rel}: not a regular file") from None
                return None
            fd = opener.open(checked[len(layout.prefix) :])
    except (FileNotFoundError, NotADirectoryError):
        if explicit:
            raise FileNotFoundError(errno.ENOENT, "no such file", rel) from None
        return None
    try:
        return fd, os.fstat(fd)
    except BaseException:
        os.close(fd)
        raise


def _read_fd(
    fd: int, st: os.stat_result, rel: str, max_file_bytes: int, *, explicit: bool
) -> bytes | Skipped | None:
    if not stat.S_ISREG(st.st_mode):
        if explicit:
            raise InputError(f"context file {rel}: not a regular file")
        return None  # listed FIFOs, sockets, devices, nested repositories: not files
    if st.st_size > max_file_bytes:
        why = f"{st.st_size} bytes is over {name_of('max_file_bytes')} {max_file_bytes}"
        return _refuse_or_skip(rel, why, KIND_TOO_BIG, explicit=explicit)
    first = os.read(fd, st.st_size + 1)
    if len(first) <= st.st_size:  # a regular file reads short only at its end
        return first
    # It grew since fstat: read on to the end, but never past the limit.
    chunks, size = [first], len(first)
    while chunks[-1]:
        if size > max_file_bytes:
            why = f"over {name_of('max_file_bytes')} {max_file_bytes}"
            return _refuse_or_skip(rel, why, KIND_TOO_BIG, explicit=explicit)
        chunks.append(os.read(fd, 65536))
        size += len(chunks[-1])
    return b"".join(chunks)


def _decode(data: bytes, rel: str, *, explicit: bool) -> str | Skipped:
    """The text of a file's bytes; binary or non-UTF-8 data is refused or left out."""
    nul = data.find(b"\0")
    if nul != -1:
        why = f"binary (NUL byte at offset {nul})"
        return _refuse_or_skip(rel, why, KIND_BINARY, explicit=explicit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        why = f"not UTF-8 (invalid byte at offset {exc.start})"
        return _refuse_or_skip(rel, why, KIND_NOT_UTF8, explicit=explicit)


def read_context_file(
    root: Path,
    rel: str,
    *,
    explicit: bool,
    max_file_bytes: int,
    opener: Opener | None = None,
) -> ContextFile | Skipped | None:
    """Read one file, refusing what cannot be sent faithfully.

    Opened without following a symlink, where it leads checked first (:func:`_open_checked`).
    A listed (not explicit) path is :class:`Skipped` when it may not or cannot be sent
    (binary, not UTF-8, too big, leading out, unreadable), None when it is not a file to read
    (gone, a folder, a FIFO); an explicit path is always read or refused. ``opener``: one
    shared by the files of a gathering (else one for this file).
    """
    if opener is None:
        with Opener(root) as own:
            return read_context_file(
                root, rel, explicit=explicit, max_file_bytes=max_file_bytes, opener=own
            )
    if has_unsafe_chars(rel):
        raise InputError(f"context file {rel!r}: {UNSAFE_NAME}")
    try:
        rel.encode("utf-8")
    except UnicodeEncodeError:
        raise InputError(f"context file {rel!r}: name is not valid UTF-8") from None
    try:
        opened = _open_checked(opener, rel, explicit=explicit)
        if not isinstance(opened, tuple):
            return opened
        fd, st = opened
        try:
            data = _read_fd(fd, st, rel, max_file_bytes, explicit=explicit)
        finally:
            os.close(fd)
    except FileNotFoundError:
        raise InputError(f"context file {rel}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"context file {rel}: not a regular file") from None
    except OSError as exc:
        why = f"cannot read ({exc.strerror})"
        return _refuse_or_skip(rel, why, KIND_UNREADABLE, explicit=explicit)
    if not isinstance(data, bytes):
        return data
    if explicit and not data:
        raise InputError(f"context file {rel}: is empty, nothing to review")
    text = _decode(data, rel, explicit=explicit)
    if isinstance(text, Skipped):
        return text
    return ContextFile(path=rel, text=text, sha256=sha256_tag(data), size=len(data))


def gather_context(
    root: Path,
    specs: Sequence[str],
    limits: ContextLimits | None = None,
    outputs: Sequence[Output] = (),
) -> Gathered:
    """Expand ``specs`` and read every file, refusing the whole set on the first file named
    explicitly that cannot be sent, or a total over the limit.

    What a folder or glob listed that may not or cannot be sent, and the tool's own outputs
    (``outputs``, and files named as it names them), are left out, in ``skipped``, and summed
    up in one log line (:func:`_log_left_out`).
    """
    limits = limits or ContextLimits()
    expansion = expand_specs(root, specs, outputs)
    files: list[ContextFile] = []
    skipped: list[Skipped] = list(expansion.left_out)
    total = 0
    try:
        opener = Opener(root)
    except OSError as exc:
        raise InputError(f"repository root {root}: cannot open ({exc.strerror})") from None
    with opener:
        for rel, explicit in expansion.entries:
            cf = read_context_file(
                root, rel, explicit=explicit, max_file_bytes=limits.max_file_bytes, opener=opener
            )
            if isinstance(cf, Skipped):
                skipped.append(cf)
                continue
            if cf is None:
                continue
            total += cf.size
            if total > limits.max_context_bytes:
                raise InputError(
                    f"context total reaches {total} bytes at {rel}, over "
                    f"{name_of('max_context_bytes')} {limits.max_context_bytes}"
                )
            files.append(cf)
    read = {f.path for f in files}
    left_out_of = {**expansion.left_out_of, **{s.path: s for s in skipped}}
    for spec, kind, listed in expansion.groups:
        if not any(rel in read for rel in listed):
            _refuse_empty_group(spec, kind, listed, left_out_of)
    _log_left_out(skipped)
    return Gathered(files, skipped)


def _refuse_empty_group(
    spec: str, kind: str, listed: Sequence[str], left_out_of: dict[str, Skipped]
) -> None:
    """A folder or glob of which nothing is sent is refused, saying why: what it lists was
    left out (naming the first, and its reason), or it lists nothing git would."""
    left = list(dict.fromkeys(left_out_of[rel] for rel in listed if rel in left_out_of))
    verb = "holds" if kind == "folder" else "matches"
    if not left:
        raise InputError(f"context {kind} {spec}: {verb} no file (after git's ignore rules)")
    more = f", and {len(left) - 1} more" if len(left) > 1 else ""
    raise InputError(
        f"context {kind} {spec}: nothing it {verb} can be sent "
        f"({left[0].path}: {left[0].reason}{more})",
        hint="name a file to send it" if left[0].own else "",
    )


def _log_left_out(skipped: Sequence[Skipped]) -> None:
    """Say what was left out: a line for each file left out for safety (a link into git's
    data, to an ignored file), and one line summing up everything by kind -- a warning when
    something could not be sent, else (only the tool's own outputs) information."""
    if not skipped:
        return
    for s in skipped:
        if s.kind in WARNED_KINDS:
            log.warning("skipped %s: %s", s.path, s.reason)
    counts: dict[str, int] = {}
    for s in skipped:
        counts[s.kind] = counts.get(s.kind, 0) + s.files
    kinds = sorted(counts.items(), key=lambda kv: -kv[1])  # stable: first seen first
    summary = ", ".join(f"{n} {kind}" for kind, n in kinds)
    total = plural(sum(counts.values()), "file")
    level = logging.INFO if all(s.own for s in skipped) else logging.WARNING
    log.log(level, "left out %s (%s); --dry-run lists them", total, summary)
