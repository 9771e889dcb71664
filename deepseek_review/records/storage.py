"""Writing files so that nothing is ever half-written or overwritten.

Every file goes to a temporary file in the same folder, is fsynced, then *linked* to its final
name. ``os.link`` fails when the name exists, so an existing answer or receipt can never be
replaced, even by a concurrent writer; a crash leaves at most a ``.deepseek-review-*.tmp``
file, never a truncated answer or receipt under its real name.
"""

from __future__ import annotations

import contextlib
import errno
import functools
import os
import signal
import threading
import time
from pathlib import Path

from deepseek_review.errors import ConfigError, OutputError
from deepseek_review.options.option import CRASH_ENV
from deepseek_review.options.table import name_of

TEMP_PREFIX = ".deepseek-review-"
TEMP_SUFFIX = ".tmp"

#: Permissions of answers, receipts and reports: the user's umask applies, and never wider.
PUBLIC_MODE = 0o644
#: Permissions of the files that hold the prompt and what the model thought about the context
#: (request records, kept reasoning): the owner's only, whatever the umask. Share them with
#: ``chmod`` if you mean to.
PRIVATE_MODE = 0o600
#: Permissions of the folders the tool creates: writable by the owner only, whatever the umask.
FOLDER_MODE = 0o755

# --------------------------------------------------------------------------- test hook

#: Where a crash test may kill the process (``DEEPSEEK_REVIEW_CRASH_AT``): half of a temporary
#: file written; a temporary file written, before fsync and link; a segment's answer linked,
#: before its request record; the record written, before the receipt; the receipt written;
#: half of the batch report's temporary file written.
CRASH_POINTS = (
    "mid-temp-write",
    "after-temp-write",
    "after-answer",
    "after-record",
    "after-receipt",
    "mid-report-write",
)


def _token(nbytes: int) -> str:
    """What ``secrets.token_hex`` returns: ``os.urandom(n).hex()``."""
    return os.urandom(nbytes).hex()


@functools.lru_cache(maxsize=8)
def _crash_at(value: str) -> tuple[str, int] | None:
    if not value:
        return None
    point, _, n = value.partition(":")
    if point not in CRASH_POINTS or not (n or "1").isdigit() or int(n or "1") < 1:
        raise ConfigError(
            f"{CRASH_ENV}={value!r}: expected <point>[:<n>], n >= 1, point one of "
            f"{', '.join(CRASH_POINTS)} (a test hook: unset it)"
        )
    return point, int(n or "1")


def crash_at() -> tuple[str, int] | None:
    """TEST HOOK, for the crash suite only (tests/records/test_crashes.py).

    ``DEEPSEEK_REVIEW_CRASH_AT=<point>:<n>`` makes the process SIGKILL itself the n-th time it
    reaches ``<point>`` (one of :data:`CRASH_POINTS`), so the tests can land a kill inside the
    write windows deterministically. Read where a crash point is reached, never at import: a
    command that writes nothing is not affected by it at all, and an invalid value is a
    :class:`ConfigError` only for a command that writes (raised at its first temporary file,
    before anything is written).
    """
    return _crash_at(os.environ.get(CRASH_ENV, ""))


_crash_lock = threading.Lock()
_crash_seen = 0


def crash_point(point: str) -> None:
    """TEST HOOK: SIGKILL this process at the n-th occurrence of ``point`` (see crash_at)."""
    global _crash_seen
    at = crash_at()
    if at is None or at[0] != point:
        return
    with _crash_lock:
        _crash_seen += 1
        if _crash_seen == at[1]:
            os.kill(os.getpid(), getattr(signal, "SIGKILL", signal.SIGTERM))
            time.sleep(60)  # SIGKILL is not handled: nothing after this line runs


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _write_temp(
    folder: Path,
    data: bytes,
    *,
    mode: int,
    mid_point: str | None,
    after_point: str | None,
    sync: bool = True,
) -> Path:
    """``data`` in a new temporary file in ``folder``, fsynced; removed again on failure.

    Created with ``mode`` less the umask, so the final name (linked or renamed to it) never
    exists with wider permissions. ``mid_point``/``after_point`` name the crash tests' hook
    points (see ``crash_at``); no ``mid_point``: a file outside the write sequence (a cache),
    which the hook never stops at.
    """
    # An invalid test-hook value fails here, before any file exists.
    crashing = crash_at() if mid_point is not None else None
    tmp = folder / f"{TEMP_PREFIX}{_token(8)}{TEMP_SUFFIX}"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        try:
            view = memoryview(data)
            if crashing:
                half = len(view) // 2
                while len(view) > half:
                    view = view[os.write(fd, view[: len(view) - half]) :]
                crash_point(mid_point or "")
            while view:
                view = view[os.write(fd, view) :]
            if crashing and after_point:
                crash_point(after_point)
            if sync:
                os.fsync(fd)
        finally:
            os.close(fd)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return tmp


