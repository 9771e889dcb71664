"""The secret scan in tests: an endpoint off the machine whose requests are recorded and
fail as unreachable (the ``offline`` fixture)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

REMOTE = "https://deepseek-review.invalid"


@dataclass
class Sent:
    urls: list[str] = field(default_factory=list)


def go_offline(monkeypatch: pytest.MonkeyPatch) -> Sent:
    """From now on every request is recorded and fails as unreachable: nothing leaves the
    machine."""
    sent = Sent()

    def send(self: httpx.Client, request: httpx.Request, **kwargs: Any) -> Any:
        sent.urls.append(str(request.url))
        raise httpx.ConnectError("blocked by the test", request=request)

    monkeypatch.setattr(httpx.Client, "send", send)
    return sent


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch) -> Sent:
    """Records every request and fails it as unreachable: nothing leaves the machine."""
    return go_offline(monkeypatch)


#: A private key block in a context file (what the secret scan must refuse to send).
PRIVATE_KEY = (
    "notes\n"
    "-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEpAIBAAKCAQEA3Tz2mr7SZiAMfQyuvBjM2lZbmTk8vXcuA5q9C0c1eHUcKa4u\n"
    "-----END RSA PRIVATE KEY-----\n"
)
