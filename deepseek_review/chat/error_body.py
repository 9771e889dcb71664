"""A server's error, in its own words: the message, status and kind from an error body of
whichever shape, made one safe line.

Error bodies come as ``{"error": {"message": ...}}`` (OpenAI, Ollama's compat layer) or as
``{"error": "..."}`` (ollama.com, Ollama's cloud proxy); both are read. An HTML page is named
by its title; anything else is shown as one line.
"""

from __future__ import annotations

import re
from typing import Any

from deepseek_review.util import safejson
from deepseek_review.util.textsafe import escape

#: How an error body that is a web page is named (a plain web server, a proxy's error page).
HTML_PAGE = "HTML page"


def one_line(text: str, limit: int = 300) -> str:
    """A server's words for an error message: one line, at most ``limit`` characters (before
    escaping), and its control characters shown as escapes, so that a library caller who
    prints the message is as safe as the command line."""
    text = re.sub(r"\s+", " ", text).strip()
    return escape(text if len(text) <= limit else text[: limit - 1] + "…")


def error_body(body: bytes) -> Any:
    """An error body as JSON, or None when it is not JSON (or is refused)."""
    try:
        return safejson.loads(body, what="error body")
    except ValueError:
        return None


def error_parts(data: Any) -> tuple[str | None, int | None, str]:
    """The message, status and kind of an error object, or of a body that holds one.

    Shapes: ``{"error": {"message", "code", "type"}}`` (OpenAI, llama.cpp, Ollama's compat
    layer), ``{"error": "..."}`` (ollama.com), ``{"message", "code"}`` (vLLM; llama.cpp's bare
    stream error object). The status is ``code`` when it is an HTTP error status; the kind
    joins the ``type`` and a string ``code`` (``context_length_exceeded``)."""
    err = data.get("error", data) if isinstance(data, dict) else data
    if isinstance(err, str):
        return one_line(err), None, ""
    if not isinstance(err, dict):
        return None, None, ""
    message = err.get("message")
    if not isinstance(message, str) and isinstance(data, dict):
        message = data.get("message")
    code = err.get("code")
    status = code if type(code) is int and 400 <= code <= 599 else None
    kind = " ".join(v for v in (err.get("type"), code) if isinstance(v, str))
    return (one_line(message) if isinstance(message, str) else None), status, kind


def error_message(body: bytes, content_type: str) -> str:
    """The server's own words from an error body, whichever shape it has."""
    message, _, _ = error_parts(error_body(body))
    if message is not None:
        return message
    text = body.decode("utf-8", errors="replace")
    if "html" in content_type.lower() or text.lstrip().startswith("<"):
        title = re.search(r"<title>(.*?)</title>", text, re.IGNORECASE | re.DOTALL)
        return HTML_PAGE + (f" ({one_line(title.group(1), 120)})" if title else "")
    return one_line(text) if text.strip() else "empty body"
