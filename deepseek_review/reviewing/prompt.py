"""Building the review prompt from a template and the context files, deterministically.

A template (``prompts/<name>.md``) has an optional ``<!-- system -->`` section and a
``<!-- user -->`` section; text before the first marker is a comment. Placeholders are
``{{ prompt }}``, ``{{ context }}``, ``{{ file_list }}`` and ``{{ topic }}``; they are
substituted in one pass, so a prompt or file that contains ``{{ context }}`` stays literal.

Each context file is framed by a heading naming its path and a backtick fence longer than any
backtick run in the file, so no file content can close its frame or fake another file's. A
range of a file (``path#L120-L260``) has a line under its heading, ``Only lines 120-260 of 900
of this file; the first line below is line 120 of the file.``, so the model cites the file's
own line numbers (and names the file by its path alone).

Messages are kept as *parts*: literal strings and :class:`FileRef` references. The request
body joins them; the request record keeps the references, so the exact body can be rebuilt
later from the repository without storing the files twice.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Protocol

from deepseek_review.context.gather import UNSAFE_NAME, ContextFile
from deepseek_review.context.types import LineRange
from deepseek_review.errors import ConfigError, InputError
from deepseek_review.git.runner import has_unsafe_chars
from deepseek_review.options.table import name_of
from deepseek_review.records.lines import describe
from deepseek_review.records.parts import (
    FileRef as FileRef,  # defined there: verify reads it, not prompts
)
from deepseek_review.records.parts import file_ref
from deepseek_review.util.resources import prompts_dir
from deepseek_review.util.textsafe import fence_for

DEFAULT_TEMPLATE = "default"
#: The version of the bundled templates in ``prompts/``; earlier ones stay in ``prompts/vN/``
#: (``--template default@v1``): a record names its template and hash, and a batch run with an
#: earlier version's requests resumes only with that version. Version 2 puts the files first
#: and the request last, so two reviews of the same files share the whole files prefix.
TEMPLATE_VERSION = 2
CONTINUATION_DIRECTIVE = "continuation"
#: The folder under ``prompts/`` of the templates the tool sends itself (the findings
#: extraction, the self-check): never a ``--template`` choice, found by
#: :func:`load_internal_template` alone.
INTERNAL_DIR = "internal"
PLACEHOLDERS = ("prompt", "context", "file_list", "topic")
_PLACEHOLDER_RE = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")
_MARKER_RE = re.compile(r"^<!--\s*(system|user)\s*-->[ \t]*$", re.MULTILINE)

_LANGUAGES = {
    ".py": "python", ".pyi": "python", ".md": "markdown", ".lean": "lean", ".rs": "rust",
    ".js": "javascript", ".mjs": "javascript", ".ts": "typescript", ".tsx": "tsx",
    ".json": "json", ".toml": "toml", ".yaml": "yaml", ".yml": "yaml", ".sh": "bash",
    ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp", ".go": "go",
    ".java": "java", ".kt": "kotlin", ".tex": "latex", ".rst": "rst", ".txt": "text",
    ".csv": "csv", ".html": "html", ".css": "css", ".sql": "sql", ".r": "r", ".jl": "julia",
    ".rb": "ruby", ".swift": "swift", ".cs": "csharp", ".hs": "haskell", ".ml": "ocaml",
}  # fmt: skip


Part = str | FileRef


@dataclass(frozen=True)
class Message:
    """A chat message as parts; ``content`` is the joined text that is sent."""

    role: str
    parts: tuple[Part, ...]
    content: str


@dataclass(frozen=True)
class Template:
    name: str
    """Template name (``default``) or the file it came from."""
    sha256: str
    """``sha256:`` of the template file's bytes, kept in the request record."""
    system: str | None
    user: str


def list_templates() -> list[str]:
    """Names of the bundled review templates a user can choose (not the internal ones)."""
    return sorted(
        p.stem
        for p in prompts_dir().glob("*.md")
        if "<!-- user -->" in p.read_text(encoding="utf-8")
    )


@lru_cache(maxsize=64)
def parse_template(text: str, name: str) -> Template:
    """A template's sections, checked (the same text parses once: a batch loads its template
    for every entry)."""
    digest = "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()
    markers = list(_MARKER_RE.finditer(text))
    roles = [m.group(1) for m in markers]
    if roles not in (["user"], ["system", "user"]):
        raise ConfigError(
            f"template {name}: needs a '<!-- user -->' section, optionally after a "
            "'<!-- system -->' section"
        )
    sections: dict[str, str] = {}
    for i, m in enumerate(markers):
        end = markers[i + 1].start() if i + 1 < len(markers) else len(text)
        sections[m.group(1)] = text[m.end() : end].strip("\n")
    found = [p for s in sections.values() for p in _PLACEHOLDER_RE.findall(s)]
    unknown = sorted(set(found) - set(PLACEHOLDERS))
    if unknown:
        raise ConfigError(f"template {name}: unknown placeholder {{{{ {unknown[0]} }}}}")
    for required in ("prompt", "context"):
        if found.count(required) != 1:
            raise ConfigError(
                f"template {name}: must use {{{{ {required} }}}} exactly once "
                f"(found {found.count(required)})"
            )
    system = sections.get("system")
    return Template(name=name, sha256=digest, system=system or None, user=sections["user"])


