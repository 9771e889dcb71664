"""The simulator's deterministic "model": a fixed answer per conversation, served in pieces.

Nothing here is learned or random at run time. The answer for a conversation depends only on
the messages before the first assistant turn, so a client that continues a cut-off answer
(assistant prefill or a "continue" directive) can be checked byte for byte against
:func:`full_answer`.
"""

from __future__ import annotations

import functools
import hashlib
import json
import random
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

#: How the simulator splits text into tokens: a word with its trailing whitespace, or a run
#: of whitespace (only ever at the start). ``"".join(TOKEN_RE.findall(t)) == t`` for any ``t``.
TOKEN_RE = re.compile(r"\S+\s*|\s+")
_PROMPT_TOKEN_RE = re.compile(r"\w+|[^\w\s]")
_WORD_RE = re.compile(r"\S+")

_VOCAB_TEXT = """
    the a of to and in that is for it with as on be by this are from at or an which when
    value values result function method class module file line lines loop call calls return
    returns input output error errors case cases test tests check checks assumes assume
    state cache buffer index offset length size count limit bound bounds range step steps
    data model token tokens prompt answer review reviewer code path paths branch commit
    merge build config option options default flag flags type types string number integer
    float list map set key keys field fields record records order sort parse parser format
    reads writes opens closes handles raises catches retries waits blocks starts stops
    should could would might must can will does not never always only also still even
    here there this that these those each every some any all most few more less same other
    clear simple safe unsafe slow fast small large early late first last next previous
    correct wrong missing extra unused stale hidden explicit implicit stable unstable
    because since while unless until before after during without within across between
    rounding overflow precision scale sum mean variance error-prone boundary invariant
    lock thread queue request response server client timeout retry budget window seed
    readable naming comment docstring signature argument parameter helper wrapper layer
    guard guards edge edges corner reason reasons note notes risk risks fix fixes change
"""
_VOCAB = tuple(_VOCAB_TEXT.split())
# Non-ASCII on purpose: clients must keep UTF-8 intact across continuations and receipts.
_SPECIAL = ("σ_q", "naïve", "→", "数学", "Δt", "café", "≤", "µs", "résumé", "½")  # noqa: RUF001
_CODE = (
    "`parse()`",
    "`max_tokens`",
    "`self.cache`",
    "`O(n²)`",
    "`None`",
    "`json.loads`",
    "`i+=1`",
    "`len(xs)`",
    "`assert`",
    "`__init__`",
)
_TITLES = (
    "Summary",
    "Findings",
    "Correctness",
    "Numerical stability",
    "Edge cases",
    "Tests",
    "Performance",
    "Suggested changes",
    "Naming and notation",
    "Error handling",
)
_SEVERITIES = ("high", "medium", "low", "nit")
_THINKING_TEXT = "thinking about the arithmetic of this change and checking each claim first"
_THINKING = tuple(_THINKING_TEXT.split())


