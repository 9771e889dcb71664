"""Reading the repository files receipts and records name: never outside the root, each once."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Literal, NamedTuple

from deepseek_review.errors import InputError
from deepseek_review.git.runner import resolve_inside
from deepseek_review.records.canonical import sha256_tag
from deepseek_review.util.safejson import MAX_FILE_BYTES, read_fd


class Problem(NamedTuple):
    """Why a file named by a receipt or record could not be used."""

    kind: Literal["missing", "outside", "not_file", "unreadable"]
    detail: str


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
_FAST_PATHS = os.sep == "/" and _NOFOLLOW != 0


def _clean(rel: str) -> bool:
    """A plain relative POSIX path (no ``.``, ``..``, empty part, leading ``/`` or NUL).

    Substring tests, not a regex: verify asks this of every file it reads.
    ``tests/verification/test_verify_schema.py`` holds them to ``resolve_inside``.
    """
    return not (
        "\x00" in rel
        or "//" in rel
        or "/./" in rel
        or "/../" in rel
        or rel.startswith(("/", "./", "../"))
        or rel.endswith(("/", "/.", "/.."))
        or rel in ("", ".", "..")
    )


def _read_fd(path: str, nofollow: bool) -> bytes:
    # O_NONBLOCK: a FIFO named by a hostile receipt must not hang us (then refused below).
    fd = os.open(path, _OPEN_FLAGS | (_NOFOLLOW if nofollow else 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "not a regular file")
        return read_fd(fd, st.st_size, path, MAX_FILE_BYTES)  # sized before it is read
    finally:
        os.close(fd)


class RepoFiles:
    """Every file verify reads: read at most once, hashed at most once, never outside root.

    A clean path ``dir/name`` is located by resolving ``dir`` once with
    :func:`resolve_inside` (cached) and opening ``name`` with ``O_NOFOLLOW``; a final
    component that is a symlink, and any path that is not clean, goes through
    :func:`resolve_inside` whole. So the answer is always that of ``resolve_inside``.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._dirs: dict[str, str | None] = {"": str(root)}
        self._reads: dict[str, bytes | Problem] = {}
        self._digests: dict[str, str] = {}
        self._kinds: dict[str, Problem | None] = {}

    def _dir(self, rel_dir: str) -> str | None:
        if rel_dir in self._dirs:
            return self._dirs[rel_dir]
        try:
            got: str | None = str(resolve_inside(self.root, rel_dir)[0])
        except InputError:
            got = None
        self._dirs[rel_dir] = got
        return got

    def _locate(self, rel: str, what: str) -> tuple[str, bool]:
        """The path to open, and whether its last component must not be followed."""
        if _FAST_PATHS and _clean(rel):
            head, _, name = rel.rpartition("/")
            base = self._dir(head)
            if base is not None:
                return f"{base}/{name}", True
        # Not clean, or its folder leads out: resolve_inside decides (and names the problem).
        return str(resolve_inside(self.root, rel, what=what)[0]), False

    def read(self, rel: str, what: str = "path", *, keep: bool = True) -> bytes | Problem:
        """The bytes of ``rel``, or why not; kept for later calls unless ``keep`` is false."""
        got = self._reads.get(rel)
        if got is None:
            got = self._read(rel, what)
            if keep or isinstance(got, Problem):
                self._reads[rel] = got
        return got

    def read_once(self, rel: str, what: str = "path") -> bytes | Problem:
        """For files read only once (receipts, records): nothing is kept."""
        got = self._reads.get(rel)
        return self._read(rel, what) if got is None else got

    def _read(self, rel: str, what: str) -> bytes | Problem:
        try:
            path, nofollow = self._locate(rel, what)
            try:
                return _read_fd(path, nofollow)
            except OSError as exc:
                if not (nofollow and exc.errno == errno.ELOOP):
                    raise
            # The last component is a symlink: follow it only where it stays inside.
            return _read_fd(str(resolve_inside(self.root, rel, what=what)[0]), False)
        except InputError as exc:
            return Problem("outside", exc.message)
        except FileNotFoundError:
            return Problem("missing", f"{rel} does not exist")
        except (IsADirectoryError, NotADirectoryError):
            return Problem("not_file", f"{rel} is not a file")
        except OSError as exc:
            return Problem("unreadable", f"{rel}: cannot read ({exc.strerror or exc})")

    def digest(self, rel: str, data: bytes) -> str:
        """The ``sha256:`` of ``rel``, whose bytes are ``data`` (hashed once per run)."""
        got = self._digests.get(rel)
        if got is None:
            got = self._digests[rel] = sha256_tag(data)
        return got

    def hash(self, rel: str, what: str = "path", *, keep: bool = True) -> str | Problem:
        """The ``sha256:`` of ``rel``, or why it cannot be had."""
        got = self._digests.get(rel)
        if got is not None:
            return got
        data = self.read(rel, what, keep=keep)
        return data if isinstance(data, Problem) else self.digest(rel, data)

    def known_file(self, rel: str) -> None:
        """Record that ``rel`` was found a regular file inside the root (by a worker)."""
        self._kinds[rel] = None

    def file_problem(self, rel: str, what: str = "path") -> Problem | None:
        """None when ``rel`` is a regular file inside the root (not read, only looked at)."""
        if rel in self._reads:
            got = self._reads[rel]
            return got if isinstance(got, Problem) else None
        if rel not in self._kinds:
            self._kinds[rel] = self._file_problem(rel, what)
        return self._kinds[rel]

    def _file_problem(self, rel: str, what: str) -> Problem | None:
        try:
            path, nofollow = self._locate(rel, what)
            st = os.lstat(path) if nofollow else os.stat(path)
            if nofollow and stat.S_ISLNK(st.st_mode):
                st = os.stat(resolve_inside(self.root, rel, what=what)[0])
        except InputError as exc:
            return Problem("outside", exc.message)
        except (FileNotFoundError, NotADirectoryError):
            return Problem("missing", f"{rel} does not exist")
        except OSError as exc:
            return Problem("unreadable", f"{rel}: cannot look at it ({exc.strerror or exc})")
        if not stat.S_ISREG(st.st_mode):
            return Problem("not_file", f"{rel} is not a file")
        return None
