"""What servers reported for earlier prompts, remembered in the user's cache folder.

After each answer that reports usage, the prompt's bytes, its messages and the prompt tokens
the server counted are kept per endpoint and model (:func:`remember`), and a later plan for the
same endpoint and model estimates from them (:func:`counter_for`, :class:`chat.tokens.Counter`).

The file is ``$XDG_CACHE_HOME/deepseek-review/token-calibration.json`` (``~/.cache/...`` when
that is unset or not absolute), the owner's only (it names the endpoints and models used),
rewritten atomically under a lock file (not fsynced: a cache lost in a crash is rebuilt),
bounded (:data:`MAX_SAMPLES` per endpoint and model, :data:`MAX_ENTRIES` of those, the least
recently used dropped). It holds no key or secret: an
endpoint is kept as :func:`chat.endpoint.safe_url` gives it (no userinfo, no query). A cache
that is missing, unreadable, corrupt or unwritable is ignored (a debug log line): it only ever
makes estimates better, never a run fail.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepseek_review.chat.endpoint import safe_url
from deepseek_review.chat.native import openai_url
from deepseek_review.chat.tokens import Counter, Sample
from deepseek_review.records.storage import PRIVATE_MODE, write_replacing
from deepseek_review.util import safejson
from deepseek_review.util.logs import log

if TYPE_CHECKING:
    from deepseek_review.chat.client import ChatClient

FILE_NAME = "token-calibration.json"
FORMAT = "deepseek-review token calibration"
VERSION = 1
#: Samples kept per endpoint and model: the latest.
MAX_SAMPLES = 64
#: Endpoint and model pairs kept: the most recently updated.
MAX_ENTRIES = 64
#: A bigger file is not read (a full one is about 100 KiB).
MAX_FILE_BYTES = 1024 * 1024
FOLDER_MODE = 0o700

_loaded: dict[Path, tuple[tuple[int, int, int], dict[str, Any]]] = {}
"""The file as last read, by path, with its (inode, size, mtime): a batch plans hundreds of
entries and reads it once."""
_lock = threading.Lock()


def cache_folder(env: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/deepseek-review``, or ``~/.cache/deepseek-review`` (the XDG base
    directory rule: a relative ``XDG_CACHE_HOME`` is ignored)."""
    env = os.environ if env is None else env
    base = env.get("XDG_CACHE_HOME", "")
    if not base or not os.path.isabs(base):
        home = env.get("HOME") or str(Path.home())
        base = os.path.join(home, ".cache")
    return Path(base) / "deepseek-review"


def cache_file(env: Mapping[str, str] | None = None) -> Path:
    return cache_folder(env) / FILE_NAME


def key(url: str, model: str) -> tuple[str, str]:
    """What samples are kept under: the endpoint without userinfo or query (as its OpenAI
    chat URL: Ollama's native API counts the same prompt alike), and the model."""
    return openai_url(safe_url(url)), model


def load(url: str, model: str, env: Mapping[str, str] | None = None) -> list[Sample]:
    """The samples remembered for ``url`` and ``model`` ([] when none, or the cache cannot be
    read)."""
    data = _read(cache_file(env))
    endpoint, name = key(url, model)
    for entry in data["entries"]:
        if entry["endpoint"] == endpoint and entry["model"] == name:
            return [Sample(*s) for s in entry["samples"]]
    return []


def counter_for(
    url: str,
    model: str,
    *,
    server: str | None = None,
    client: ChatClient | None = None,
    env: Mapping[str, str] | None = None,
) -> Counter:
    """The :class:`chat.tokens.Counter` for ``model`` at ``url``: calibrated from what it
    reported before, and asking its tokenizer when a ``client`` is given and the ``server``
    kind has one (:mod:`chat.tokenize`)."""
    samples = load(url, model, env)
    if client is None or server is None:
        return Counter.calibrated(samples)
    from deepseek_review.chat import tokenize

    if not tokenize.asks(server):
        return Counter.calibrated(samples)
    bound = client

    def ask(messages: Any) -> tuple[int, int | None] | None:
        return tokenize.server_count(bound, server, model, messages)

    return Counter.calibrated(samples, server=ask)


