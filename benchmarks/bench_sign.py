"""``sign``: how many ``ssh-keygen`` calls signing makes (a count, not a time).

The check: signing adds at most one ``ssh-keygen`` call per segment, plus the one call that
probes the key before anything is signed. A corpus of 200 segments is written by the tool's
own pipeline (see :mod:`benchmarks.bench_verify`) and signed by ``deepseek-review sign`` with a
fresh ed25519 key, through an ``ssh-keygen`` wrapper on PATH that logs each call. The sign
command is timed once, as context; no ratio of times is guarded.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from pathlib import Path

from benchmarks.bench_verify import make_corpus
from benchmarks.common import BenchResult, Side, run_command, tool

SEGMENTS = 200
#: The calls signing makes besides one per segment: the probe that the key signs at all.
PROBES = 1


def _counting_ssh_keygen(folder: Path, log: Path) -> dict[str, str]:
    """An environment whose ``ssh-keygen`` logs each call and runs the real one."""
    real = shutil.which("ssh-keygen")
    if real is None:
        raise RuntimeError("ssh-keygen is not installed: the signing check needs OpenSSH")
    folder.mkdir(parents=True)
    wrapper = folder / "ssh-keygen"
    wrapper.write_text(f'#!/bin/sh\necho "$*" >> {shlex.quote(str(log))}\nexec {real} "$@"\n')
    wrapper.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "SSH_AUTH_SOCK"}
    env["PATH"] = f"{folder}{os.pathsep}{env.get('PATH', '')}"
    return env


def run(work: Path, segments: int = SEGMENTS) -> BenchResult:
    signed = work / "signed"
    made = make_corpus(signed, segments)
    key = work / "id_ed25519"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "bench@example.com", "-f", str(key)],
        check=True,
    )
    log = work / "ssh-keygen.log"
    env = _counting_ssh_keygen(work / "bin", log)
    sign_cmd = [tool(), "-q", "sign", "--repo-root", str(signed), "--signing-key", str(key)]
    took = run_command(sign_cmd, env=env)
    calls = len(log.read_text().splitlines())
    per_segment = (calls - PROBES) / made
    return BenchResult(
        name=f"`sign` of {made:,} segments: ssh-keygen calls",
        limit="<= 1 ssh-keygen call per segment (plus one probe of the key); a count",
        ratio=per_segment,
        held=calls <= made + PROBES,
        ours=Side.of([took]),
        baseline=None,
        baseline_name="none: the count is the check",
        rounds=1,
        commands=[shlex.join(["deepseek-review", *sign_cmd[1:]]).replace(str(work), "$WORK")],
        details=[("ssh-keygen calls to sign the segments", f"{calls:,} for {made:,} segments")],
        notes=[
            "The ratio is (calls - 1 probe) / segments. Calls counted by an ssh-keygen "
            "wrapper on PATH; the time is of one run, context only.",
        ],
    )
