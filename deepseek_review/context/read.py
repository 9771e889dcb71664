"""Reading one context file from a possibly hostile repository, refusing what cannot be sent.

Files are opened one folder at a time without following a symlink (:class:`Opener`), so a
path swapped after a check cannot lead elsewhere; a symlink is resolved and checked before
anything is opened there (:func:`context.places.why_not_context`). A file named explicitly
that cannot be sent is refused; one a folder or glob listed is left out
(:class:`deepseek_review.context.types.Skipped`).
"""

from __future__ import annotations

import codecs
import errno
import hashlib
import os
import stat
from collections.abc import Generator, Iterator, Sequence
from pathlib import Path

from deepseek_review.context.places import git_data, layout_of, why_not_context
from deepseek_review.context.types import (
    GIT_DATA,
    KIND_BAD_NAME,
    KIND_BINARY,
    KIND_GIT_DATA,
    KIND_NOT_UTF8,
    KIND_TOO_BIG,
    KIND_UNREADABLE,
    UNSAFE_NAME,
    ContextFile,
    Skipped,
)
from deepseek_review.errors import InputError
from deepseek_review.git.runner import has_unsafe_chars, under_dot_git
from deepseek_review.options.table import name_of
from deepseek_review.records.canonical import sha256_tag

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
_OPEN_FLAGS |= getattr(os, "O_CLOEXEC", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_CLOEXEC", 0)
_WALKS = os.open in os.supports_dir_fd and hasattr(os, "O_NOFOLLOW")
#: Last components :meth:`Opener.open` never takes as a file name.
_NOT_NAMES = frozenset({"", ".", ".."})


class Opener:
    """Opens files below ``root`` one folder at a time, never following a symlink.

    Each folder of a path is opened relative to its parent, and the file relative to its
    folder, all with ``O_NOFOLLOW``: a path through a symlink -- or a file or folder swapped
    for one after any check (the check-then-open race) -- fails with ``ELOOP`` instead of
    leading elsewhere, so what is opened is exactly ``root/rel``. The folders of the last
    path stay open (git lists a folder's files together), so a folder is opened once for all
    its files.
    Where ``dir_fd`` is not supported, only the last component is protected.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self.layout = layout_of(root)
        self._prefix = self.layout.prefix
        self._root_fd = os.open(root, _DIR_FLAGS) if _WALKS else -1
        self._dirs: list[tuple[str, int]] = []
        self._folder: str | None = None
        """The folder part of the last path opened (its checks passed, its folders open)."""
        self._folder_fd = -1

    def open(self, rel: str) -> int:
        """A descriptor of ``root/rel`` (``O_NONBLOCK``: a FIFO does not block the open)."""
        cut = rel.rfind("/") + 1
        folder, name = rel[:cut], rel[cut:]  # the folder with its "/", or ""
        if folder == self._folder and name not in _NOT_NAMES:
            # The next file of the same folder (git lists a folder's files together): the
            # folder's path was checked and opened for the last one; only the name is new.
            return os.open(name, _OPEN_FLAGS, dir_fd=self._folder_fd)
        self._folder = None
        wrapped = f"/{rel}/"
        if "//" in wrapped or "/./" in wrapped or "/../" in wrapped:
            raise OSError(errno.EINVAL, "not a plain path below the root", rel)
        if not _WALKS:
            return os.open(self._prefix + rel, _OPEN_FLAGS)
        fd = self._root_fd
        for i, part in enumerate(folder[:-1].split("/") if folder else ()):
            if i < len(self._dirs):
                if self._dirs[i][0] == part:
                    fd = self._dirs[i][1]
                    continue
                self._close_from(i)
            fd = os.open(part, _DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            self._dirs.append((part, fd))
        self._folder, self._folder_fd = folder, fd
        return os.open(name, _OPEN_FLAGS, dir_fd=fd)

    def _close_from(self, i: int) -> None:
        self._folder = None
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
    root, layout = opener.root, opener.layout
    try:
        try:
            fd = opener.open(rel)
            # Not through a symlink; but git lists the files of a --separate-git-dir.
            where = git_data(layout, layout.prefix + rel, rel) if layout.git_dirs else None
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


#: Files are read this much at a time; a larger one is decoded piece by piece, so no
#: file-sized bytes object is made and dropped: the allocator would keep the pages it freed
#: resident next to the text, and a large context would cost its size twice more.
PIECE = 1 << 16


#: A file's text, ``sha256:`` tag and size in bytes.
_Text = tuple[str, str, int]


def _read_text(
    fd: int, st: os.stat_result, rel: str, max_file_bytes: int, *, explicit: bool
) -> _Text | Skipped | None:
    """A file's text, hash and size; binary, non-UTF-8 or too big data refused or left out."""
    if not stat.S_ISREG(st.st_mode):
        if explicit:
            raise InputError(f"context file {rel}: not a regular file")
        return None  # listed FIFOs, sockets, devices, nested repositories: not files
    if st.st_size > max_file_bytes:
        why = f"{st.st_size} bytes is over {name_of('max_file_bytes')} {max_file_bytes}"
        return _refuse_or_skip(rel, why, KIND_TOO_BIG, explicit=explicit)
    first = os.read(fd, min(st.st_size + 1, PIECE))
    if len(first) <= st.st_size < PIECE:  # read whole (a regular file reads short at its end)
        if b"\0" not in first:
            try:
                return first.decode("utf-8"), sha256_tag(first), len(first)
            except UnicodeDecodeError:
                pass
        return _unsendable(first, rel, explicit=explicit)
    return _read_pieces(fd, first, st.st_size, rel, max_file_bytes, explicit=explicit)


def _read_pieces(
    fd: int, first: bytes, expected: int, rel: str, max_file_bytes: int, *, explicit: bool
) -> _Text | Skipped:
    """The rest of a large (or growing) file, decoded as it is read; never past the limit.
    What is refused is as for the whole bytes: binary first, then the first invalid byte."""
    hasher, decoder = hashlib.sha256(), codecs.getincrementaldecoder("utf-8")()
    pieces: list[str] = []
    size, nul, bad = 0, -1, -1
    chunk, want = first, min(expected + 1, PIECE)
    while True:
        if size + len(chunk) > max_file_bytes:
            why = f"over {name_of('max_file_bytes')} {max_file_bytes}"
            return _refuse_or_skip(rel, why, KIND_TOO_BIG, explicit=explicit)
        hasher.update(chunk)
        if nul == -1 and (at := chunk.find(b"\0")) != -1:
            nul = size + at
        if nul == -1 and bad == -1:
            pending = len(decoder.getstate()[0])
            try:
                pieces.append(decoder.decode(chunk))
            except UnicodeDecodeError as exc:
                bad = size - pending + exc.start
        size += len(chunk)
        if len(chunk) < want:  # a regular file reads short only at its end
            break
        want = min(expected + 1 - size, PIECE) if size <= expected else PIECE
        chunk = os.read(fd, want)
    if nul == -1 and bad == -1:
        pending = len(decoder.getstate()[0])
        try:
            decoder.decode(b"", final=True)
        except UnicodeDecodeError as exc:
            bad = size - pending + exc.start
    if nul != -1:
        why = f"binary (NUL byte at offset {nul})"
        return _refuse_or_skip(rel, why, KIND_BINARY, explicit=explicit)
    if bad != -1:
        why = f"not UTF-8 (invalid byte at offset {bad})"
        return _refuse_or_skip(rel, why, KIND_NOT_UTF8, explicit=explicit)
    return "".join(pieces), "sha256:" + hasher.hexdigest(), size


def _unsendable(data: bytes, rel: str, *, explicit: bool) -> Skipped:
    """Why a file's bytes cannot be sent (they hold a NUL byte, or are not UTF-8): refused
    when named explicitly, else left out."""
    nul = data.find(b"\0")
    if nul != -1:
        why = f"binary (NUL byte at offset {nul})"
        return _refuse_or_skip(rel, why, KIND_BINARY, explicit=explicit)
    try:
        data.decode("utf-8")
    except UnicodeDecodeError as exc:
        why = f"not UTF-8 (invalid byte at offset {exc.start})"
        return _refuse_or_skip(rel, why, KIND_NOT_UTF8, explicit=explicit)
    raise AssertionError("called only for bytes that cannot be sent")


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
    return _check_name(rel, explicit) or _read(opener, rel, explicit, max_file_bytes)


def read_entries(
    opener: Opener, entries: Sequence[tuple[str, bool]], max_file_bytes: int
) -> Iterator[ContextFile | Skipped | None]:
    """:func:`read_context_file` of each (path, named explicitly) in turn, through one
    ``opener``. The names are checked in one pass over them all when they are all printable
    ASCII (a 20,000-file folder), else each before its file is read, as one at a time."""
    rels = [rel for rel, _ in entries]
    joined = "/".join(rels)
    plain = joined.isascii() and not has_unsafe_chars(joined)
    # Listed files take the quick path (:func:`_quick`) unless they may be in git's data.
    full = _maybe_git_data(rels, plain) if not opener.layout.git_dirs else None
    for rel, explicit in entries:
        bad_name = None if plain else _check_name(rel, explicit)
        if bad_name is not None:
            yield bad_name
            continue
        quick = not explicit and full is not None and rel not in full
        got = _quick(opener, rel, max_file_bytes) if quick else None
        yield _read(opener, rel, explicit, max_file_bytes) if got is None else got


def _maybe_git_data(rels: list[str], plain: bool) -> set[str]:
    """Which of ``rels`` may be inside a ``.git`` folder (:func:`git.runner.under_dot_git` says
    which are): those with ``.git`` in their name in any case, found in one pass when all
    are plain ASCII (lower-casing keeps every character in its place)."""
    if not plain:
        return {rel for rel in rels if ".git" in rel.lower()}
    joined = "\n".join(rels)
    lowered = joined.lower()
    found: set[str] = set()
    at = lowered.find(".git")
    while at != -1:
        start, end = lowered.rfind("\n", 0, at) + 1, lowered.find("\n", at)
        end = len(lowered) if end == -1 else end
        found.add(joined[start:end])
        at = lowered.find(".git", end)
    return found


def _quick(opener: Opener, rel: str, max_file_bytes: int) -> ContextFile | None:
    """A listed file read in one go when it is what nearly every file is: a regular file
    under :data:`PIECE` bytes and ``max_file_bytes``, UTF-8 without a NUL byte, not in git's
    data (the caller knows). Anything else (or any error) is None, and :func:`_read` reads it
    again the full way, with its checks and its words: this only saves the common case's calls."""
    try:
        fd = opener.open(rel)
    except OSError:
        return None
    got = None
    try:
        st = os.fstat(fd)
        size = st.st_size
        if size < PIECE and size <= max_file_bytes and stat.S_ISREG(st.st_mode):
            data = os.read(fd, size + 1)  # the whole file: a regular file reads short at its end
            if len(data) <= size and b"\0" not in data:
                tag = "sha256:" + hashlib.sha256(data).hexdigest()
                # tuple.__new__: the named tuple without its Python-level __new__ (equal)
                got = _new(ContextFile, (rel, data.decode("utf-8"), tag, len(data), None, None))
    except (OSError, UnicodeDecodeError):
        got = None
    try:
        os.close(fd)
    except OSError:
        return None
    return got


_new = tuple.__new__


def _check_name(rel: str, explicit: bool) -> Skipped | None:
    """A name that could fake the framing, or that is not UTF-8: refused when named, left
    out with a warning when a folder or glob listed it (one bad name does not sink ``-c .``)."""
    if has_unsafe_chars(rel):
        if explicit:
            raise InputError(f"context file {rel!r}: {UNSAFE_NAME}")
        return Skipped(rel, UNSAFE_NAME, KIND_BAD_NAME)
    if not rel.isascii():
        try:
            rel.encode("utf-8")
        except UnicodeEncodeError:
            if explicit:
                raise InputError(f"context file {rel!r}: name is not valid UTF-8") from None
            return Skipped(rel, "name is not valid UTF-8", KIND_BAD_NAME)
    return None


def _read(
    opener: Opener, rel: str, explicit: bool, max_file_bytes: int
) -> ContextFile | Skipped | None:
    """:func:`read_context_file` once the name passed its checks."""
    try:
        opened = _open_checked(opener, rel, explicit=explicit)
        if not isinstance(opened, tuple):
            return opened
        fd, st = opened
        try:
            read = _read_text(fd, st, rel, max_file_bytes, explicit=explicit)
        finally:
            os.close(fd)
    except FileNotFoundError:
        raise InputError(f"context file {rel}: no such file") from None
    except IsADirectoryError:
        raise InputError(f"context file {rel}: not a regular file") from None
    except OSError as exc:
        why = f"cannot read ({exc.strerror})"
        return _refuse_or_skip(rel, why, KIND_UNREADABLE, explicit=explicit)
    if not isinstance(read, tuple):
        return read
    text, sha256, size = read
    if explicit and not size:
        raise InputError(f"context file {rel}: is empty, nothing to review")
    return ContextFile(rel, text, sha256, size)


#: Listed files handed over at a time by :func:`read_runs`.
RUN = 128


def read_runs(
    opener: Opener, entries: Sequence[tuple[str, bool]], max_file_bytes: int
) -> Generator[list[ContextFile | Skipped | None], None, None]:
    """:func:`read_entries` in runs of consecutive results: listed files :data:`RUN` at a
    time, a file named explicitly alone, and only once what came before it was handed over
    (what is refused first is what one file at a time refuses first: a listed file is left
    out, never refused)."""
    reads = read_entries(opener, entries, max_file_bytes)
    run: list[ContextFile | Skipped | None] = []
    for _, explicit in entries:
        if explicit and run:
            yield run
            run = []
        run.append(next(reads))
        if explicit or len(run) >= RUN:
            yield run
            run = []
    if run:
        yield run