def conversation_key(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The messages before the first assistant turn: what decides the answer."""
    key: list[dict[str, Any]] = []
    for message in messages:
        if message.get("role") == "assistant":
            break
        key.append(dict(message))
    return key


def key_digest(messages: Sequence[Mapping[str, Any]]) -> str:
    """Hex SHA-256 of the canonical JSON of the conversation key."""
    canonical = json.dumps(
        conversation_key(messages), sort_keys=True, separators=(",", ":"), ensure_ascii=False
    )
    return hashlib.sha256(canonical.encode("utf-8", "surrogatepass")).hexdigest()


def full_answer(
    messages: Sequence[Mapping[str, Any]], words: int = 200, line_offset: int = 0
) -> str:
    """The whole deterministic answer for a conversation: same key, same text, byte for byte.

    ``words`` is the simulator's ``answer_words``; the text has exactly that many ``\\S+``
    words, the last two being ``END-OF-REVIEW <first 8 hex of the key hash>``, plus, when
    the prompt asks for findings, the block of :func:`findings_block` before those two.
    """
    if words < 2:
        raise ValueError(f"answer words must be >= 2, got {words}")
    text = _render(key_digest(messages), words)
    block = findings_block(messages, line_offset)
    return text if block is None else _before_tail(text, block)


# --------------------------------------------------------------------------- findings
#: A prompt asks for a findings block when it names the schema (the review templates do).
_FINDINGS_ASK = "schemas/findings.schema.json"
#: What the simulator's suggestion appends to the line it quotes.
SUGGESTED = "  # simulated suggestion"
#: A framed context file: its path, the first line of its range (a part of it), its fence.
_FILE_RE = re.compile(
    r"^## File \d+ of \d+: (.+)\n\n(?:Only lines (\d+)-[^\n]*\n\n)?(`{3,})[^\n]*\n", re.M
)


def findings_block(messages: Sequence[Mapping[str, Any]], line_offset: int = 0) -> str | None:
    """The fenced findings block the simulator ends with when the prompt asks for one
    (None otherwise): one finding on line 1 of the first context file whose first line has
    text, quoting that line and suggesting it with :data:`SUGGESTED` appended, its severity
    chosen by the conversation's hash; ``line_offset``:
    its line numbers are off by that many (its quote is still line 1's). Its words come on
    top of ``answer_words``."""
    prompt = "".join(message_text(m) for m in conversation_key(messages))
    if _FINDINGS_ASK not in prompt:
        return None
    if _SYNTHESIS_ASK in prompt:  # a split review's synthesis restates what its parts found
        restated = _restated(prompt)
        if restated is None:
            return None
        return f"```json\n{json.dumps({'findings': restated}, indent=2, ensure_ascii=False)}\n```\n"
    findings = []
    first = _first_nonempty_file(prompt)
    if first is not None:
        path, line, number = first
        digest = key_digest(messages)
        findings.append(
            {
                "path": path,
                "start_line": number + line_offset,
                "end_line": number + line_offset,
                "quote": line,
                "severity": ("critical", "major", "minor", "nit")[int(digest[:2], 16) % 4],
                "category": "correctness",
                "title": "Simulated finding on the first line",
                "message": f"The simulator flags line 1 of {path} ({digest[:8]}).",
                "suggestion": line.removesuffix("\r") + SUGGESTED + "\n",
            }
        )
    body = json.dumps({"findings": findings}, indent=2, ensure_ascii=False)
    return f"```json\n{body}\n```\n"


#: The synthesis template's heading over the parts' reviews.
_SYNTHESIS_ASK = "# The parts' reviews"
#: A fenced ``json`` block (backticks or tildes, as the package's reader takes them).
_BLOCK_RE = re.compile(r"^(`{3,}|~{3,})json[^\n]*\n(.*?)^\1\s*$", re.M | re.S)


def findings_blocks(text: str) -> list[list[Any]]:
    """The ``findings`` lists of the fenced json blocks in ``text`` that hold one, in order."""
    blocks = []
    for m in _BLOCK_RE.finditer(text):
        try:
            data = json.loads(m.group(2))
        except ValueError:
            continue
        if isinstance(data, dict) and isinstance(data.get("findings"), list):
            blocks.append(data["findings"])
    return blocks


def _restated(prompt: str) -> list[dict[str, Any]] | None:
    """Every finding of the findings blocks in a synthesis's context (its parts' answers),
    restated as the template asks (path, lines, quote, category unchanged; its own title);
    None when they hold no block."""
    blocks = findings_blocks(prompt)
    if not blocks:
        return None
    return [{**f, "title": f"Restated: {f['title']}"} for b in blocks for f in b]


def _first_nonempty_file(prompt: str) -> tuple[str, str, int] | None:
    """The path, first line and its number (a range's first, as its note says) of the first
    framed context file with text on that line."""
    for m in _FILE_RE.finditer(prompt):
        first_line = prompt[m.end() :].split("\n", 1)[0]
        if first_line.strip() and first_line != m.group(3):
            return m.group(1), first_line, int(m.group(2) or 1)
    return None


def _before_tail(text: str, block: str) -> str:
    """``block`` inserted before the closing ``END-OF-REVIEW`` line."""
    head, sep, tail = text.rpartition("END-OF-REVIEW ")
    return f"{head}{block}\n{sep}{tail}"


@functools.lru_cache(maxsize=1024)
def _render(digest: str, words: int) -> str:
    rng = random.Random(int(digest[:16], 16))
    budget = words - 2
    lines: list[str] = []
    count = 0
    for line in _layout(rng):
        if count >= budget:
            break
        taken = " ".join(line).split()[: budget - count]
        lines.append(" ".join(taken))
        count += len(taken)
    while lines and not lines[-1]:
        lines.pop()
    tail = f"END-OF-REVIEW {digest[:8]}\n"
    return "\n".join(lines) + "\n\n" + tail if lines else tail


def _word(rng: random.Random) -> str:
    roll = rng.random()
    if roll < 0.05:
        return rng.choice(_SPECIAL)
    if roll < 0.10:
        return rng.choice(_CODE)
    return rng.choice(_VOCAB)


def _sentence(rng: random.Random) -> list[str]:
    words = [_word(rng) for _ in range(rng.randint(6, 14))]
    words[0] = words[0][:1].upper() + words[0][1:]
    words[-1] += "."
    return words


def _layout(rng: random.Random) -> Iterator[list[str]]:
    """An endless review-shaped stream of lines (lists of words; [] is a blank line)."""
    while True:
        yield ["##", *rng.choice(_TITLES).split()]
        kind = rng.choice(("paragraph", "bullets", "table"))
        if kind == "paragraph":
            for _ in range(rng.randint(1, 3)):
                yield _sentence(rng)
        elif kind == "bullets":
            for _ in range(rng.randint(2, 4)):
                yield ["-", *_sentence(rng)]
        else:
            yield ["|", "Area", "|", "Severity", "|", "Note", "|"]
            yield ["|---|---|---|"]
            for _ in range(rng.randint(2, 3)):
                note = [_word(rng) for _ in range(rng.randint(2, 5))]
                yield ["|", _word(rng), "|", rng.choice(_SEVERITIES), "|", *note, "|"]
        yield []


def message_text(message: Mapping[str, Any]) -> str:
    """A message's content as text ("" for the null content of a tool-call turn)."""
    content = message.get("content")
    return content if isinstance(content, str) else ""


def answer_so_far(messages: Sequence[Mapping[str, Any]]) -> tuple[str, bool]:
    """The part of the answer the client already has, and whether it came as a prefill.

    Prefill style: the last message is the assistant's. Directive style: the last message is
    the user's and an assistant message precedes it; the last assistant message counts.
    """
    if not messages:
        return "", False
    role = messages[-1].get("role")
    if role == "assistant":
        return message_text(messages[-1]), True
    if role == "user":
        for message in reversed(messages[:-1]):
            if message.get("role") == "assistant":
                return message_text(message), False
    return "", False


def prompt_token_estimate(messages: Sequence[Mapping[str, Any]]) -> int:
    """A tokenizer-free prompt size: words and punctuation, plus 4 per message."""
    return sum(count_prompt_tokens(message_text(m)) + 4 for m in messages)


@functools.lru_cache(maxsize=256)
def count_prompt_tokens(text: str) -> int:
    """Cached: the same large prompt is often sent again (a continuation resends it), and
    counting its tokens is most of the simulator's work per request."""
    return sum(1 for _ in _PROMPT_TOKEN_RE.finditer(text))


def word_count(text: str) -> int:
    """Words as the simulator counts them (``\\S+`` runs)."""
    return len(_WORD_RE.findall(text))


def _common_prefix_length(a: str, b: str) -> int:
    """Length of the longest common prefix; the usual case (b a prefix of a) is one call."""
    if a.startswith(b):
        return len(b)
    limit = min(len(a), len(b))
    offset = 0
    while offset < limit and a[offset] == b[offset]:
        offset += 1
    return offset


@dataclass(frozen=True)
class Plan:
    """What one request produces: reasoning tokens, echoed prefill, content tokens."""

    reasoning: tuple[str, ...]
    echo: str
    content: tuple[str, ...]
    finish_reason: str
    prompt_tokens: int
    cached_tokens: int | None = None
    """Prompt tokens the server's prefix cache served (:mod:`.prefix_cache`); None: none kept."""

    @property
    def completion_tokens(self) -> int:
        """Reasoning plus content tokens; the echo is not generated, so it costs nothing."""
        return len(self.reasoning) + len(self.content)

    @property
    def text(self) -> str:
        """The content a non-streaming response carries."""
        return self.echo + "".join(self.content)


def plan_completion(
    messages: Sequence[Mapping[str, Any]],
    *,
    max_tokens: int | None,
    answer_words: int,
    reasoning_words: int = 0,
    echo_prefill: bool = False,
    context_window: int | None = None,
    end_token: bool = False,
    directive_restarts: bool = False,
    findings_line_offset: int = 0,
    answer: str | None = None,
) -> Plan:
    """Resume the full answer where the client's copy stops, within the token budget.

    ``end_token``: ending costs a token, so an answer that fills the cap exactly is ``length``.
    ``directive_restarts``: a directive continuation starts the answer over.
    ``findings_line_offset``: the findings block's lines are off by this many.
    ``answer``: the whole answer, instead (structured output: :mod:`.structured`).
    """
    full = full_answer(messages, answer_words, findings_line_offset) if answer is None else answer
    so_far, prefill = answer_so_far(messages)
    offset = 0 if directive_restarts and not prefill else _common_prefix_length(full, so_far)
    remainder = TOKEN_RE.findall(full[offset:])
    budget = len(remainder) + reasoning_words if max_tokens is None else max_tokens
    thought = min(reasoning_words, budget)
    reasoning = tuple(_THINKING[i % len(_THINKING)] + " " for i in range(thought))
    content = tuple(remainder[: budget - thought])
    cut = thought < reasoning_words or len(content) < len(remainder)
    if end_token and max_tokens is not None and thought + len(content) >= max_tokens:
        cut = True
    prompt_tokens = prompt_token_estimate(messages)
    if context_window is not None:
        prompt_tokens = min(prompt_tokens, context_window)
    return Plan(
        reasoning=reasoning,
        echo=so_far if prefill and echo_prefill else "",
        content=content,
        finish_reason="length" if cut else "stop",
        prompt_tokens=prompt_tokens,
    )
