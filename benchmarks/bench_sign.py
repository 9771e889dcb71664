"""Benchmark: signed reviews (issue #14). ``verify`` of 1,000 signed segments, with their
signatures checked, against ``verify`` of the same 1,000 segments unsigned; and how many
``ssh-keygen`` calls signing makes.

The goal: verifying signed segments costs at most 3x verifying them unsigned, and signing
adds at most one ``ssh-keygen`` call per segment. Two corpora are written by the tool's own
pipeline (see :mod:`benchmarks.bench_verify`); one is signed by ``deepseek-review sign``
with a fresh ed25519 key, through an ``ssh-keygen`` wrapper that counts its calls. Both
verifies are fresh processes, timed interleaved; the ratio of medians is the result.
``python -m benchmarks.bench_sign [N]`` runs it alone.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.bench_verify import make_corpus
from benchmarks.common import BenchResult, interleaved, run_command, tool

SEGMENTS = 1_000
ROUNDS = 5
GOAL = 3.0


def _counting_ssh_keygen(folder: Path, log: Path) -> dict[str, str]:
    """An environment whose ``ssh-keygen`` logs each call and runs the real one."""
    real = shutil.which("ssh-keygen")
    if real is None:
        raise RuntimeError("ssh-keygen is not installed: the signing benchmark needs OpenSSH")
    folder.mkdir(parents=True)
    wrapper = folder / "ssh-keygen"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {shlex.quote(str(log))}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
    env["PATH"] = f"{folder}{os.pathsep}{env.get('PATH', '')}"
    return env


def run(work: Path, segments: int = SEGMENTS) -> BenchResult:
    signed, unsigned = work / "signed", work / "unsigned"
    made = make_corpus(signed, segments)
    make_corpus(unsigned, segments)
    key = work / "id_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "bench@example.com", "-f", str(key)],
        check=True,
    )
    allowed = work / "allowed_signers"
    allowed.write_text("bench@example.com " + key.with_suffix(".pub").read_text())
    log = work / "ssh-keygen.log"
    env = _counting_ssh_keygen(work / "bin", log)
    sign_cmd = [tool(), "-q", "sign", "--repo-root", str(signed), "--signing-key", str(key)]
    t0 = time.perf_counter()
    subprocess.run(sign_cmd, check=True, env=env, stderr=subprocess.DEVNULL)
    sign_seconds = time.perf_counter() - t0
    sign_calls = len(log.read_text().splitlines())
    log.unlink()

    ours_cmd = [tool(), "-q", "verify", "--repo-root", str(signed),
                "--allowed-signers", str(allowed), "--require-signature"]  # fmt: skip
    base_cmd = [tool(), "-q", "verify", "--repo-root", str(unsigned)]
    for cmd in (ours_cmd, base_cmd):  # sanity, and a warm page cache for both
        check = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if check.returncode != 0:
            raise RuntimeError(f"verify failed on the benchmark corpus: {check.stderr[-2000:]}")
    verify_calls = len(log.read_text().splitlines()) if log.exists() else 0
    ours, base = interleaved(
        lambda: run_command(ours_cmd, stderr=subprocess.DEVNULL),
        lambda: run_command(base_cmd, stderr=subprocess.DEVNULL),
        rounds=ROUNDS,
    )
    ratio = ours / base
    return BenchResult(
        name=f"verify {made:,} signed segments",
        goal=f"<= {GOAL:g}x verify of the same segments unsigned; signing <= 1 ssh-keygen call "
        "per segment",
        ratio=ratio,
        met=ratio <= GOAL and sign_calls <= made + 1,
        ours_seconds=ours,
        baseline_seconds=base,
        baseline=f"verify of {made:,} unsigned segments",
        commands=[shlex.join(ours_cmd), shlex.join(base_cmd), shlex.join(sign_cmd)],
        notes=[
            f"Signing {made:,} segments (`sign`): {sign_seconds:.2f} s, {sign_calls:,} "
            f"ssh-keygen calls (one per segment, plus one probe of the key before anything).",
            f"verify with signatures: {verify_calls:,} ssh-keygen calls: signatures are checked "
            "in process (cryptography; ssh-keygen only for key types it does not handle).",
            f"Median of {ROUNDS} interleaved rounds; both sides are fresh processes.",
        ],
        extra={"sign seconds": sign_seconds, "ssh-keygen calls to sign": float(sign_calls)},
    )


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else SEGMENTS
    with tempfile.TemporaryDirectory(prefix="dsr-bench-sign-") as tmp:
        r = run(Path(tmp), n)
    print(
        f"{r.name}: ours {r.ours_seconds:.3f}s, unsigned {r.baseline_seconds:.3f}s, "
        f"ratio {r.ratio:.2f}x ({'met' if r.met else 'MISSED'} {r.goal})"
    )
    for note in r.notes:
        print(f"  - {note}")
