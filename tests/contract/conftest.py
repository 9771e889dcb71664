"""A real llama-cpp-python server on 127.0.0.1, serving the tiny model the suite writes itself.

Session-scoped: the server starts once (a second or two) for the whole contract suite. It
needs the ``contract`` extra (``make test-contract`` installs it); nothing here reaches the
network.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from tests.contract import tinymodel

#: The model name the server answers to (``--model_alias``) and the CLI asks for.
MODEL = "tiny-successor"
STARTUP_SECONDS = 60.0


@dataclass(frozen=True)
class LlamaServer:
    base_url: str
    chat_url: str
    log: Path


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def quiet_environ(home: Path) -> dict[str, str]:
    """The environment for the server and the CLI: no proxies, no Ollama or deepseek-review
    settings, no git configuration from the machine (as ``clean_environ`` does per test)."""
    drop = ("OLLAMA_", "DEEPSEEK_REVIEW_", "GIT_")
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(drop) and "proxy" not in k.lower()
    }
    env.update(
        HOME=str(home),
        GIT_CONFIG_GLOBAL=str(home / "gitconfig"),
        GIT_CONFIG_NOSYSTEM="1",
        NO_COLOR="1",
    )
    return env


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tinymodel.write(tmp_path_factory.mktemp("model") / "tiny.gguf")


@pytest.fixture(scope="session")
def llama_server(
    tiny_model: Path, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LlamaServer]:
    """``python -m llama_cpp.server`` on a free loopback port, ready to answer."""
    with serve(tiny_model, tmp_path_factory.mktemp("llama-server")) as server:
        yield server


@contextlib.contextmanager
def serve(
    model: Path, folder: Path, *, n_ctx: int = 4096, verbose: bool = False
) -> Iterator[LlamaServer]:
    """A llama-cpp-python server of ``model`` logging to ``folder/server.log``, ready to
    answer; stopped on leaving. ``verbose``: it logs what it evaluates per request."""
    log = folder / "server.log"
    port = free_port()
    command = [
        sys.executable,
        "-m",
        "llama_cpp.server",
        "--model",
        str(model),
        "--model_alias",
        MODEL,
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
        "--n_ctx",
        str(n_ctx),  # 4096: the prompt is mostly one token per character with this vocabulary
        "--n_threads",
        "1",
        "--verbose",
        str(verbose),
    ]
    base_url = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, env=quiet_environ(folder), cwd=folder
        )
    try:
        _wait_ready(proc, base_url, log)
        yield LlamaServer(base_url=base_url, chat_url=f"{base_url}/v1/chat/completions", log=log)
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_ready(proc: subprocess.Popen[bytes], base_url: str, log: Path) -> None:
    deadline = time.monotonic() + STARTUP_SECONDS
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
            pytest.fail(f"llama_cpp.server exited with {proc.returncode}:\n{tail}")
        try:
            if httpx.get(f"{base_url}/v1/models", timeout=1.0).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    pytest.fail(f"llama_cpp.server not ready after {STARTUP_SECONDS:.0f} s (log: {log})")