def write_new(path: Path, data: bytes, *, mode: int = PUBLIC_MODE) -> None:
    """Create ``path`` holding ``data``, atomically; raise FileExistsError if it exists."""
    folder = path.parent
    tmp = _write_temp(
        folder, data, mode=mode, mid_point="mid-temp-write", after_point="after-temp-write"
    )
    try:
        try:
            os.link(tmp, path)
        except FileExistsError:
            raise
        except OSError as exc:
            # Filesystems without hard links: fall back to an exclusive rename.
            if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV):
                raise
            if path.exists():
                raise FileExistsError(errno.EEXIST, "File exists", str(path)) from None
            os.rename(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
    _fsync_dir(folder)


def write_replacing(
    path: Path,
    data: bytes,
    *,
    mode: int = PUBLIC_MODE,
    crash: str | None = "mid-report-write",
    sync: bool = True,
) -> None:
    """Write ``path`` atomically, replacing it if it exists: only for files meant to be
    rewritten (a batch report, a cache), never for answers, receipts or records. ``crash``:
    the crash hook's point (None: a cache, outside the write sequence the crash suite tests).
    ``sync=False``: a cache, rebuilt if a crash loses it, written without waiting for the disk
    (still whole or not at all)."""
    folder = path.parent
    tmp = _write_temp(folder, data, mode=mode, mid_point=crash, after_point=None, sync=sync)
    try:
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    if sync:
        _fsync_dir(folder)


def write_output(path: Path, data: bytes, *, shown: str, mode: int = PUBLIC_MODE) -> None:
    """:func:`write_new` with failures as :class:`OutputError` naming ``shown``."""
    try:
        write_new(path, data, mode=mode)
    except FileExistsError:
        raise OutputError(f"{shown}: already exists; refusing to overwrite it") from None
    except OSError as exc:
        raise OutputError(f"{shown}: cannot write ({exc.strerror or exc})") from None


def ensure_dir(path: Path, *, shown: str) -> None:
    """Create ``path`` and the folders missing above it, each :data:`FOLDER_MODE` less the
    umask (``Path.mkdir(parents=True)`` makes the parents 0777 less the umask: under umask
    000, folders anyone could write reviews into); folders that exist are left as they are."""
    missing = []
    here = path
    while not os.path.lexists(here) and here.parent != here:
        missing.append(here)
        here = here.parent
    try:
        for folder in reversed(missing):
            try:
                os.mkdir(folder, FOLDER_MODE)
            except FileExistsError:
                if not folder.is_dir():  # a file took the name meanwhile
                    raise
    except OSError as exc:
        raise OutputError(f"{shown}: cannot create folder ({exc.strerror or exc})") from None
    if not path.is_dir():
        raise OutputError(f"{shown}: not a folder")


def check_writable_dir(
    path: Path, *, shown: str, root: Path | None = None, longest: str = ""
) -> None:
    """Find out before anything is paid for whether files can be written in ``path``.

    The nearest folder that exists (``path``, or the ancestor the missing ones would be
    created in) must be a folder in which a probe file can be created; the probe is removed
    at once and no folder is created, so a plan or a dry run leaves nothing behind. The probe
    really writes rather than asking ``os.access``, which cannot see an immutable folder and
    answers yes to root. Its name is as long as ``longest`` (the longest name the review will
    write), so a name the file system refuses is found now too. ``shown`` names ``path`` in
    errors; ``root`` makes ancestors relative.
    """
    here = path
    while not here.exists() and not here.is_symlink() and here.parent != here:
        here = here.parent
    if here == path:
        named = "it"
    else:
        try:
            named = (here.relative_to(root).as_posix() or ".") if root else here.name
        except ValueError:
            named = here.name
    if not here.is_dir():
        raise OutputError(
            f"{shown}: not a folder" if here == path else f"{shown}: {named} is not a folder"
        )
    name = f"{TEMP_PREFIX}probe-{_token(6)}"
    pad = len(longest.encode("utf-8")) - len(name) - len(TEMP_SUFFIX)
    probe = here / f"{name}{'x' * max(0, pad)}{TEMP_SUFFIX}"
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise OutputError(
                f"{shown}: file names such as {longest} are too long for this file system",
                hint=f"use a shorter {name_of('topic')} (the model's name is part of every "
                "file name)",
            ) from None
        verb = "cannot write in it" if here == path else f"cannot create it in {named}"
        raise OutputError(f"{shown}: {verb} ({exc.strerror or exc})") from None
    os.close(fd)
    with contextlib.suppress(OSError):
        os.unlink(probe)


def stale_temp_files(folder: Path) -> list[Path]:
    """Temporary files a killed writer left behind (never a real answer or receipt)."""
    try:
        return sorted(folder.glob(f"{TEMP_PREFIX}*{TEMP_SUFFIX}"))
    except OSError:
        return []
