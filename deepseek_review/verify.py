"""Verifying receipts (``deepseek-review verify``): five named checks per receipt.

``schema``
    The receipt is UTF-8 JSON (no duplicate keys, no NaN) that validates against the frozen
    schema with format checking. A receipt that fails it is not checked further.
``answer``
    The answer file exists inside the repository and its bytes hash to ``answer_sha256``.
``chain``
    A continuation's ``previous_answer_path`` exists, is the answer of exactly one valid
    receipt, and walking back leads to a primary without a loop; a primary names context
    files, a continuation none; no other receipt claims the same answer.
``context``
    Every ``context_files`` entry is a file under the repository root (missing: a warning,
    a failure with ``strict``; a path leading outside the root: always a failure).
``prompt``
    Where the request record ``<stem>.request.json`` exists, it must agree with the receipt
    and rebuild, from the repository, the exact request bytes whose hash is
    ``prompt_sha256``. A context file changed (or missing) since the review is named and is a
    warning (a failure with ``strict``); anything else that does not add up is a failure.
    Without a record (receipts from other emitters) the prompt is "not re-checkable": info.

Every path taken from a receipt or a record goes through :func:`repo.resolve_inside` (the
directories it names are resolved once and cached; a final component that is a symlink is
resolved in full), so no receipt can make verify read or hash a file outside the root.

Speed: 10,000 receipts should cost about what ``sha256sum`` takes over their answer files.
The schema is compiled once with fastjsonschema, which decides valid/invalid; jsonschema
(the authority, and slow to import) runs only on receipts the fast validator rejects, to
name the errors. Every file is read at most once per run and every hash taken once.
"""

from __future__ import annotations

import errno
import gc
import hashlib
import json
import os
import re
import stat
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .chain import RECORD_SUFFIX
from .errors import InputError
from .receipts import CONTINUATION, PRIMARY, RECEIPT_SUFFIX, fast_validators, schema_problems
from .repo import resolve_inside
from .request import RECORD_SCHEMA, rebuild_body, sha256_tag

#: The check names, in the order they run and are reported.
CHECKS = ("schema", "answer", "chain", "context", "prompt")

#: What ``verify`` searches without a PATH: ``run``'s default output folder
#: (``review.DEFAULT_OUTPUT_DIR``; not imported, to keep the HTTP client out of verify).
DEFAULT_FOLDER = "reviews"

REPORT_SCHEMA = "deepseek_review_verify_report_v1"

CheckStatus = Literal["ok", "warn", "fail", "info", "skip"]
ReceiptStatus = Literal["ok", "warn", "fail"]


@dataclass(frozen=True)
class CheckResult:
    """One check of one receipt. ``info`` and ``skip`` never fail a receipt."""

    name: str
    status: CheckStatus
    detail: str = ""

    def to_json(self) -> dict[str, str]:
        return {"name": self.name, "status": self.status, "detail": self.detail}


@dataclass(frozen=True)
class ReceiptReport:
    receipt_path: str
    status: ReceiptStatus
    checks: list[CheckResult]
    kind: Literal["primary", "continuation"] | None = None
    """None when the receipt failed ``schema``."""
    answer_path: str | None = None

    @property
    def failed(self) -> list[str]:
        return [c.name for c in self.checks if c.status == "fail"]

    @property
    def warnings(self) -> list[str]:
        return [c.name for c in self.checks if c.status == "warn"]

    def check(self, name: str) -> CheckResult:
        return next(c for c in self.checks if c.name == name)

    def to_json(self) -> dict[str, Any]:
        return {
            "receipt_path": self.receipt_path,
            "status": self.status,
            "kind": self.kind,
            "answer_path": self.answer_path,
            "failed": self.failed,
            "warnings": self.warnings,
            "checks": [c.to_json() for c in self.checks],
        }


@dataclass(frozen=True)
class VerifyReport:
    root: str
    strict: bool
    receipts: list[ReceiptReport]
    searched: list[str] = field(default_factory=list)
    """The PATHs as given (or the default folder), repo-relative."""

    @property
    def ok(self) -> bool:
        return all(r.status != "fail" for r in self.receipts)

    def count(self, status: ReceiptStatus) -> int:
        return sum(1 for r in self.receipts if r.status == status)

    @property
    def failed_checks(self) -> dict[str, int]:
        """How many receipts failed each check (check order)."""
        counts = dict.fromkeys(CHECKS, 0)
        for r in self.receipts:
            for name in r.failed:
                counts[name] += 1
        return {k: v for k, v in counts.items() if v}

    def to_json(self) -> dict[str, Any]:
        return {
            "report": REPORT_SCHEMA,
            "root": self.root,
            "strict": self.strict,
            "searched": self.searched,
            "ok": self.ok,
            "counts": {
                "receipts": len(self.receipts),
                "ok": self.count("ok"),
                "warn": self.count("warn"),
                "fail": self.count("fail"),
            },
            "failed_checks": self.failed_checks,
            "receipts": [r.to_json() for r in self.receipts],
        }