def load_template(name: str | None = None, file: str | Path | None = None) -> Template:
    """A bundled template by name, or a template file; ``default`` when neither is given."""
    if name is not None and file is not None:
        raise ConfigError(
            f"{name_of('template')} and {name_of('template_file')} cannot be used together"
        )
    if file is not None:
        from deepseek_review.util.safejson import read_file

        path = Path(file)
        try:
            text = read_file(path).decode("utf-8")  # sized before it is read
        except FileNotFoundError:
            raise InputError(f"template file {path}: no such file") from None
        except OSError as exc:
            raise InputError(f"template file {path}: cannot read ({exc.strerror or exc})") from None
        except UnicodeDecodeError as exc:
            raise InputError(f"template file {path}: cannot read ({exc})") from None
        return parse_template(text, str(path))
    name = name or DEFAULT_TEMPLATE
    bundled = _bundled_path(name)
    if bundled is None or not bundled.is_file():
        raise ConfigError(f"unknown template {name!r}; choose from {', '.join(list_templates())}")
    return parse_template(bundled.read_text(encoding="utf-8"), name)


def load_internal_template(name: str) -> Template:
    """A template the tool sends itself (``prompts/internal/<name>.md``), recorded by ``name``."""
    path = prompts_dir() / INTERNAL_DIR / f"{name}.md"
    return parse_template(path.read_text(encoding="utf-8"), name)


def _bundled_path(name: str) -> Path | None:
    """Where the bundled template ``name`` (``default``, or ``default@v1`` for an earlier
    version) is; None for a name no template can have."""
    m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9_.-]*?)(?:@v([1-9][0-9]*))?", name)
    if m is None or m.group(1) == CONTINUATION_DIRECTIVE:
        return None
    stem, version = m.group(1), m.group(2)
    if version is None or int(version) == TEMPLATE_VERSION:
        return prompts_dir() / f"{stem}.md"
    if int(version) > TEMPLATE_VERSION:
        return None
    return prompts_dir() / f"v{version}" / f"{stem}.md"


def continuation_directive() -> str:
    """The user message that asks a model to continue, for servers without prefill."""
    return (prompts_dir() / f"{CONTINUATION_DIRECTIVE}.md").read_text(encoding="utf-8").strip()


def _language(path: str) -> str:
    """The fence's language for ``path``'s extension (as ``posixpath.splitext`` splits it:
    a name's leading dots start no extension), or ""."""
    dot = path.rfind(".")
    if dot == -1:
        return ""
    ext = path[dot:]
    language = _LANGUAGES.get(ext) or _LANGUAGES.get(ext.lower())
    if language is None or (dot > 0 and path[dot - 1] not in "./"):
        return language or ""  # none, or a name character before the dot
    return language if path[path.rfind("/") + 1 : dot].strip(".") else ""  # ".py": no ext


def frame_parts(files: Sequence[ContextFile]) -> list[Part]:
    """Every file as a heading, an opening fence, its text (a reference) and a closing fence;
    a closing fence and the next heading are one literal string (as :func:`_merge` joins them).

    A name that could end its heading line or reorder it (see :func:`git.runner.has_unsafe_chars`)
    is refused here too, whoever built the list, so no name can fake another file's heading.
    """
    names = "".join([f.path for f in files])
    if not names.isascii() or has_unsafe_chars(names):  # else no name can be unsafe
        for f in files:
            if has_unsafe_chars(f.path):
                raise InputError(f"context file {f.path!r}: {UNSAFE_NAME}")
    parts: list[Part] = []
    append = parts.append
    n = len(files)
    languages: dict[str, str] = {}  # by file name: the language depends on nothing else
    close = ""  # the last file's closing fence and the blank line before the next heading
    for i, f in enumerate(files, start=1):
        path, text = f.path, f.text
        fence = fence_for(text)
        name = path[path.rfind("/") + 1 :]
        language = languages.get(name)
        if language is None:
            language = languages[name] = _language(name)
        lines = f.lines
        if lines is None:
            append(f"{close}## File {i} of {n}: {path}\n\n{fence}{language}\n")
            append(file_ref(path, f.sha256, f.size))
        else:
            note = _range_note(lines)
            append(f"{close}## File {i} of {n}: {path}\n\n{note}\n\n{fence}{language}\n")
            append(file_ref(path, f.sha256, f.size, lines.span))
        close = f"{fence}\n\n" if text.endswith("\n") or not text else f"\n{fence}\n\n"
    if close:
        append(close[:-1])
    return parts


