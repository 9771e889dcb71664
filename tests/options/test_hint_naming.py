"""A server's refusal names our options as the layer that reports it spells them.

The same 404 (an unknown model, ``server = "deepseek"``) is worded three ways: the command
line says ``--model``, a library call ``model``, and a manifest's entry ``model (entry 2,
line 10)``, so the reader finds the setting where they wrote it. Other tools' flags
(``vllm --max-model-len``) stay as those tools spell them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from deepseek_review import review
from deepseek_review.chat.server_hints import Advice, context_overflow
from deepseek_review.errors import ServerError
from deepseek_review.options.table import naming, naming_at, switched_off
from deepseek_review.testing.simulator import Simulator
from tests.support.chat import error_json, one_error_line
from tests.support.cli import review as cli_review
from tests.support.stubs import Reply, Stub

MakeStub = Callable[..., Stub]
UNKNOWN_MODEL = error_json({"code": 404, "message": "Model Not Exist", "type": "not_found"})


def unknown_model_stub(make_stub: MakeStub) -> Stub:
    return make_stub([Reply(404, UNKNOWN_MODEL)])


def test_cli_hint_names_the_model_flag(repo: Path, make_stub: MakeStub, cli: Any) -> None:
    stub = unknown_model_stub(make_stub)
    r = cli_review(cli, stub.base_url, "--server", "deepseek")
    assert r.code == 5
    line = one_error_line(r.err)
    assert "Model Not Exist" in line
    assert "check --model against the models DeepSeek's API lists" in line


def test_library_hint_names_the_model_key(repo: Path, make_stub: MakeStub) -> None:
    stub = unknown_model_stub(make_stub)
    with pytest.raises(ServerError) as caught:
        review(context=["docs/spec.md"], prompt="Check.", endpoint=stub.base_url, server="deepseek")
    assert caught.value.exit_code == 5
    assert "check model against the models DeepSeek's API lists" in caught.value.hint
    assert "--model" not in caught.value.hint


def test_manifest_entry_hint_names_the_key_with_its_entry_and_line(
    repo: Path, make_simulator: Callable[..., Simulator], cli: Any
) -> None:
    sim = make_simulator(models=frozenset({"deepseek-v4-flash"}))
    (repo / "reviews.toml").write_text(
        '[[review]]\ntopic = "known"\nprompt = "Check."\ncontext = "docs/spec.md"\n\n'
        '[[review]]\ntopic = "unknown"\nprompt = "Check."\ncontext = "docs/spec.md"\n'
        'model = "no-such-model"\nserver = "deepseek"\n',
        encoding="utf-8",
    )
    r = cli("batch", "reviews.toml", "--endpoint", sim.base_url, "--json")
    assert r.code == 11
    entries = {e["topic"]: e for e in r.json()["entries"]}
    assert entries["known"]["status"] == "ok"
    assert entries["unknown"]["status"] == "failed"
    error = entries["unknown"]["error"]
    assert "check model (entry 2, line 10) against the models DeepSeek's API lists" in error
    assert "--model" not in error
    assert error.endswith("or check --endpoint)")  # given to batch, not by the entry


def test_other_tools_flags_stay_literal_while_ours_follow_the_layer() -> None:
    advice = Advice(server="vllm")
    with naming("flag"):
        flagged = context_overflow(advice)
    with naming("flag"), naming_at({"max_tokens": "entry 4, line 20"}):
        placed = context_overflow(advice)
    assert flagged == (
        "send less context (or review it in parts that fit: --split), or lower --max-tokens, or "
        "serve the model with a larger --max-model-len"
    )
    assert placed == (
        "send less context (or review it in parts that fit: --split), or lower max_tokens "
        "(entry 4, line 20), or serve the model with a larger --max-model-len"
    )


@pytest.mark.parametrize(
    ("style", "places", "spelled"),
    [
        ("flag", {}, "--no-stream"),
        ("key", {}, "stream = false"),
        ("manifest", {}, "stream = false"),
        ("flag", {"stream": "entry 2, line 10"}, "stream = false (entry 2, line 10)"),
    ],
)
def test_a_switch_turned_off_is_spelled_as_the_layer_writes_it(
    style: Any, places: dict[str, str], spelled: str
) -> None:
    with naming(style), naming_at(places):
        assert switched_off("stream") == spelled