#: The passing results, made once (a run makes tens of thousands of them).
_OK = {
    PRIMARY: CheckResult("schema", "ok", PRIMARY),
    CONTINUATION: CheckResult("schema", "ok", CONTINUATION),
    "answer": CheckResult("answer", "ok", "hash matches"),
    "chain": CheckResult("chain", "ok", "leads back to its primary"),
    "chain-primary": CheckResult("chain", "ok", "primary"),
    "context-continuation": CheckResult("context", "ok", "continuation: none of its own"),
    "prompt": CheckResult("prompt", "ok", "request rebuilt byte for byte"),
}

_OK_BY_VALUE = {(c.name, c.status, c.detail): c for c in _OK.values()}

# --------------------------------------------------------------------------- schema


class _DuplicateKey(ValueError):
    pass


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        for k, _ in pairs:
            if k in seen:
                raise _DuplicateKey(k)
            seen.add(k)
    return d


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


# Decoders and the encoder are built once: json.loads/dumps with options build one per call.
_RECEIPT_DECODER = json.JSONDecoder(object_pairs_hook=_no_duplicates, parse_constant=_no_constant)
_RECORD_DECODER = json.JSONDecoder(parse_constant=_no_constant)
#: ``request.canonical_json``'s settings (a test holds them equal).
_CANONICAL = json.JSONEncoder(
    sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
)


def parse_receipt(raw: bytes) -> tuple[Any, str | None]:
    """The receipt's JSON value, or a problem: strict UTF-8 JSON, one value per key."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 (byte {exc.start})"
    try:
        return _RECEIPT_DECODER.decode(text), None
    except _DuplicateKey as exc:
        return None, f"not valid JSON: duplicate key {exc.args[0]!r}"
    except ValueError as exc:
        return None, f"not JSON ({exc})"


# --------------------------------------------------------------------------- files


@dataclass(frozen=True)
class Problem:
    """Why a file named by a receipt or record could not be used."""

    kind: Literal["missing", "outside", "not_file", "unreadable"]
    detail: str


_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NONBLOCK", 0)
_FAST_PATHS = os.sep == "/" and _NOFOLLOW != 0


_UNCLEAN = re.compile(r"(?:^|/)(?:\.\.?)?(?:/|$)|\x00")


def _clean(rel: str) -> bool:
    """A plain relative POSIX path (no ``.``, ``..``, empty part, leading ``/`` or NUL)."""
    return _UNCLEAN.search(rel) is None


def _read_fd(path: str, nofollow: bool) -> bytes:
    # O_NONBLOCK: a FIFO named by a hostile receipt must not hang us (then refused below).
    fd = os.open(path, _OPEN_FLAGS | (_NOFOLLOW if nofollow else 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise IsADirectoryError(errno.EISDIR, "not a regular file")
        data = os.read(fd, st.st_size + 1)
        if len(data) <= st.st_size:
            return data
        chunks = [data]
        while chunk := os.read(fd, 1 << 20):
            chunks.append(chunk)
        return b"".join(chunks)
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


# --------------------------------------------------------------------------- discovery


def _walk(top: str) -> Iterator[str]:
    """Receipt files below ``top`` (absolute), as paths relative to it; symlinked folders
    are not entered (they could lead out of the repository, or loop)."""
    stack = [""]
    while stack:
        rel_dir = stack.pop()
        try:
            with os.scandir(os.path.join(top, rel_dir) if rel_dir else top) as it:
                entries = list(it)
        except OSError:
            continue
        for e in entries:
            rel = f"{rel_dir}/{e.name}" if rel_dir else e.name
            if e.name.endswith(RECEIPT_SUFFIX):
                if not e.is_dir(follow_symlinks=False):
                    yield rel
            elif e.is_dir(follow_symlinks=False) and e.name != ".git":
                stack.append(rel)


def discover(
    root: Path, paths: Sequence[str], default_folder: str = DEFAULT_FOLDER
) -> tuple[list[str], list[str], set[str]]:
    """Receipts named by ``paths`` (receipts, answers, folders; repo-relative or absolute).

    Returns the receipts (sorted, unique), the PATHs as repo-relative strings, and the
    folders whose receipts are all listed (so the chain index need not scan them again).
    Raises :class:`InputError` for a PATH that does not exist or is outside the root. With
    no PATH, the default folder is searched, and its absence means no receipts.
    """
    found: set[str] = set()
    shown: list[str] = []
    scanned: set[str] = set()
    for user_path in paths or [default_folder]:
        path, rel = resolve_inside(root, user_path, what="PATH")
        shown.append(rel)
        if path.is_dir():
            prefix = "" if rel == "." else rel + "/"
            for sub in _walk(str(path)):
                found.add(prefix + sub)
                scanned.add((prefix + sub).rpartition("/")[0])
            scanned.add("" if rel == "." else rel)
        elif path.is_file() or (path.exists() and not path.is_dir()):
            found.add(_receipt_of(root, rel))
        elif paths:
            raise InputError(f"{user_path}: no such file or folder")
    return sorted(found), shown, scanned


def _receipt_of(root: Path, rel: str) -> str:
    if rel.endswith(RECEIPT_SUFFIX):
        return rel
    if rel.endswith(".md"):
        receipt = rel[: -len(".md")] + RECEIPT_SUFFIX
        receipt_path, _ = resolve_inside(root, receipt, what="receipt")
        if not receipt_path.is_file():
            raise InputError(f"{rel}: no receipt beside it ({receipt})")
        return receipt
    raise InputError(f"{rel}: expected a receipt (*{RECEIPT_SUFFIX}), an answer (*.md) or a folder")


# --------------------------------------------------------------------------- checking


@dataclass
class _Receipt:
    """A receipt as loaded: its data when it passed ``schema``, else the problems."""

    rel: str
    data: dict[str, Any] | None
    problems: list[str]

    @property
    def continuation(self) -> bool:
        return self.data is not None and self.data["schema"] == CONTINUATION


#: What the chain check needs of a receipt (all a worker process sends back of it).
_CHAIN_KEYS = ("schema", "answer_path", "previous_answer_path", "context_files")


@dataclass
class _Local:
    """A receipt after the checks that need no other receipt (picklable, for workers)."""

    rel: str
    data: dict[str, Any] | None
    """The receipt's ``_CHAIN_KEYS``; None when it failed ``schema``."""
    problems: list[str]
    checks: list[CheckResult]


