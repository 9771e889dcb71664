"""Request bodies built both ways (the streaming writer and json.dumps) for the body tests."""

from __future__ import annotations

import json

from deepseek_review.context.types import ContextFile
from deepseek_review.records.canonical import sha256_tag
from deepseek_review.reviewing.prompt import frame_messages, load_template
from deepseek_review.reviewing.request import BodyOptions, WireMessage, prepare

#: Text a JSON encoder must get right: quotes, backslashes, every control character, DEL,
#: line and paragraph separators, non-ASCII in 2, 3 and 4 UTF-8 bytes.
TRICKY = (
    'a "quoted" \\ back\\slash /slash\n\r\t\b\f'
    + "".join(chr(c) for c in range(0x20))
    + "\x7f Zürich ✓ \u2028\u2029 😀 \ufeff end"
)


def file_of(path: str, text: str) -> ContextFile:
    data = text.encode("utf-8")
    return ContextFile(path=path, text=text, sha256=sha256_tag(data), size=len(data))


def both_ways(
    files: list[ContextFile], options: BodyOptions, prompt: str = "Check it."
) -> tuple[bytes, bytes, dict[str, str]]:
    """The body written from parts (and the texts left afterwards) and ``json.dumps`` of the
    same messages joined."""
    template = load_template()
    framed = frame_messages(template, prompt, "topic", files)
    texts = {f.path: f.text for f in files}
    joined = [
        {"role": role, "content": "".join(p if isinstance(p, str) else texts[p.path] for p in ps)}
        for role, ps in framed
    ]
    streamed = prepare(options, [WireMessage(role, ps, None) for role, ps in framed], texts)
    expected = prepare(
        options, [WireMessage(m["role"], (m["content"],), m["content"]) for m in joined]
    )
    assert json.loads(expected.body_bytes)["messages"] == joined
    return streamed.body_bytes, expected.body_bytes, texts
