"""Where a review is sent, and whether the API key may go there."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from deepseek_review.chat.endpoint import chat_url, ollama_host_url, resolve_endpoint
from deepseek_review.errors import ConfigError
from tests.support.cli import files_under, use_key

Cli = Callable[..., Any]
KEY = "sk-planted-endpoint-5f3a9c0e1d2b"


def url(endpoint: str | None = None, **env: str) -> str:
    return resolve_endpoint(endpoint, env).url


# --------------------------------------------------------------------------- --endpoint


@pytest.mark.parametrize(
    ("given", "called"),
    [
        ("http://127.0.0.1:8080", "http://127.0.0.1:8080/v1/chat/completions"),
        ("http://127.0.0.1:8080/", "http://127.0.0.1:8080/v1/chat/completions"),
        ("http://127.0.0.1:8080/v1", "http://127.0.0.1:8080/v1/chat/completions"),
        ("http://127.0.0.1:8080/v1/", "http://127.0.0.1:8080/v1/chat/completions"),
        ("https://ollama.com", "https://ollama.com/v1/chat/completions"),
        ("https://gw.example/api/v1", "https://gw.example/api/v1/chat/completions"),
        ("https://gw.example/proxy", "https://gw.example/proxy/v1/chat/completions"),
    ],
)
def test_base_url_is_completed_to_the_chat_completions_path(given, called):
    assert url(given) == called


@pytest.mark.parametrize(
    "full",
    [
        "http://127.0.0.1:8080/v1/chat/completions",
        "https://gw.example/openai/deployments/x/chat/completions",
        "https://gw.example/v1/chat/completions?api-version=2024-06-01",
    ],
)
def test_full_chat_completions_url_is_used_as_given(full):
    assert url(full) == full


def test_default_endpoint_is_local_ollama():
    ep = resolve_endpoint(None, {})
    assert ep.url == "http://localhost:11434/v1/chat/completions"
    assert ep.source == "default"


def test_endpoint_option_wins_over_ollama_host():
    assert (
        url("https://a.example", OLLAMA_HOST="b.example") == "https://a.example/v1/chat/completions"
    )


def test_blank_ollama_host_falls_back_to_the_default():
    assert url(OLLAMA_HOST="  ") == "http://localhost:11434/v1/chat/completions"


# --------------------------------------------------------------------------- OLLAMA_HOST


@pytest.mark.parametrize(
    ("value", "base"),
    [
        ("example.com", "http://example.com:11434"),
        ("example.com:8080", "http://example.com:8080"),
        ("ollama.com", "https://ollama.com:443"),
        ("http://example.com", "http://example.com:80"),
        ("https://example.com", "https://example.com:443"),
        ("http://example.com:9000", "http://example.com:9000"),
        ("0.0.0.0", "http://127.0.0.1:11434"),
        ("0.0.0.0:9999", "http://127.0.0.1:9999"),
        ("::", "http://[::1]:11434"),
        ("::1", "http://[::1]:11434"),
        ("[::1]:8080", "http://[::1]:8080"),
        ("10.0.0.5", "http://10.0.0.5:11434"),
        ("example.com/ollama", "http://example.com:11434/ollama"),
        ("https://example.com:8443/base/path", "https://example.com:8443/base/path"),
        (":7000", "http://127.0.0.1:7000"),
    ],
)
def test_ollama_host_follows_ollamas_own_rules(value, base):
    assert ollama_host_url(value) == base


def test_ollama_host_path_is_kept_before_the_chat_path():
    assert url(OLLAMA_HOST="example.com/ollama") == (
        "http://example.com:11434/ollama/v1/chat/completions"
    )


def test_ollama_host_is_the_source_when_set():
    ep = resolve_endpoint(None, {"OLLAMA_HOST": "127.0.0.1:1234"})
    assert (ep.url, ep.source) == ("http://127.0.0.1:1234/v1/chat/completions", "OLLAMA_HOST")


@pytest.mark.parametrize("value", ["example.com:port", "example.com:70000", "ftp://example.com"])
def test_ollama_host_that_cannot_be_read_is_refused_naming_it(value):
    with pytest.raises(ConfigError, match="OLLAMA_HOST"):
        resolve_endpoint(None, {"OLLAMA_HOST": value})


# --------------------------------------------------------------------------- the key


def test_key_is_taken_from_ollama_api_key():
    ep = resolve_endpoint("https://ollama.com", {"OLLAMA_API_KEY": KEY})
    assert ep.api_key == KEY
    assert KEY not in repr(ep)


def test_key_env_name_can_be_changed():
    ep = resolve_endpoint("https://x.example", {"MY_KEY": KEY}, key_env="MY_KEY")
    assert ep.api_key == KEY


def test_no_key_when_the_variable_is_unset():
    assert resolve_endpoint("https://x.example", {}).api_key is None


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "127.8.9.10", "[::1]", "a.localhost"])
def test_a_named_key_may_go_over_plain_http_to_loopback(host):
    ep = resolve_endpoint(f"http://{host}:11434", {"MY_KEY": KEY}, key_env="MY_KEY")
    assert ep.api_key == KEY


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "gpu-box.lan", "10.1.2.3"])
def test_the_default_key_is_not_sent_over_plain_http(host):
    """OLLAMA_API_KEY exported for ollama.com must not block (or reach) a local or LAN server."""
    ep = resolve_endpoint(f"http://{host}:11434", {"OLLAMA_API_KEY": KEY})
    assert ep.api_key is None


def test_key_may_go_over_https_anywhere():
    assert resolve_endpoint("https://ollama.com", {"OLLAMA_API_KEY": KEY}).api_key == KEY


@pytest.mark.parametrize(
    ("endpoint", "env", "host"),
    [
        ("http://gpu-box.lan:11434", {}, "gpu-box.lan"),
        ("http://10.1.2.3", {}, "10.1.2.3"),
        (None, {"OLLAMA_HOST": "gpu-box.lan"}, "gpu-box.lan"),
        (None, {"OLLAMA_HOST": "http://203.0.113.9"}, "203.0.113.9"),
    ],
)
def test_a_named_key_is_refused_over_plain_http_to_a_remote_host(endpoint, env, host):
    with pytest.raises(ConfigError) as info:
        resolve_endpoint(endpoint, {**env, "MY_KEY": KEY}, key_env="MY_KEY")
    assert host in info.value.message
    assert KEY not in info.value.message


def test_no_key_means_plain_http_to_a_remote_host_is_fine():
    assert url("http://gpu-box.lan:11434") == "http://gpu-box.lan:11434/v1/chat/completions"


@pytest.mark.parametrize(
    "value", ["   ", "line1\nline2", "line1-ünïcode", "line1 with space", "line1\x7f"]
)
def test_unusable_key_is_refused_without_printing_it(value):
    with pytest.raises(ConfigError, match="OLLAMA_API_KEY") as info:
        resolve_endpoint("https://x.example", {"OLLAMA_API_KEY": value})
    assert "line1" not in info.value.message


# --------------------------------------------------------------------------- bad URLs


@pytest.mark.parametrize(
    "bad",
    [
        "https://user:hunter2pass@ollama.com",
        "https://sk-in-username@ollama.com/v1",
    ],
)
def test_credentials_in_the_url_are_refused_without_echoing_them(bad):
    with pytest.raises(ConfigError, match="credentials") as info:
        chat_url(bad)
    assert "hunter2pass" not in info.value.message
    assert "sk-in-username" not in info.value.message


@pytest.mark.parametrize(
    "query",
    [
        "api_key=abc123secret",
        "key=abc123secret",
        "access_token=abc123secret",
        "x-auth=abc123secret",
        "sig=abc123secret",
        "password=abc123secret",
    ],
)
def test_key_like_query_parameter_is_refused_without_echoing_it(query):
    with pytest.raises(ConfigError, match="query parameter") as info:
        chat_url(f"https://gw.example/v1?{query}")
    assert "abc123secret" not in info.value.message


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        ("ftp://example.com", "unsupported scheme"),
        ("file:///etc/passwd", "unsupported scheme"),
        ("http://", "no host"),
        ("http://127.0.0.1:99999", "malformed"),
        ("http://[::1", "malformed"),
        ("https://gw.example/v1#frag", "fragment"),
    ],
)
def test_malformed_or_unsupported_url_is_refused(bad, why):
    with pytest.raises(ConfigError, match=why):
        chat_url(bad)


@pytest.mark.parametrize(
    ("given", "called"),
    [
        ("localhost:11434", "http://localhost:11434/v1/chat/completions"),
        ("gpu-box", "http://gpu-box:11434/v1/chat/completions"),
        ("ollama.com", "https://ollama.com/v1/chat/completions"),
    ],
)
def test_a_url_without_a_scheme_is_read_as_ollama_host_reads_it(given, called):
    assert chat_url(given) == called


# --------------------------------------------------------------------------- end to end


def test_receipt_endpoint_is_the_url_called(repo, simulator, cli):
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", simulator.base_url, "--json")
    assert r.code == 0, r.err
    receipt = json.loads((repo / r.json()["segments"][0]["receipt_path"]).read_text())
    assert receipt["endpoint"] == simulator.chat_url
    assert simulator.chat_requests()[0].path == "/v1/chat/completions"


def test_ollama_host_is_used_when_no_endpoint_is_given(repo, simulator, cli, monkeypatch):
    monkeypatch.setenv("OLLAMA_HOST", f"127.0.0.1:{simulator.port}")
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--json")
    assert r.code == 0, r.err
    assert r.json()["endpoint"] == simulator.chat_url
    assert len(simulator.chat_requests()) == 1


def test_dry_run_shows_the_default_endpoint(repo, cli):
    r = cli("run", "--dry-run", "--json", "-c", "docs/spec.md", "-p", "x")
    assert r.json()["endpoint"] == "http://localhost:11434/v1/chat/completions"


def test_key_is_sent_as_a_bearer_token(repo, make_simulator, cli, monkeypatch):
    sim = make_simulator(api_key=KEY)
    use_key(monkeypatch, KEY)
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", sim.base_url)
    assert r.code == 0, r.err
    assert sim.chat_requests()[0].headers["authorization"] == f"Bearer {KEY}"


def test_no_authorization_header_without_a_key(repo, simulator, cli):
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", simulator.base_url)
    assert r.code == 0, r.err
    assert "authorization" not in simulator.chat_requests()[0].headers


def test_named_key_over_plain_http_to_a_remote_host_exits_2_naming_the_host(repo, cli, monkeypatch):
    use_key(monkeypatch, KEY)
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", "http://gpu-box.invalid:11434")
    assert r.code == 2
    assert "gpu-box.invalid" in r.err
    assert KEY not in r.err + r.out
    assert files_under(repo / "reviews") == []


def test_credentials_in_the_endpoint_exit_2(repo, cli):
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", "https://u:hunter2pass@h.invalid")
    assert r.code == 2
    assert "hunter2pass" not in r.err


def test_non_ascii_key_exits_2_without_printing_it(repo, simulator, cli, monkeypatch):
    monkeypatch.setenv("OLLAMA_API_KEY", "sk-planted-ünïcode-key")
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", simulator.base_url)
    assert r.code == 2
    assert "OLLAMA_API_KEY" in r.err
    assert "planted" not in r.err + r.out
    assert simulator.chat_requests() == []


# --------------------------------------------------------------------------- one spelling


@pytest.mark.parametrize(
    "value",
    ["http://alice:hunter2@gpu-box", "alice:hunter2@gpu-box", "[alice:hunter2@gpu-box]:11434"],
)
def test_credentials_in_ollama_host_are_refused_without_echoing_any_part(
    repo, cli, monkeypatch, value
):
    monkeypatch.setenv("OLLAMA_HOST", value)
    r = cli("run", "--dry-run", "-c", "docs/spec.md", "-p", "x")
    assert r.code == 2
    assert "OLLAMA_HOST: credentials in the URL are refused" in r.err
    assert "hunter2" not in r.err + r.out
    assert "alice" not in r.err + r.out


@pytest.mark.parametrize(
    ("spellings", "canonical"),
    [
        (
            ["http://127.0.0.1", "http://127.0.0.1:80", "http://127.0.0.1:80/", "HTTP://127.0.0.1"],
            "http://127.0.0.1/v1/chat/completions",
        ),
        (
            ["https://ollama.com", "https://OLLAMA.com:443/v1", "ollama.com"],
            "https://ollama.com/v1/chat/completions",
        ),
        (["http://[::1]:11434", "[::1]", "::1"], "http://[::1]:11434/v1/chat/completions"),
    ],
)
def test_every_spelling_of_an_endpoint_is_one_url(spellings, canonical):
    assert {chat_url(s) for s in spellings} == {canonical}


def test_ollama_host_and_endpoint_flag_agree_on_a_default_port():
    assert url(OLLAMA_HOST="http://127.0.0.1") == url("http://127.0.0.1")


@pytest.mark.parametrize("path", ["/v1/completions", "/api/chat", "/api/generate", "/v1/models"])
def test_a_path_of_another_api_is_refused_not_extended(path):
    with pytest.raises(ConfigError, match="not a chat-completions path"):
        chat_url(f"http://127.0.0.1:8080{path}")


def test_the_default_key_exported_for_ollama_com_does_not_reach_a_local_server(
    repo, simulator, cli, monkeypatch
):
    monkeypatch.setenv("OLLAMA_API_KEY", KEY)
    r = cli("run", "-c", "docs/spec.md", "-p", "x", "--endpoint", simulator.base_url)
    assert r.code == 0, r.err
    assert "authorization" not in simulator.chat_requests()[0].headers


def test_batch_resumes_receipts_that_spell_the_endpoint_another_way(repo, simulator, cli):
    (repo / "reviews.toml").write_text(
        '[[review]]\ntopic = "spec"\nprompt = "Check."\ncontext = "docs/spec.md"\n'
    )
    args = ("batch", "reviews.toml", "--json", "--endpoint")
    assert cli(*args, f"http://localhost:{simulator.port}").code == 0
    for receipt in (repo / "reviews").glob("*.receipt.json"):
        data = json.loads(receipt.read_text())
        data["endpoint"] = f"http://LocalHost:{simulator.port}/v1/chat/completions/"
        receipt.write_text(json.dumps(data))
    simulator.reset()
    r = cli(*args, f"localhost:{simulator.port}")
    assert r.code == 0, r.err
    assert r.json()["entries"][0]["status"] == "skipped"
    assert simulator.chat_requests() == []


def test_an_at_sign_in_the_path_is_not_taken_for_credentials():
    assert chat_url("https://gw.example/models/@team/v1") == (
        "https://gw.example/models/@team/v1/chat/completions"
    )
