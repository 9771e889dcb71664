"""One front door for the calls over stored reviews: ``findings``, ``sign`` and ``attest``
read the output folder a config file or the environment chose, and take the signing key the
environment names, exactly as their commands do (the commands call them).

Each test sets the setting as a user would (``configured``: ``output_dir = "custom"`` in the
repository's config), runs the command and the library call, and compares what each found,
wrote or reported.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from deepseek_review import api
from deepseek_review.testing.simulator import Simulator
from tests.support.cli import review
from tests.support.config import configured
from tests.support.findings import PROSE_END, block, item, review_answering
from tests.support.sshkeys import make_key, needs_openssh

__all__ = ["configured"]  # the fixture, shared with test_frontdoor


def test_findings_exports_the_configured_folder_as_findings_does(
    configured: Path, cli: Any, make_stub: Any
) -> None:
    run = review_answering(cli, make_stub, [PROSE_END + block(item())])
    assert run.code == 0, run.err
    assert run.json()["segments"][0]["answer_path"].startswith("custom/")
    r = cli("findings", "--format", "sarif")
    assert r.code == 0, r.err
    exported = api.findings(format="sarif")
    assert exported.text == r.out
    assert [a.finding.severity for a in exported.collected.findings] == ["major"]


@needs_openssh
def test_sign_signs_the_configured_folder_with_the_variables_key_as_sign_does(
    configured: Path,
    cli: Any,
    simulator: Simulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SSH_AUTH_SOCK", raising=False)  # not the machine's own agent
    key = make_key(tmp_path / "keys", "ed25519", "alice@example.com")
    monkeypatch.setenv("DEEPSEEK_REVIEW_SIGNING_KEY", str(key.private))
    assert review(cli, simulator).code == 0
    r = cli("sign", "--json")
    assert r.code == 0, r.err
    signed = sorted(p.name for p in (configured / "custom").glob("*.intoto.json*"))
    for name in signed:  # unsigned again, for the library call to do the same
        (configured / "custom" / name).unlink()
    report = api.sign()
    assert report.to_json() == r.json()
    assert [p.split("/")[0] for p in report.signed] == ["custom"]
    assert sorted(p.name for p in (configured / "custom").glob("*.intoto.json*")) == signed


def test_attest_covers_the_folder_the_environment_names_as_attest_does(
    configured: Path,
    cli: Any,
    simulator: Simulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DEEPSEEK_REVIEW_OUTPUT_DIR", "from-env")  # over the config's custom
    assert review(cli, simulator).code == 0
    out = tmp_path / "predicate.json"
    r = cli("attest", "--output", str(out))
    assert r.code == 0, r.err
    predicate = api.attest()
    assert json.loads(out.read_text(encoding="utf-8")) == predicate
    answers = [x["predicate"]["receipt"]["answer_path"] for x in predicate["reviews"]]
    assert [a.split("/")[0] for a in answers] == ["from-env"]
