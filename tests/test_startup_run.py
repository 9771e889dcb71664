"""Start-up of a review that is sent: what only other commands return is not built.

A frozen dataclass costs about 0.4 ms to build at import; ``run`` imports ``api_run`` but
returns neither ``config``'s nor ``show``'s result, so those live apart (:mod:`.api_views`).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

from deepseek_review import api, api_run
from deepseek_review.api_views import Configuration, ShownChain
from tests.test_startup import _spawn


def test_the_run_api_module_builds_no_result_class_of_another_command() -> None:
    built = [
        name
        for name, value in vars(api_run).items()
        if dataclasses.is_dataclass(value) and value.__module__ == api_run.__name__
    ]
    assert built == []


def test_a_run_does_not_import_the_config_and_show_results(repo: Path, simulator: object) -> None:
    url = simulator.base_url  # type: ignore[attr-defined]
    proc, modules = _spawn(
        repo, "-q", "run", "-c", "docs/spec.md", "-p", "Check.", "--endpoint", url
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "deepseek_review.api_run" in modules
    assert "deepseek_review.api_views" not in modules


def test_the_library_still_exports_the_config_and_show_results(repo: Path) -> None:
    assert api.Configuration is Configuration
    assert api.ShownChain is ShownChain
    assert isinstance(api.configuration(repo_root=repo, env={}), Configuration)
