"""Helpers of the reliability suites: faults (tests/chat/test_faults.py), crashes (test_crashes.py).

The batch runs as its own process (``python -m deepseek_review batch``), as a user runs it,
against an in-process simulator that records every request. Everything here checks outcomes
(files on disk, the report, what reached the simulator), never timings.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deepseek_review.batch.run import BatchOptions, prepare_batch
from deepseek_review.records.canonical import sha256_tag
from deepseek_review.records.chain import find_chain, read_answer, stitched_text
from deepseek_review.records.naming import RECEIPT_SUFFIX, RECORD_SUFFIX
from deepseek_review.records.rebuild import rebuild_body, repo_reader
from deepseek_review.records.storage import TEMP_PREFIX, TEMP_SUFFIX
from deepseek_review.records.stored import ChainSegment, load_segment
from deepseek_review.testing.simulator import RecordedRequest, full_answer
from deepseek_review.testing.simulator.answer import key_digest
from deepseek_review.verification import verify

OUT = "reviews"
MANIFEST = "reviews.toml"
REPORT = "report.json"
#: The simulator's answer in words (= tokens), and its thinking before each segment (which
#: counts against max_tokens): with the caps below, chains have 0 to 3 continuations.
ANSWER_WORDS = 60
REASONING_WORDS = 3
MAX_TOKENS = (19, 25, 33, 48, 80)
#: Generous: a shared 2-CPU machine may be slow, and a hung batch must fail, not block.
RUN_TIMEOUT = 600.0

_QUESTIONS = (
    "Check the arithmetic against the code.",
    "Is the spec consistent with itself?",
    "Find the edge cases the tests miss.",
    "Review the naming and the error handling.",
    "What would break first under load?",
)


# --------------------------------------------------------------------------- the workload


def write_notes(repo: Path, count: int, seed: int) -> list[str]:
    """Context files of varied sizes (so prompts differ in size), repo-relative."""
    rng = random.Random(seed)
    words = ("mean", "median", "sum", "count", "overflow", "rounding", "bound", "retry")
    paths = []
    (repo / "notes").mkdir(exist_ok=True)
    for i in range(count):
        lines = [
            " ".join(rng.choice(words) for _ in range(rng.randint(4, 12)))
            for _ in range(rng.randint(1, 40))
        ]
        path = f"notes/n{i}.md"
        (repo / path).write_text(f"# Note {i}\n\n" + "\n".join(lines) + "\n", encoding="utf-8")
        paths.append(path)
    return paths


def varied_entries(
    topics: Iterable[str], notes: Sequence[str], seed: int, *, reasoning: bool = False
) -> dict[str, dict[str, Any]]:
    """One entry per topic: varied prompts, contexts, token caps (0-3 continuations),
    streamed or not, prefill or directive continuations, reasoning kept or not."""
    rng = random.Random(seed)
    contexts: list[list[str]] = [
        ["docs/spec.md"],
        ["src/pkg/mean.py"],
        ["docs/spec.md", "src/pkg/mean.py"],
        *([n] for n in notes),
        *([n, "docs/spec.md"] for n in notes[:2]),
    ]
    entries: dict[str, dict[str, Any]] = {}
    for topic in topics:
        entry: dict[str, Any] = {
            "prompt": f"{rng.choice(_QUESTIONS)} ({topic})",
            "context": rng.choice(contexts),
            "max_tokens": rng.choice(MAX_TOKENS),
        }
        if rng.random() < 0.3:
            entry["stream"] = False
        if rng.random() < 0.2:
            entry["continuation_style"] = "directive"
        if reasoning and rng.random() < 0.4:
            entry["keep_reasoning"] = True
        entries[topic] = entry
    return entries


def write_manifest(repo: Path, entries: Mapping[str, Mapping[str, Any]]) -> Path:
    lines = []
    for topic, entry in entries.items():
        lines += ["[[review]]", f"topic = {json.dumps(topic)}"]
        lines += [f"{k} = {json.dumps(v)}" for k, v in entry.items()]
        lines.append("")
    path = repo / MANIFEST
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


@dataclass(frozen=True)
class Planned:
    """What the batch will send first for a topic (planned exactly as the batch plans it)."""

    topic: str
    prompt_sha256: str
    messages: list[dict[str, Any]]

    @property
    def key(self) -> str:
        """The simulator's conversation key: shared by the primary and its continuations."""
        return key_digest(self.messages)

    @property
    def full_answer(self) -> str:
        return full_answer(self.messages, words=ANSWER_WORDS)


def plan(repo: Path, url: str) -> dict[str, Planned]:
    """Every entry of the manifest, planned like the batch plans it (nothing sent)."""
    options = BatchOptions(
        manifest=str(repo / MANIFEST), overrides={"endpoint": url}, repo_root=str(repo)
    )
    prepared = prepare_batch(options, clean=False)
    out = {}
    for w in prepared.work:
        p = w.planned.plan.prepared
        out[w.topic] = Planned(
            w.topic, p.prompt_sha256, json.loads(p.body_bytes.decode("utf-8"))["messages"]
        )
    return out