def remember(url: str, model: str, sample: Sample, env: Mapping[str, str] | None = None) -> None:
    """Keep ``sample`` for ``url`` and ``model`` (when usable: :attr:`Sample.usable`); any
    failure is logged at debug level and otherwise ignored."""
    if not sample.usable:
        return
    path = cache_file(env)
    try:
        with _locked(path.parent):
            data = dict(_read(path))
            _add(data, key(url, model), sample)
            write_replacing(path, _encode(data), mode=PRIVATE_MODE, crash=None, sync=False)
            st = path.stat()  # what was written is what the next reader gets: not read again
            with _lock:
                _loaded[path] = ((st.st_ino, st.st_size, st.st_mtime_ns), data)
    except (OSError, ValueError) as exc:
        log.debug("token calibration not saved to %s: %s", path, exc)


# --------------------------------------------------------------------------- the file


def _empty() -> dict[str, Any]:
    return {"format": FORMAT, "version": VERSION, "entries": []}


def _read(path: Path) -> dict[str, Any]:
    """The cache's content, checked; an empty one when it is missing, unreadable or not ours."""
    try:
        st = path.stat()
    except OSError:
        return _empty()
    stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
    with _lock:
        known = _loaded.get(path)
    if known is not None and known[0] == stamp:
        return known[1]
    try:
        raw = safejson.read_file(path, max_bytes=MAX_FILE_BYTES)
        data = _checked(safejson.loads(raw, what=str(path), max_bytes=MAX_FILE_BYTES))
    except (OSError, ValueError) as exc:
        log.debug("token calibration cache %s ignored: %s", path, exc)
        return _empty()
    with _lock:
        _loaded[path] = (stamp, data)
    return data


def _checked(value: object) -> dict[str, Any]:
    """The file's content when it has our shape; entries or samples of another shape dropped."""
    if not isinstance(value, dict) or value.get("format") != FORMAT:
        raise ValueError("not a token calibration file")
    if value.get("version") != VERSION:
        raise ValueError(f"version {value.get('version')!r}, not {VERSION}")
    entries = value.get("entries")
    kept = []
    for entry in entries if isinstance(entries, list) else ():
        if not isinstance(entry, dict):
            continue
        endpoint, model, updated = entry.get("endpoint"), entry.get("model"), entry.get("updated")
        samples = entry.get("samples")
        if not (isinstance(endpoint, str) and isinstance(model, str)):
            continue
        if not isinstance(samples, list):
            continue
        good = [s for s in samples if _sample_shape(s)]
        stamp = updated if isinstance(updated, int) and not isinstance(updated, bool) else 0
        kept.append(
            {"endpoint": endpoint, "model": model, "updated": stamp, "samples": good[-MAX_SAMPLES:]}
        )
    return {"format": FORMAT, "version": VERSION, "entries": kept[-MAX_ENTRIES:]}


def _sample_shape(s: object) -> bool:
    return (
        isinstance(s, list)
        and len(s) == 3
        and all(isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in s)
    )


def _add(data: dict[str, Any], where: tuple[str, str], sample: Sample) -> None:
    entries: list[dict[str, Any]] = [dict(e) for e in data["entries"]]
    endpoint, model = where
    found = next((e for e in entries if e["endpoint"] == endpoint and e["model"] == model), None)
    if found is None:
        found = {"endpoint": endpoint, "model": model, "updated": 0, "samples": []}
        entries.append(found)
    found["samples"] = [
        *found["samples"],
        [sample.text_bytes, sample.messages, sample.prompt_tokens],
    ][-MAX_SAMPLES:]
    found["updated"] = time.time_ns()
    entries.sort(key=lambda e: e["updated"])
    data["entries"] = entries[-MAX_ENTRIES:]


def _encode(data: dict[str, Any]) -> bytes:
    """Compact: the file is rewritten after every answer, and ``indent`` would take json's
    pure-Python encoder (several times slower for a full cache)."""
    import json

    return (json.dumps(data, sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")


@contextlib.contextmanager
def _locked(folder: Path) -> Iterator[None]:
    """The cache folder created (the owner's only) and its lock file held: writers of other
    processes wait, so none loses another's sample."""
    folder.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
    fd = os.open(folder / (FILE_NAME + ".lock"), os.O_RDWR | os.O_CREAT, PRIVATE_MODE)
    try:
        try:
            import fcntl
        except ImportError:  # no POSIX locks: the atomic replace still never half-writes
            yield
            return
        fcntl.flock(fd, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
