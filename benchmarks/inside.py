"""What happens inside one run of a command: the spans of work, the dataclasses built, the
modules loaded, and whose imports cost what. Shared by the rows that account for ours' share
beyond the stack's floor (one `run`, batch)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: Runs a Python script (ours' console script, or a floor script) as ``__main__`` with the
#: spans given timed (also where a module imported by an earlier span bound one by name before
#: it was patched), ``dataclasses.dataclass`` timed and every module load timed, and writes, as
#: the process ends (by ``os._exit``, ``sys.exit`` or returning), the spans, the dataclasses
#: built by our package, the self time of each module loaded and every module loaded. Argv:
#: the spans as JSON, then the script and its arguments.
#:
#: A load is timed where the interpreter calls ``_find_and_load`` for a module not yet in
#: ``sys.modules`` (``import`` and ``importlib.import_module`` alike), with a stack of nested
#: loads per thread: unlike ``-X importtime``, whose one count of nesting for the whole process
#: two threads importing at once garble, a batch's workers importing side by side are timed
#: apart. A thread that only waited for another's load of the same module is not counted.
_WRAPPER = """
import sys, threading, time
bootstrap = sys.modules["_frozen_importlib"]
loads, seen, frames, real_load = [], set(), threading.local(), bootstrap._find_and_load
def timed_load(name, import_):
    stack = frames.__dict__.setdefault("stack", [])
    stack.append(0.0)
    t = time.perf_counter()
    try:
        return real_load(name, import_)
    finally:
        took = time.perf_counter() - t
        inner = stack.pop()
        if stack:
            stack[-1] += took
        if name not in seen:
            seen.add(name)
            loads.append((name, took - inner))
bootstrap._find_and_load = timed_load
import dataclasses, importlib, json, os, runpy
spans, built, real = {}, [], dataclasses.dataclass
def built_timed(cls=None, /, **kw):
    if cls is None:
        return lambda c: built_timed(c, **kw)
    t = time.perf_counter()
    out = real(cls, **kw)
    built.append((cls.__module__, time.perf_counter() - t))
    return out
patched = {}
def timed(owner, attr, key):
    inner = getattr(owner, attr)
    def run(*args, **kwargs):
        t = time.perf_counter()
        try:
            return inner(*args, **kwargs)
        finally:
            total, calls = spans.get(key, (0.0, 0))
            spans[key] = (total + time.perf_counter() - t, calls + 1)
    setattr(owner, attr, run)
    patched[id(inner)] = (inner, run)
dataclasses.dataclass = built_timed
for module, path, key in json.loads(sys.argv.pop(1)):
    owner = importlib.import_module(module)
    *classes, attr = path.split(".")
    for name in classes:
        owner = getattr(owner, name)
    timed(owner, attr, key)
for name, module in list(sys.modules.items()):  # a name bound by import before its patch
    if name.split(".")[0] == "deepseek_review":
        for attr, value in list(vars(module).items()):
            inner, run = patched.get(id(value), (None, None))
            if inner is value:
                setattr(module, attr, run)
real_exit = os._exit
def write_report():
    ours = [t for m, t in built if m.split(".")[0] == "deepseek_review"]
    found = {"spans": spans, "dataclasses": [len(ours), sum(ours)], "loads": loads,
             "modules": sorted(sys.modules)}
    sys.stderr.write("\\nWRAPPED " + json.dumps(found) + "\\n")
    sys.stderr.flush()
def report(code):
    write_report()
    real_exit(code)
os._exit = report
sys.argv = sys.argv[1:]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
finally:  # a script that ends by returning or sys.exit, not os._exit
    write_report()
"""


def wrapped(
    script_argv: Sequence[str],
    cwd: Path,
    spans: Sequence[tuple[str, str, str]] = (),
) -> dict[str, Any]:
    """What one run of a Python script under :data:`_WRAPPER` reported."""
    argv = [sys.executable, "-c", _WRAPPER, json.dumps(spans)]
    err = subprocess.run(
        [*argv, *script_argv], cwd=cwd, check=True, capture_output=True, text=True
    ).stderr
    found = [line for line in err.splitlines() if line.startswith("WRAPPED ")]
    result: dict[str, Any] = json.loads(found[-1].removeprefix("WRAPPED "))
    return result


def ours_share(
    ours: Callable[[], Sequence[str]],
    floor_argv: Sequence[str],
    cwd: Path,
    spans: Sequence[tuple[str, str, str]],
    floor_name: str,
) -> tuple[str, str, str]:
    """Ours run twice (``ours()`` gives each run its command line: a batch needs a fresh
    output folder) and the floor once: the wall time inside each of ``spans``, whose module
    loads cost what (:func:`import_split`), and the modules only one side loads."""
    found = wrapped(ours(), cwd, spans)
    split = import_split(ours(), cwd)
    floor = wrapped(floor_argv, cwd)
    return spans_text(found, spans), split, modules_beyond(found, floor, floor_name)


def import_split(script_argv: Sequence[str], cwd: Path) -> str:
    """One run of ours with every module load timed: the self time of our own modules (and of
    the dataclasses they build) next to that of everything else it loads (typer, httpx,
    tenacity, httpcore, h11 and the stdlib they load)."""
    found = wrapped(script_argv, cwd)
    own = [t for name, t in found["loads"] if _ours(name)]
    rest = sum(t for name, t in found["loads"] if not _ours(name))
    n, built = found["dataclasses"]
    return (
        f"our {len(own)} modules {sum(own) * 1000:.0f} ms (of which building their {n} "
        f"dataclasses {built * 1000:.0f} ms); everything else it loads {rest * 1000:.0f} ms"
    )


def spans_text(found: dict[str, Any], spans: Sequence[tuple[str, str, str]]) -> str:
    """The wall time inside each span of one :func:`wrapped` run, in the order given."""
    shown = []
    for _, _, key in spans:
        total, calls = found["spans"].get(key, (0.0, 0))
        times = f" ({calls} calls)" if calls > 1 else ""
        shown.append(f"{key}{times} {total * 1000:.1f} ms")
    return "; ".join(shown)


def modules_beyond(ours: dict[str, Any], floor: dict[str, Any], floor_name: str) -> str:
    """What one run of ours loads beyond one run of the floor, and the other way round."""
    mine, theirs = set(ours["modules"]), set(floor["modules"])
    own = {m for m in mine - theirs if _ours(m)}
    others = ", ".join(sorted(mine - theirs - own)) or "none"
    return (
        f"Modules loaded (checked in this run): ours {len(mine)}, {floor_name} {len(theirs)}; "
        f"only in ours: our own {len(own)} and {others}; only in the floor: "
        f"{', '.join(sorted(theirs - mine)) or 'none'}. So what ours costs beyond the floor is "
        "importing our own modules and the work above (the rows on ours' imports and work)."
    )


def _ours(module: str) -> bool:
    return module.split(".")[0] == "deepseek_review"