# --------------------------------------------------------------------------- running the batch


def batch_command(url: str, *args: str) -> list[str]:
    return [
        sys.executable, "-m", "deepseek_review", "batch", MANIFEST, "--endpoint", url,
        "--report", REPORT, *args,
    ]  # fmt: skip


def _env(extra: Mapping[str, str] | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DEEPSEEK_REVIEW_CRASH_AT"}
    env.update(extra or {})
    return env


@dataclass
class BatchRun:
    code: int
    err: str
    report: dict[str, Any] | None
    requests: list[RecordedRequest]
    """The chat requests that reached the simulator during this run."""

    @property
    def killed(self) -> bool:
        return self.code == -signal.SIGKILL

    def entries(self) -> dict[str, dict[str, Any]]:
        assert self.report is not None, self.err
        return {e["topic"]: e for e in self.report["entries"]}

    def statuses(self) -> dict[str, str]:
        return {t: e["status"] for t, e in self.entries().items()}


class Batches:
    """Runs the batch as a process in ``repo`` against ``sim``, one run at a time."""

    def __init__(self, repo: Path, sim: Any, *args: str) -> None:
        self.repo = repo
        self.sim = sim
        self.args = args
        self.runs = 0

    def _begin(self) -> int:
        (self.repo / REPORT).unlink(missing_ok=True)
        self.runs += 1
        return len(self.sim.chat_requests())

    def _end(self, seen: int, code: int, err: str) -> BatchRun:
        report = None
        if (self.repo / REPORT).exists():
            report = json.loads((self.repo / REPORT).read_text(encoding="utf-8"))
        return BatchRun(code, err, report, self.sim.chat_requests()[seen:])

    def run(self, *extra: str, env: Mapping[str, str] | None = None) -> BatchRun:
        """Run to its end (or until a crash hook in ``env`` kills it)."""
        seen = self._begin()
        proc = subprocess.run(
            batch_command(self.sim.base_url, *self.args, *extra),
            cwd=self.repo,
            env=_env(env),
            capture_output=True,
            text=True,
            timeout=RUN_TIMEOUT,
        )
        return self._end(seen, proc.returncode, proc.stderr)

    def run_and_kill(self, when: Callable[[list[RecordedRequest]], bool]) -> BatchRun:
        """Start a run and SIGKILL it as soon as ``when(requests of this run)`` holds."""
        seen = self._begin()
        err_path = self.repo.parent / f"batch-{self.runs}.err"
        with err_path.open("w+", encoding="utf-8") as err:
            proc = subprocess.Popen(
                batch_command(self.sim.base_url, *self.args),
                cwd=self.repo,
                env=_env(None),
                stdout=subprocess.DEVNULL,
                stderr=err,
                text=True,
            )
            try:
                deadline = time.monotonic() + RUN_TIMEOUT
                while proc.poll() is None and not when(self.sim.chat_requests()[seen:]):
                    assert time.monotonic() < deadline, "the batch hung"
                    time.sleep(0.005)
                if proc.poll() is None:
                    proc.send_signal(signal.SIGKILL)
                proc.wait(timeout=60)
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
            err.seek(0)
            text = err.read()
        return self._end(seen, proc.returncode, text)


# --------------------------------------------------------------------------- what is on disk


def files(repo: Path) -> list[str]:
    """Every file under the repository (outside .git), repo-relative."""
    out = []
    for dirpath, dirnames, filenames in os.walk(repo):
        dirnames[:] = [d for d in dirnames if d != ".git"]
        rel = Path(dirpath).relative_to(repo)
        out += [(rel / f).as_posix() for f in filenames]
    return sorted(out)


def temp_files(repo: Path) -> list[str]:
    return [
        f
        for f in files(repo)
        if f.rsplit("/", 1)[-1].startswith(TEMP_PREFIX) and f.endswith(TEMP_SUFFIX)
    ]


def orphans_on_disk(repo: Path) -> list[str]:
    """Answers without a receipt, with their request records and reasoning (batch's rule)."""
    names = set(os.listdir(repo / OUT)) if (repo / OUT).is_dir() else set()
    out = []
    for name in sorted(names):
        if name.endswith(".md") and not name.endswith(".reasoning.md"):
            stem = name[: -len(".md")]
            if stem + RECEIPT_SUFFIX not in names:
                for sibling in (name, stem + RECORD_SUFFIX, stem + ".reasoning.md"):
                    if sibling in names:
                        out.append(f"{OUT}/{sibling}")
    return out


def receipts_on_disk(repo: Path) -> dict[str, dict[str, Any]]:
    folder = repo / OUT
    if not folder.is_dir():
        return {}
    return {
        f"{OUT}/{name}": json.loads((folder / name).read_bytes())
        for name in sorted(os.listdir(folder))
        if name.endswith(RECEIPT_SUFFIX)
    }


def finished_prompts(repo: Path) -> set[str]:
    """``prompt_sha256`` of every segment with a receipt: none of them may be sent again."""
    return {r["prompt_sha256"] for r in receipts_on_disk(repo).values()}


def check_files(repo: Path) -> int:
    """Nothing half-written under a real name, and the real verify passes over the folder.

    Every JSON file parses (reports, receipts, records); every answer with a receipt hashes
    to it; ``verify`` finds no failure (temporary files and orphans are not receipts: it
    ignores them). Returns the number of receipts verified.
    """
    for rel in files(repo):
        name = rel.rsplit("/", 1)[-1]
        if name.endswith(".json") and not name.startswith(TEMP_PREFIX):
            json.loads((repo / rel).read_bytes())  # raises on a truncated file
    for rel, receipt in receipts_on_disk(repo).items():
        data = (repo / receipt["answer_path"]).read_bytes()
        assert sha256_tag(data) == receipt["answer_sha256"], rel
    if not (repo / OUT).is_dir():
        return 0
    report = verify([OUT], root=repo)
    failed = {r.receipt_path: r.failed for r in report.receipts if r.status == "fail"}
    assert report.ok and not failed, failed
    # A chain that a kill or a failure left cut off warns (chain); nothing else may.
    assert not [r.receipt_path for r in report.receipts if r.warnings not in ([], ["chain"])]
    return len(report.receipts)


class Chains:
    """Every chain in the output folder, loaded once (``find_chain`` per topic would read the
    whole folder again for each one)."""

    def __init__(self, repo: Path) -> None:
        self.repo = repo
        self.segments = {rel: load_segment(repo, rel) for rel in receipts_on_disk(repo)}
        self.children: dict[str, list[ChainSegment]] = {}
        for seg in self.segments.values():
            if seg.receipt.is_continuation:
                prev = seg.receipt.previous_answer_path or ""
                self.children.setdefault(prev, []).append(seg)

    def primaries(self, planned: Planned) -> list[ChainSegment]:
        """The topic's primaries for exactly the planned request."""
        return [
            s
            for s in self.segments.values()
            if not s.receipt.is_continuation
            and s.receipt.prompt_sha256 == planned.prompt_sha256
            and s.answer_path.rsplit("/", 1)[-1].startswith(f"{planned.topic}_deepseek_")
        ]

    def chain(self, planned: Planned) -> list[ChainSegment]:
        """The topic's one chain (it must have exactly one, which must not fork)."""
        (primary,) = self.primaries(planned)
        chain = [primary]
        while nxt := self.children.get(chain[-1].answer_path):
            assert len(nxt) == 1, f"{chain[-1].answer_path} continued more than once"
            chain.append(nxt[0])
        return chain

    def check(self, planned: Planned, entry: Mapping[str, Any] | None = None) -> str:
        """The topic has exactly one chain, finished, whose stitched text is the simulator's
        full answer to the primary messages rebuilt from the request record (returned)."""
        chain = self.chain(planned)
        assert chain[-1].finish_reason == "stop", (planned.topic, chain[-1].finish_reason)
        assert primary_messages(self.repo, chain[0]) == planned.messages
        text = stitched_text(self.repo, chain)
        assert text == planned.full_answer, planned.topic
        if entry is not None:
            assert entry["receipt_paths"] == [s.receipt_path for s in chain]
            assert entry["answer_paths"] == [s.answer_path for s in chain]
            usage = [s.receipt.usage for s in chain]
            assert entry["usage"] == {k: sum(u[k] for u in usage) for k in usage[0]}
        return text

    def texts(self, planned: Planned) -> list[str]:
        """The chain's segments' texts."""
        return [read_answer(self.repo, s) for s in self.chain(planned)]

    def check_find_chain(self, planned: Planned) -> None:
        """The library's ``find_chain`` finds the same chain from any of its segments."""
        chain = [s.receipt_path for s in self.chain(planned)]
        for start in (chain[0], chain[-1]):
            assert [s.receipt_path for s in find_chain(self.repo, start)] == chain


def primary_messages(repo: Path, primary: ChainSegment) -> list[dict[str, Any]]:
    """The primary request's messages, rebuilt from its request record and the repository."""
    assert primary.record is not None
    rebuilt = rebuild_body(primary.record.body, repo_reader(repo))
    assert rebuilt.body_bytes is not None, (rebuilt.changed, rebuilt.missing)
    assert sha256_tag(rebuilt.body_bytes) == primary.receipt.prompt_sha256
    messages: list[dict[str, Any]] = json.loads(rebuilt.body_bytes)["messages"]
    return messages


# --------------------------------------------------------------------------- the simulator side


def topic_of_request(planned: Mapping[str, Planned]) -> Callable[[RecordedRequest], str]:
    by_key = {p.key: t for t, p in planned.items()}

    def topic(request: RecordedRequest) -> str:
        return by_key[key_digest(json.loads(request.body)["messages"])]

    return topic


def requests_per_topic(
    requests: Iterable[RecordedRequest], planned: Mapping[str, Planned]
) -> Counter[str]:
    topic = topic_of_request(planned)
    return Counter(topic(r) for r in requests)


def prompt_sha(request: RecordedRequest) -> str:
    return "sha256:" + hashlib.sha256(request.body).hexdigest()
