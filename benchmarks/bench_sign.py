"""Benchmark: signed reviews (issue #14). ``verify`` of 1,000 signed segments, with their
signatures checked, against ``verify`` of the same 1,000 segments unsigned; and how many
``ssh-keygen`` calls signing makes.

The guard: signing adds at most one ``ssh-keygen`` call per segment. The time of a signed
verify (one ``ssh-keygen -Y verify`` per segment, the reference verifier) is reported beside
the unsigned one; it is no goal (issue #31 retired the ratio goals). Two corpora are written
by the tool's own pipeline (see :mod:`benchmarks.bench_verify`); one is signed by
``deepseek-review sign`` with a fresh ed25519 key, through an ``ssh-keygen`` wrapper that
counts its calls. Both verifies are fresh processes, timed in alternating pairs.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

from benchmarks.bench_verify import make_corpus
from benchmarks.common import BenchResult, Command, compare, tool

SEGMENTS = 1_000
ROUNDS = 5


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


def run(work: Path, rounds: int = ROUNDS, segments: int = SEGMENTS) -> BenchResult:
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
    subprocess.run(sign_cmd, check=True, env=env, stderr=subprocess.DEVNULL)
    sign_calls = len(log.read_text().splitlines())
    log.unlink()

    ours_cmd = Command(
        (tool(), "-q", "verify", "--repo-root", str(signed), "--allowed-signers", str(allowed),
         "--require-signature"), env=env,
    )  # fmt: skip
    base_cmd = Command((tool(), "-q", "verify", "--repo-root", str(unsigned)), env=env)
    for cmd in (ours_cmd, base_cmd):  # sanity, and a warm page cache for both
        check = subprocess.run(cmd.argv, capture_output=True, text=True, env=env)
        if check.returncode != 0:
            raise RuntimeError(f"verify failed on the benchmark corpus: {check.stderr[-2000:]}")
    verify_calls = len(log.read_text().splitlines()) if log.exists() else 0
    ours, base = compare(ours_cmd, base_cmd, rounds)
    ratio = ours.wall / base.wall
    return BenchResult(
        name=f"verify {made:,} signed segments",
        goal="signing <= 1 ssh-keygen call per segment (the ratio is reported, not a goal)",
        ratio=ratio,
        met=sign_calls <= made + 1,
        ours=ours,
        baseline=base,
        baseline_name=f"verify of {made:,} unsigned segments",
        rounds=rounds,
        commands=[
            ours_cmd.shown().replace(str(work), "$WORK"),
            base_cmd.shown().replace(str(work), "$WORK"),
            shlex.join(["deepseek-review", *sign_cmd[1:]]).replace(str(work), "$WORK"),
        ],
        details=[
            ("ssh-keygen calls to sign the segments (`sign`)", f"{sign_calls:,}"),
            ("ssh-keygen calls of the signed verify", f"{verify_calls:,}"),
        ],
        notes=[
            f"Signing {made:,} segments made {sign_calls:,} ssh-keygen calls; verify checks "
            "each signature with one ssh-keygen -Y verify. Calls counted by an ssh-keygen "
            "wrapper on PATH.",
        ],
    )


if __name__ == "__main__":
    with tempfile.TemporaryDirectory(prefix="dsr-bench-sign-") as tmp:
        r = run(Path(tmp))
    print(f"{r.name}: {r.ratio:.2f}x ({'met' if r.met else 'MISSED'} {r.goal})")
