"""Five questions about the same files: how much of each prompt a server's prefix cache serves.

Five ``deepseek-review run`` processes, each asking a different question (and topic) about the
same ~3,000 tokens of files, one after the other against a simulator that keeps a prefix
cache and reports it as DeepSeek's API does (``--prompt-cache deepseek``: hits in units of 64
tokens). The share of each prompt served from the cache is read from the request records
(``response.usage_details``). The guard: entries 2-5 each get >= 70% of their prompt tokens
from the cache. The same five with the first version of the templates (``--template
default@v1``: the question before the files) run against a fresh simulator as the baseline.
The llama.cpp figure (the same five evaluate <= 1.5x the prompt tokens of one on a real
server) is a contract test: ``tests/contract/test_prefix_cache_contract.py``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

from benchmarks.common import BenchResult, Command, Side, SimulatorProcess, git_init, tool

QUESTIONS = (
    "Is the arithmetic right?",
    "Are errors handled where they occur?",
    "Are the names clear and consistent?",
    "Which tests are missing?",
    "Is anything here unsafe to run in CI?",
)
LIMIT = 0.70
#: Tokens as the simulator counts them (words and punctuation).
_TOKEN = re.compile(r"\w+|[^\w\s]")


def make_repo(root: Path, tokens: int = 3_000) -> list[str]:
    """A repository whose files hold about ``tokens`` tokens; their paths."""
    root.mkdir()
    git_init(root)
    names = []
    for i in range(3):
        lines = [f"def area_{i}_{j}(width, height):\n    return width * height + {j}\n"
                 for j in range(tokens // 3 // 14)]  # fmt: skip
        rel = f"src/shapes_{i}.py"
        (root / "src").mkdir(exist_ok=True)
        (root / rel).write_text("".join(lines), encoding="utf-8")
        names.append(rel)
    return names


def five_reviews(
    repo: Path, files: list[str], out: str, *template: str
) -> tuple[Side, list[float]]:
    """The five reviews against a fresh caching simulator: their timings and each one's share
    of prompt tokens served from the cache."""
    samples = []
    with SimulatorProcess("--prompt-cache", "deepseek") as sim:
        for i, question in enumerate(QUESTIONS):
            argv = [tool(), "-q", "run", "--endpoint", sim.base_url, "-p", question,
                    "--topic", f"q{i}", "--output-dir", out, *template]  # fmt: skip
            for f in files:
                argv += ["-c", f]
            samples.append(Command(tuple(argv), repo).run())
    shares = []
    for record in sorted((repo / out).glob("*.request.json")):  # q0_..., q1_...: in order
        response = json.loads(record.read_text(encoding="utf-8"))["response"]
        hit = response["usage_details"]["prompt_cache_hit_tokens"]
        shares.append(hit / response["usage"]["prompt_tokens"])
    return Side.of(samples), shares


def run(work: Path, rounds: int = 1, tokens: int = 3_000) -> BenchResult:
    repo = work / "repo"
    files = make_repo(repo, tokens)
    file_tokens = sum(len(_TOKEN.findall((repo / f).read_text())) for f in files)
    ours, shares = five_reviews(repo, files, "reviews")
    base, base_shares = five_reviews(repo, files, "reviews-v1", "--template", "default@v1")
    least = min(shares[1:])
    return BenchResult(
        name="five questions about the same files, a prefix-caching server",
        limit=f">= {LIMIT:.2f} of entries 2-5's prompt tokens from the cache (ratio: the least)",
        ratio=least,
        held=least >= LIMIT,
        ours=ours,
        baseline=base,
        baseline_name="the same five with the v1 templates, question first (context)",
        rounds=rounds,
        commands=[
            f"deepseek-review -q run --endpoint $SIM -p QUESTION --topic qN -c {files[0]} ..."
        ],
        details=[
            ("tokens of the files (as the simulator counts them)", str(file_tokens)),
            ("share from the cache, entries 1-5", ", ".join(f"{s:.3f}" for s in shares)),
            ("the same with --template default@v1", ", ".join(f"{s:.3f}" for s in base_shares)),
        ],
        notes=[
            "The ratio is a share, not a time: the smallest of entries 2-5; the sides' times "
            "are medians of one review each.",
            "On a real llama.cpp server the same five are a contract test "
            "(tests/contract/test_prefix_cache_contract.py: <= 1.5x the prompt tokens of one).",
        ],
    )