def _join(items: Sequence[str], limit: int = 5) -> str:
    shown = ", ".join(items[:limit])
    return shown + (f" (+{len(items) - limit} more)" if len(items) > limit else "")


class Verifier:
    """One verification run: its caches (files, receipts, chain index) live as long as it."""

    def __init__(self, root: Path, *, strict: bool = False) -> None:
        self.root = root
        self.strict = strict
        self.files = RepoFiles(root)
        self._receipts: dict[str, _Receipt] = {}
        self._by_answer: dict[str, list[str]] = {}
        self._scanned: set[str] = set()
        self._chain_memo: dict[str, str | None] = {}
        self._continued: set[str] = set()
        """Answers some valid continuation goes on from."""
        self._escaped: dict[str, bytes | None] = {}
        self._escaped_text: dict[str, bytes] = {}

    # -- loading and indexing

    def load(self, rel: str) -> _Receipt:
        got = self._receipts.get(rel)
        if got is not None:
            return got
        raw = self.files.read_once(rel, what="receipt")
        if isinstance(raw, Problem):
            got = _Receipt(rel, None, [f"cannot read the receipt: {raw.detail}"])
        else:
            data, problem = parse_receipt(raw)
            if problem is not None:
                got = _Receipt(rel, None, [problem])
            else:
                problems = schema_problems(data)
                got = _Receipt(rel, None if problems else data, problems)
        self._receipts[rel] = got
        if got.data is not None:
            self._by_answer.setdefault(got.data["answer_path"], []).append(rel)
            if got.data["schema"] == CONTINUATION:
                self._continued.add(got.data["previous_answer_path"])
        return got

    def index(self, receipts: Sequence[str], scanned: set[str]) -> None:
        """Load ``receipts``; ``scanned``: folders whose every receipt is among them."""
        for rel in receipts:
            self.load(rel)
        self._scanned |= scanned

    def mark_scanned(self, folders: set[str]) -> None:
        self._scanned |= folders

    def _owners(self, answer: str) -> list[str]:
        """The valid receipts claiming ``answer``; its folder is scanned once on a miss."""
        folder = answer.rpartition("/")[0]
        if answer not in self._by_answer and folder not in self._scanned:
            self._scanned.add(folder)
            try:
                base, rel_folder = resolve_inside(self.root, folder or ".", what="folder")
                names = sorted(n for n in os.listdir(base) if n.endswith(RECEIPT_SUFFIX))
            except (InputError, OSError):
                names = []
            prefix = "" if rel_folder in ("", ".") else rel_folder + "/"
            for name in names:
                self.load(prefix + name)
        return self._by_answer.get(answer, [])

    # -- one receipt

    def check(self, rel: str) -> ReceiptReport:
        """Every check of one receipt (the index must hold the receipts verified with it)."""
        return self.finish(self.local(rel))

    def local(self, rel: str) -> _Local:
        """The checks that need no other receipt: schema, answer, context, prompt."""
        r = self.load(rel)
        if r.data is None:
            detail = "; ".join(r.problems[:5])
            if len(r.problems) > 5:
                detail += f" (+{len(r.problems) - 5} more)"
            return _Local(rel, None, r.problems, [CheckResult("schema", "fail", detail)])
        d = r.data
        checks = [
            _OK[d["schema"]],
            self._answer(d),
            self._context(d),
            self._prompt(rel, d, self._record(rel)),
        ]
        return _Local(rel, {k: d[k] for k in _CHAIN_KEYS if k in d}, [], checks)

    def adopt(self, done: _Local) -> None:
        """Index a receipt that another process loaded and checked (see :func:`verify`)."""
        self._receipts[done.rel] = r = _Receipt(done.rel, done.data, done.problems)
        if r.data is not None:
            self._by_answer.setdefault(r.data["answer_path"], []).append(done.rel)
            if done.checks[1] is _OK["answer"]:  # the worker read it: a file inside the root
                self.files.known_file(r.data["answer_path"])

    def finish(self, done: _Local) -> ReceiptReport:
        """Add the ``chain`` check, which needs the index of every receipt."""
        d = done.data
        if d is None:
            skipped = [CheckResult(n, "skip", "not checked: schema failed") for n in CHECKS[1:]]
            return ReceiptReport(done.rel, "fail", [*done.checks, *skipped])
        schema, answer, context, prompt = done.checks
        checks = [schema, answer, self._chain(done.rel, d), context, prompt]
        status: ReceiptStatus = "ok"
        if any(c.status == "fail" for c in checks):
            status = "fail"
        elif any(c.status == "warn" for c in checks):
            status = "warn"
        kind: Literal["primary", "continuation"] = (
            "continuation" if d["schema"] == CONTINUATION else "primary"
        )
        return ReceiptReport(done.rel, status, checks, kind, d["answer_path"])

    def _soft(self, name: str, detail: str) -> CheckResult:
        """A missing or changed context file: a warning, a failure under ``strict``."""
        return CheckResult(name, "fail" if self.strict else "warn", detail)

    def _answer(self, d: dict[str, Any]) -> CheckResult:
        path = d["answer_path"]
        # Keep the bytes only of answers that a continuation goes on from: its record
        # references them (and every earlier segment), so its rebuild needs them.
        digest = self.files.hash(path, what="answer_path", keep=path in self._continued)
        if isinstance(digest, Problem):
            if digest.kind == "outside":
                return CheckResult("answer", "fail", f"{digest.detail} (not read)")
            return CheckResult("answer", "fail", f"answer file {digest.detail}")
        if digest != d["answer_sha256"]:
            return CheckResult(
                "answer",
                "fail",
                f"{path} hashes to {digest}, not answer_sha256 (changed after the review)",
            )
        return _OK["answer"]

    def _chain(self, rel: str, d: dict[str, Any]) -> CheckResult:
        problems: list[str] = []
        answer = d["answer_path"]
        others = [o for o in self._owners(answer) if o != rel]
        if others:
            problems.append(f"{answer} is also claimed by {_join(others)}")
        if d["schema"] == PRIMARY:
            if not d.get("context_files"):
                problems.append("a primary receipt must name its context files")
            if "previous_answer_path" in d:
                problems.append("a primary receipt has no previous_answer_path")
        else:
            if "context_files" in d:
                problems.append("a continuation receipt names no context files")
            prev = d["previous_answer_path"]
            if prev == answer:
                problems.append("it continues itself")
            else:
                problem = self._link(prev)
                if problem is None:
                    problem = self._back_to_primary(prev)
                if problem is not None:
                    problems.append(problem)
        if problems:
            return CheckResult("chain", "fail", "; ".join(problems))
        return _OK["chain-primary" if d["schema"] == PRIMARY else "chain"]

    def _link(self, prev: str) -> str | None:
        """Why ``prev`` (an answer some continuation continues) is not a sound link."""
        missing = self.files.file_problem(prev, what="previous_answer_path")
        if missing is not None:
            if missing.kind == "outside":
                return f"previous_answer_path: {missing.detail}"
            return f"previous answer {missing.detail}"
        owners = self._owners(prev)
        if not owners:
            return f"previous answer {prev} is not covered by any valid receipt"
        if len(owners) > 1:
            return f"previous answer {prev} is claimed by {len(owners)} receipts ({_join(owners)})"
        return None

    def _back_to_primary(self, start: str) -> str | None:
        """Walk back from ``start`` to a primary: None, or where the chain breaks or loops.

        Memoised per answer, so 10,000 segments of one long chain cost one walk.
        """
        walked: list[str] = []
        seen: set[str] = set()
        cur = start
        result: str | None
        while True:
            if cur in self._chain_memo:
                result = self._chain_memo[cur]
                break
            if cur in seen:
                result = f"the chain loops back on itself at {cur}"
                break
            walked.append(cur)
            seen.add(cur)
            if cur != start:
                result = self._link(cur)
                if result is not None:
                    result = f"the chain is broken further back: {result}"
                    break
            owner = self.load(self._owners(cur)[0])
            assert owner.data is not None  # owners are valid receipts
            if owner.data["schema"] == PRIMARY:
                result = None
                break
            cur = owner.data["previous_answer_path"]
        for answer in walked:
            self._chain_memo[answer] = result
        return result

    def _context(self, d: dict[str, Any]) -> CheckResult:
        if d["schema"] == CONTINUATION:
            return _OK["context-continuation"]
        outside: list[str] = []
        missing: list[str] = []
        for path in d["context_files"]:
            problem = self.files.file_problem(path, what="context file")
            if problem is None:
                continue
            (outside if problem.kind == "outside" else missing).append(path)
        total = len(d["context_files"])
        if outside:
            more = f"; {len(missing)} missing: {_join(missing)}" if missing else ""
            return CheckResult(
                "context", "fail", f"outside the repository root (not read): {_join(outside)}{more}"
            )
        if missing:
            return self._soft("context", f"{len(missing)} of {total} missing: {_join(missing)}")
        return CheckResult("context", "ok", f"{total} present")

    # -- the request record

    def _record(self, rel: str) -> dict[str, Any] | str | None:
        """The request record beside the receipt: its data, a problem, or None if absent."""
        record_rel = rel[: -len(RECEIPT_SUFFIX)] + RECORD_SUFFIX
        raw = self.files.read_once(record_rel, what="request record")
        if isinstance(raw, Problem):
            return None if raw.kind == "missing" else f"request record {raw.detail}"
        try:
            data = _RECORD_DECODER.decode(raw.decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            return f"request record {record_rel} is not JSON ({exc})"
        if (
            not isinstance(data, dict)
            or data.get("record") != RECORD_SCHEMA
            or not isinstance(data.get("body"), dict)
        ):
            return f"{record_rel} is not a {RECORD_SCHEMA} request record"
        return data

    def _prompt(
        self, rel: str, d: dict[str, Any], record: dict[str, Any] | str | None
    ) -> CheckResult:
        if record is None:
            return CheckResult("prompt", "info", "not re-checkable: no request record")
        if isinstance(record, str):
            return CheckResult("prompt", "fail", record)
        disagree = _disagreements(rel, d, record)
        if disagree:
            return CheckResult(
                "prompt", "fail", f"the request record disagrees with the receipt on {disagree}"
            )
        return self._rebuild(d, record)

    def _rebuild(self, d: dict[str, Any], record: dict[str, Any]) -> CheckResult:
        if self._fast_digest(record["body"]) == d["prompt_sha256"]:
            return _OK["prompt"]
        # Anything else is decided (and explained) by request.rebuild_body, the reference.
        refs = _references(record["body"])
        outside: list[str] = []

        def read(path: str) -> bytes | None:
            data = self.files.read(path, what="reference")
            if isinstance(data, Problem):
                if data.kind == "outside":
                    outside.append(path)
                return None
            return data

        try:
            rebuilt = rebuild_body(record["body"], read)
        except InputError as exc:
            return CheckResult("prompt", "fail", exc.message)
        if outside:
            return CheckResult(
                "prompt",
                "fail",
                f"the request record names files outside the repository root (not read): "
                f"{_join(outside)}",
            )
        if rebuilt.body_bytes is not None:
            digest = sha256_tag(rebuilt.body_bytes)
            if digest == d["prompt_sha256"]:
                return _OK["prompt"]
            return CheckResult(
                "prompt",
                "fail",
                f"the rebuilt request hashes to {digest}, not prompt_sha256 "
                "(the request record was altered)",
            )
        answers = [p for p in rebuilt.changed + rebuilt.missing if refs.get(p) == "$answer"]
        if answers:
            what = [f"{p} ({'changed' if p in rebuilt.changed else 'missing'})" for p in answers]
            return CheckResult(
                "prompt", "fail", f"an earlier answer segment it continued: {_join(what)}"
            )
        if rebuilt.missing:
            return self._soft(
                "prompt",
                f"cannot rebuild the request: context file missing: {_join(rebuilt.missing)}",
            )
        if self._record_hashes_wrong(record, rebuilt.changed, d["prompt_sha256"]):
            return CheckResult(
                "prompt",
                "fail",
                f"the request record's hash of {_join(rebuilt.changed)} is wrong (the file is "
                "as it was; the record was altered)",
            )
        return self._soft(
            "prompt", f"context file changed since the review: {_join(rebuilt.changed)}"
        )

    def _fast_digest(self, body: dict[str, Any]) -> str | None:
        """The hash of the rebuilt request when every reference is intact, else None.

        The same bytes as ``canonical_json`` of the rebuilt body (what
        :func:`request.rebuild_body` returns), without re-serialising file texts for every
        receipt: JSON string escaping is per character, so a message's content is the
        concatenation of its parts' escaped forms, each escaped once per run. The body is
        serialised with a placeholder per such content, and the hash is fed the pieces. Only
        a match counts: any other outcome goes to ``rebuild_body``, so this path can make
        verify faster, never more lenient (equal hashes mean the exact bytes were rebuilt).
        """
        messages = body.get("messages")
        if not isinstance(messages, list):
            return None
        skeleton: list[Any] = []
        contents: list[list[bytes]] = []
        for m in messages:
            content = m.get("content") if isinstance(m, dict) else None
            if isinstance(content, str):  # plain text (a system prompt): escaped once per run
                pieces = [self._escaped_literal(content)]
            elif isinstance(content, dict):
                parts = content.get("$parts")
                if not isinstance(parts, list) or len(content) != 1:
                    return None
                pieces = []
                for p in parts:
                    piece = self._escaped_literal(p) if isinstance(p, str) else self._escaped_ref(p)
                    if piece is None:
                        return None
                    pieces.append(piece)
            else:
                skeleton.append(m)
                continue
            skeleton.append({**m, "content": _PLACEHOLDERS[len(contents)]})
            contents.append(pieces)
            if len(contents) >= len(_PLACEHOLDERS):
                return None
        try:
            frame = _CANONICAL.encode({**body, "messages": skeleton}).encode("utf-8")
        except (TypeError, ValueError):
            return None
        chunks: list[bytes] = []
        pos = 0
        for i, pieces in enumerate(contents):
            marker = _MARKERS[i]
            at = frame.find(marker, pos)
            if at < 0 or frame.count(marker) != 1:
                return None  # a placeholder look-alike in the record: let the slow path judge
            chunks.append(frame[pos : at + 1])  # up to and with the opening quote
            chunks += pieces
            pos = at + len(marker) - 1  # from the closing quote on
        chunks.append(frame[pos:])
        return "sha256:" + hashlib.sha256(b"".join(chunks)).hexdigest()

    def _escaped_literal(self, text: str) -> bytes:
        got = self._escaped_text.get(text)
        if got is None:
            got = self._escaped_text[text] = _escape(text)
        return got

    def _escaped_ref(self, p: Any) -> bytes | None:
        """A reference's file text, JSON-escaped, if it still hashes as the record says."""
        if not isinstance(p, dict) or len(p) != 1:
            return None
        ((kind, ref),) = p.items()
        if kind not in ("$file", "$answer") or not isinstance(ref, dict):
            return None
        path = ref.get("path")
        if not isinstance(path, str):
            return None
        digest = self.files.hash(path, what="reference")
        if digest != ref.get("sha256"):
            return None
        if path not in self._escaped:
            data = self.files.read(path, what="reference")
            self._escaped[path] = _escape_utf8(data) if isinstance(data, bytes) else None
        return self._escaped[path]

    def _record_hashes_wrong(self, record: dict[str, Any], changed: list[str], want: str) -> bool:
        """Does the request, built from the files as they are, hash to ``prompt_sha256``?"""
        current = {}
        for path in changed:
            data = self.files.read(path)
            if not isinstance(data, bytes):
                return False
            current[path] = self.files.digest(path, data)
        body = _rehash(record["body"], current)
        try:
            rebuilt = rebuild_body(body, lambda p: _as_bytes(self.files.read(p)))
        except InputError:
            return False
        return rebuilt.body_bytes is not None and sha256_tag(rebuilt.body_bytes) == want


#: Stand-ins for message contents while the body's frame is serialised (see _fast_digest).
_PLACEHOLDERS = tuple(f"\x00deepseek-review-content-{i}\x00" for i in range(64))
_MARKERS = tuple(json.dumps(p).encode("ascii") for p in _PLACEHOLDERS)


def _escape(text: str) -> bytes:
    """``text`` as ``canonical_json`` writes it inside a JSON string, without the quotes."""
    return json.dumps(text, ensure_ascii=False)[1:-1].encode("utf-8")


_RARE_CONTROL = re.compile(rb"[\x00-\x08\x0b\x0c\x0e-\x1f]")


def _escape_utf8(data: bytes) -> bytes | None:
    """:func:`_escape` of UTF-8 ``data`` (None if not UTF-8), working on the bytes.

    With ``ensure_ascii=False`` JSON escapes only ``\\``, ``"`` and the control characters,
    all ASCII, whose bytes never occur inside a multi-byte UTF-8 sequence: so the common
    ones are replaced in place; text with rarer control characters takes the slow road.
    """
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        return None
    if _RARE_CONTROL.search(data):
        return _escape(text)
    return (
        data.replace(b"\\", b"\\\\")
        .replace(b'"', b'\\"')
        .replace(b"\n", b"\\n")
        .replace(b"\r", b"\\r")
        .replace(b"\t", b"\\t")
    )


def _as_bytes(data: bytes | Problem) -> bytes | None:
    return data if isinstance(data, bytes) else None


def _references(body: dict[str, Any]) -> dict[str, str]:
    """Every referenced path in a record body and its kind (``$file`` or ``$answer``)."""
    out: dict[str, str] = {}
    messages = body.get("messages")
    for m in messages if isinstance(messages, list) else []:
        content = m.get("content") if isinstance(m, dict) else None
        parts = content.get("$parts") if isinstance(content, dict) else None
        for p in parts if isinstance(parts, list) else []:
            if isinstance(p, dict) and len(p) == 1:
                ((kind, ref),) = p.items()
                if isinstance(ref, dict) and isinstance(ref.get("path"), str):
                    out.setdefault(ref["path"], kind)
    return out


def _rehash(body: dict[str, Any], current: dict[str, str]) -> dict[str, Any]:
    """``body`` with the ``$file`` references to ``current``'s paths given those hashes."""
    messages = []
    for m in body["messages"]:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, dict) and isinstance(content.get("$parts"), list):
            parts = []
            for p in content["$parts"]:
                ref = p.get("$file") if isinstance(p, dict) else None
                if isinstance(ref, dict) and ref.get("path") in current:
                    p = {"$file": {**ref, "sha256": current[ref["path"]]}}
                parts.append(p)
            m = {**m, "content": {**content, "$parts": parts}}
        messages.append(m)
    return {**body, "messages": messages}