def _range_note(lines: LineRange) -> str:
    """What the line under a ranged file's heading says (the heading names the path alone,
    as the templates tell the model to name it)."""
    span = describe(lines.span, lines.total)
    return f"Only {span} of this file; the first line below is line {lines.first} of the file."


def file_list(files: Sequence[ContextFile]) -> str:
    return "\n".join(
        [
            f"- {f.path} ({f.size} bytes)"
            if f.lines is None
            else f"- {f.path} ({describe(f.lines.span, f.lines.total)}, {f.size} bytes)"
            for f in files
        ]
    )


def _merge(parts: list[Part]) -> tuple[Part, ...]:
    """Join adjacent literal strings, so records stay small and rendering is canonical."""
    out: list[Part] = []
    for p in parts:
        if isinstance(p, str):
            if not p:
                continue
            if out and isinstance(out[-1], str):
                out[-1] = out[-1] + p
                continue
        out.append(p)
    return tuple(out)


def _extend(out: list[Part], parts: Sequence[Part]) -> None:
    """``out`` and ``parts`` (each merged: no empty or adjacent literal strings) as one merged
    list, joined at the seam only: a context of 20,000 files is not walked again."""
    if not parts:
        return
    first = parts[0]
    if isinstance(first, str) and out and isinstance(out[-1], str):
        out[-1] = out[-1] + first
        out.extend(parts[1:])
    else:
        out.extend(parts)


def _render_section(
    section: str, values: dict[str, str], context_parts: list[Part]
) -> tuple[Part, ...]:
    """A template section with its placeholders filled; ``context_parts`` merged already."""
    parts: list[Part] = []
    pos = 0
    for m in _PLACEHOLDER_RE.finditer(section):
        _extend(parts, _merge([section[pos : m.start()]]))
        key = m.group(1)
        _extend(parts, context_parts if key == "context" else _merge([values[key]]))
        pos = m.end()
    _extend(parts, _merge([section[pos:]]))
    return tuple(parts)


def join_parts(parts: Sequence[Part], texts: dict[str, str]) -> str:
    return "".join(p if isinstance(p, str) else texts[p.path] for p in parts)


class _Sized(Protocol):
    @property
    def size(self) -> int: ...


class _HasParts(Protocol):
    @property
    def parts(self) -> Sequence[str | _Sized]: ...


def text_bytes(messages: Iterable[_HasParts]) -> int:
    """The bytes of the messages' text as sent, counted from their parts (a file or answer
    reference counts its size), without encoding the files' text again."""
    total = 0
    for m in messages:
        literals = [p for p in m.parts if isinstance(p, str)]
        total += sum([p.size for p in m.parts if not isinstance(p, str)])
        if all(map(str.isascii, literals)):  # as many bytes as characters: nothing copied
            total += sum(map(len, literals))  # (a 5 MB diff is neither joined nor encoded)
        else:  # encoded; a lone surrogate counts as its three bytes
            total += len("".join(literals).encode("utf-8", "surrogatepass"))
    return total


def frame_messages(
    template: Template,
    prompt: str,
    topic: str,
    files: Sequence[ContextFile],
    lead: Sequence[str] = (),
) -> list[tuple[str, tuple[Part, ...]]]:
    """The chat messages of a review as (role, parts), the files' texts left out (a body
    can be written from the parts without joining them:
    :func:`.records.canonical.canonical_json`). ``lead``: framed text before the files in the
    context (a change under review)."""
    if not prompt.strip():
        raise InputError(
            f"the prompt is empty: give {name_of('prompt')}, {name_of('prompt_file')} or text "
            "on stdin"
        )
    if "\x00" in prompt:
        raise InputError("the prompt holds a NUL byte")
    values = {"prompt": prompt.strip("\n"), "topic": topic, "file_list": file_list(files)}
    context_parts: list[Part] = list(_merge(list(lead)))
    _extend(context_parts, frame_parts(files))
    return [
        (role, _render_section(section, values, context_parts))
        for role, section in (("system", template.system), ("user", template.user))
        if section is not None
    ]


def render_messages(
    template: Template,
    prompt: str,
    topic: str,
    files: Sequence[ContextFile],
    lead: Sequence[str] = (),
) -> list[Message]:
    """The chat messages of a review, texts joined: same inputs, same bytes."""
    texts = {f.path: f.text for f in files}
    return [
        Message(role=role, parts=parts, content=join_parts(parts, texts))
        for role, parts in frame_messages(template, prompt, topic, files, lead)
    ]
