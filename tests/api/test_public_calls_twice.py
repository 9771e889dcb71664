"""Every library call works the second time too.

``import deepseek_review`` exports its calls lazily; a submodule named as a call (``stats``
was) replaced the call on the package the first time the call imported it, so
``deepseek_review.stats()`` worked once and then raised ``'module' object is not callable``.
The calls are made in a fresh interpreter, so imports happen in the order a user's do.
"""

from __future__ import annotations

import inspect
import pkgutil
import subprocess
import sys
import textwrap
from pathlib import Path

import deepseek_review

#: Each library call made twice with cheap, valid arguments against a simulator; a refusal
#: (a ReviewError) is an answer too: only the call itself must work.
SCRIPT = textwrap.dedent(
    """
    import inspect, json, pathlib
    import deepseek_review as dr
    from deepseek_review.testing.simulator import Simulator

    sim = Simulator(answer_words=20).start()
    url = sim.base_url
    pathlib.Path("reviews.toml").write_text(
        '[[review]]\\ntopic = "b"\\nprompt = "x"\\ncontext = "docs/spec.md"\\n'
    )
    first = dr.review(context=["docs/spec.md"], prompt="Check.", endpoint=url, topic="a")
    answer = str(first.segments[-1].answer_path)
    calls = {
        "review": lambda: dr.review(context=["docs/spec.md"], prompt="Check.", endpoint=url),
        "plan_review": lambda: dr.plan_review(context=["docs/spec.md"], prompt="x", endpoint=url),
        "send_review": lambda: dr.send_review(
            dr.plan_review(context=["docs/spec.md"], prompt="Again.", endpoint=url)
        ),
        "continue_review": lambda: dr.continue_review(answer, endpoint=url),
        "show": lambda: dr.show(answer),
        "verify": lambda: dr.verify(["reviews"]),
        "stats": lambda: dr.stats(["reviews"]),
        "findings": lambda: dr.findings(["reviews"]),
        "configuration": lambda: dr.configuration(),
        "signing_key": lambda: dr.signing_key(sign=False),
        "signed_with": lambda: dr.signed_with(None).__enter__(),
        "sign": lambda: dr.sign(["reviews"]),
        "attest": lambda: dr.attest(["reviews"]),
        "plan_batch": lambda: dr.plan_batch("reviews.toml", endpoint=url),
        "execute_batch": lambda: dr.execute_batch(dr.plan_batch("reviews.toml", endpoint=url)),
        "run_batch": lambda: dr.run_batch("reviews.toml", endpoint=url),
    }
    public = {n for n in dr.__all__ if inspect.isfunction(getattr(dr, n))}
    assert public == set(calls), sorted(public ^ set(calls))
    outcomes = {}
    for round in (1, 2):
        for name, call in calls.items():
            assert callable(getattr(dr, name)), (round, name, getattr(dr, name))
            try:
                call()
                outcomes[name] = "ok"
            except dr.ReviewError as exc:
                outcomes[name] = type(exc).__name__
        for name in calls:
            assert callable(getattr(dr, name)), (round, name, getattr(dr, name))
    sim.stop()
    print(json.dumps(outcomes))
    """
)


def test_every_library_call_works_twice_in_one_process(repo: Path) -> None:
    r = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=repo, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    outcomes = dict(__import__("json").loads(r.stdout.splitlines()[-1]))
    # The calls that have what they need did their work (the rest were refused, as asked).
    assert {n for n, o in outcomes.items() if o == "ok"} >= {
        "review", "plan_review", "send_review", "show", "verify", "stats", "findings",
        "configuration", "signing_key", "plan_batch", "execute_batch", "run_batch",
    }  # fmt: skip


def test_no_module_of_the_package_is_named_as_a_library_call() -> None:
    calls = {
        name
        for name in deepseek_review.__all__
        if inspect.isfunction(getattr(deepseek_review, name))
    }
    modules = {m.name for m in pkgutil.iter_modules(deepseek_review.__path__)}
    assert calls and modules
    assert not calls & modules