def _disagreements(rel: str, d: dict[str, Any], record: dict[str, Any]) -> str:
    """The fields on which a request record and its receipt disagree, comma-separated.

    ``prompt_sha256`` and ``answer_path`` must be in the record; the rest is compared where
    the record has it (so older records still check what they can).
    """
    bad = []
    for key in ("prompt_sha256", "answer_path"):
        if record.get(key) != d[key]:
            bad.append(key)
    is_cont = d["schema"] == CONTINUATION
    raw_response = record.get("response")
    response: dict[str, Any] = raw_response if isinstance(raw_response, dict) else {}
    body = record["body"]
    expected: list[tuple[str, Any, Any]] = [
        ("receipt_path", record.get("receipt_path"), rel),
        ("kind", record.get("kind"), "continuation" if is_cont else "primary"),
        ("created_at", record.get("created_at"), d["created_at"]),
        ("endpoint", record.get("endpoint"), d["endpoint"]),
        ("model", body.get("model"), d["model"]),
    ]
    if "usage" in response:
        usage = response["usage"]
        if usage is None:
            usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
        expected.append(("usage", usage, d["usage"]))
    if is_cont:
        if isinstance(response.get("message_keys"), list):
            keys = list(dict.fromkeys(k for k in response["message_keys"] if k))
            expected.append(("message_keys", keys, d.get("message_keys")))
        cont = record.get("continuation")
        if isinstance(cont, dict) and "previous_answer_path" in cont:
            expected.append(
                ("previous_answer_path", cont["previous_answer_path"], d["previous_answer_path"])
            )
    elif isinstance(record.get("context_files"), list):
        paths = [f.get("path") if isinstance(f, dict) else None for f in record["context_files"]]
        expected.append(("context_files", paths, d["context_files"]))
    for name, got, want in expected:
        if got is not None and got != want:
            bad.append(name)
    return ", ".join(bad)


#: Below this many receipts a pool costs more than it saves.
POOL_MIN_RECEIPTS = 2000
_CHUNK = 250
_worker: Verifier | None = None
_worker_args: tuple[Path, bool] | None = None


_Packed = tuple[str, "dict[str, Any] | None", list[str], list[tuple[str, CheckStatus, str]]]


def _work(chunk: list[str]) -> list[_Packed]:
    """In a worker process: the local checks of a run of receipts (caches kept per worker).

    Results travel as tuples: pickling them costs a third of pickling the dataclasses.
    """
    global _worker
    if _worker is None:
        assert _worker_args is not None
        root, strict = _worker_args
        _worker = Verifier(root, strict=strict)
    for rel in chunk:
        _worker.load(rel)  # the chunk's continuations tell which answers to keep
    out = []
    for rel in chunk:
        done = _worker.local(rel)
        checks = [(c.name, c.status, c.detail) for c in done.checks]
        out.append((done.rel, done.data, done.problems, checks))
    return out


def default_jobs(receipts: int) -> int:
    """Worker processes for ``receipts``: 1 (none) unless there are many and a fork is safe."""
    import multiprocessing
    import threading

    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    if (
        receipts < POOL_MIN_RECEIPTS
        or (cpus or 1) < 2
        or not sys.platform.startswith("linux")  # fork is only safe to rely on there
        or "fork" not in multiprocessing.get_all_start_methods()
        or threading.active_count() > 1  # forking a threaded process can deadlock
    ):
        return 1
    return min(cpus or 1, 4)


def _parallel(root: Path, strict: bool, receipts: list[str], jobs: int) -> list[_Local]:
    import multiprocessing

    global _worker_args
    chunks = [receipts[i : i + _CHUNK] for i in range(0, len(receipts), _CHUNK)]
    fast_validators()  # compiled once, here: the workers inherit it
    _worker_args = (root, strict)
    try:
        with multiprocessing.get_context("fork").Pool(jobs) as pool:
            return [
                _Local(
                    rel, data, problems, [_OK_BY_VALUE.get(c) or CheckResult(*c) for c in checks]
                )
                for part in pool.imap(_work, chunks)
                for rel, data, problems, checks in part
            ]
    finally:
        _worker_args = None


def verify(
    paths: Sequence[str],
    *,
    root: Path,
    strict: bool = False,
    jobs: int | None = None,
    default_folder: str = DEFAULT_FOLDER,
) -> VerifyReport:
    """Verify the receipts named by ``paths`` (receipts, answers or folders, searched
    recursively; none: ``default_folder``, whose absence means no receipts). Raises
    :class:`InputError` for a PATH that does not exist; every problem found in a receipt is
    in the report, never raised.

    ``jobs``: worker processes (None: :func:`default_jobs`, which uses up to 4 for runs of
    thousands of receipts on a machine with several cores, 1 otherwise). The workers run the
    checks that need one receipt; the chain check, which needs them all, runs here.
    """
    receipts, shown, scanned = discover(root, paths, default_folder)
    # Tens of thousands of small objects stay alive for the whole run and make no cycles
    # worth collecting: the cyclic collector would only walk them again and again.
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        v = Verifier(root, strict=strict)
        jobs = default_jobs(len(receipts)) if jobs is None else max(1, jobs)
        if jobs > 1 and len(receipts) > 1:
            done = _parallel(root, strict, receipts, jobs)
            for d in done:
                v.adopt(d)
        else:
            v.index(receipts, set())
            done = [v.local(rel) for rel in receipts]
        v.mark_scanned(scanned)
        reports = [v.finish(d) for d in done]
    finally:
        if gc_was_enabled:
            gc.enable()
    return VerifyReport(root=str(root), strict=strict, receipts=reports, searched=shown)
