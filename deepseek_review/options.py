"""The option table: every option once, with its type, default, scopes, checks and help.

Everything else is derived from :data:`OPTIONS`: the config file's keys and the
``DEEPSEEK_REVIEW_*`` variables (:mod:`.config`), the typer options of ``run``, ``continue``
and ``batch`` (:mod:`.cli.table`), the library's keywords (:mod:`.frontdoor`), the manifest's
JSON Schema (:mod:`.optschema`) and every check of a value, whatever its source. An error
names the option as the layer that reports it spells it (:func:`name_of`): ``--max-tokens`` on
the command line, ``max_tokens`` in a manifest or a library call; the environment and the
config file name their variable or file themselves.

Standard library only: the command line builds its options from this before anything heavy
is imported.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal

from .errors import ConfigError
from .optvalues import (
    AtLeast,
    BadValue,
    Between,
    Check,
    Matches,
    NotBlank,
    OneOf,
    Positive,
    parse_text,
    typed,
)

Kind = Literal["str", "int", "float", "bool", "json", "paths", "path"]

#: The commands whose options come from the table, and where else a value may come from.
COMMANDS = ("run", "continue", "batch", "show", "verify", "stats", "config")
ENTRY = "entry"
"""A manifest's ``[[review]]`` entry."""
DEFAULTS = "defaults"
"""A manifest's ``[defaults]``."""
CONFIG_FILE = "config_file"
"""The repository's ``.deepseek-review.toml`` or ``[tool.deepseek-review]``."""
ENV = "env"
"""``DEEPSEEK_REVIEW_<KEY>``."""
ENV_PREFIX = "DEEPSEEK_REVIEW_"

#: Per-server fields that make a server continue the final assistant message (prefill):
#: (body fields, fields of the prefilled message). Ollama and llama.cpp need none.
SERVER_PRESETS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "ollama": ({}, {}),
    "llama.cpp": ({}, {}),
    "vllm": ({"continue_final_message": True, "add_generation_prompt": False}, {}),
    "deepseek": ({}, {"prefix": True}),
}
CONTINUATION_STYLES = ("prefill", "directive")
REASONING_LEVELS = ("none", "low", "medium", "high", "max")
CHAT_APIS = ("openai", "ollama")
TOPIC_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,119}"


# --------------------------------------------------------------------------- the option


@dataclass(frozen=True)
class Option:
    """One option: what every layer needs to know about it, written once."""

    key: str
    kind: Kind
    default: Any
    help: str
    """One sentence, no final period; the default is added where one is shown."""
    scopes: frozenset[str]
    check: Check | None = None
    short: str | None = None
    negatable: bool = True
    """A boolean that has a ``--no-`` form (False: a plain switch)."""
    default_text: str | None = None
    """How the default reads in the help when it is not the value itself."""
    review: bool = False
    """An option of each review (``ReviewOptions``): given to ``batch`` it applies to every
    entry that does not set it."""
    refusal: str | None = None
    """Why a file under review may not set it (shown when a config file or manifest tries)."""
    origin_matters: bool = False
    """Which repository file chose the value is kept (``Setting.named_by``): a destination
    a file under review chose gets no key unless the operator chose it too."""
    required: frozenset[str] = frozenset()
    """Commands on which it must be given."""
    argument: bool = False
    """A positional argument of its commands."""
    cli_only: bool = False
    """A flag of the command line only (the library has a function for it instead)."""
    under_root: bool = False
    """A path the core takes relative to the repository root (typed ones are relative to the
    current folder: the command line converts them)."""

    @property
    def long_flag(self) -> str:
        return "--" + self.key.replace("_", "-")

    @property
    def env_name(self) -> str | None:
        return ENV_PREFIX + self.key.upper() if ENV in self.scopes else None

    @property
    def in_manifest(self) -> bool:
        return ENTRY in self.scopes or DEFAULTS in self.scopes

    def default_shown(self) -> str | None:
        """The default as the help shows it; None when there is nothing to show."""
        if self.default_text is not None:
            return self.default_text
        if self.default is None or self.default is False or self.default in ((), {}):
            return None
        if self.default is True:
            return "on"
        if isinstance(self.default, float):
            return f"{self.default:g}"
        return str(self.default)

    def help_text(self) -> str:
        """The help of every command that has the option (so they cannot drift apart)."""
        default = self.default_shown()
        return f"{self.help} (default: {default})." if default else f"{self.help}."

    def means(self) -> str:
        """How the operator sets it: its flag and, when it has one, its variable."""
        ways = [self.long_flag]
        if self.env_name:
            ways.append(self.env_name)
        if CONFIG_FILE in self.scopes:
            ways.append("the config file")
        return " or ".join([", ".join(ways[:-1]), ways[-1]] if len(ways) > 2 else ways)

    def not_here(self, place: str) -> str:
        """Why ``place`` (``the repository's config``, ``a manifest``) may not set it."""
        why = self.refusal or "it applies to the whole run, not to one review"
        return f"cannot be set in {place} ({why}); use {self.means()}"

    # -- values ---------------------------------------------------------------------------

    def typed(self, value: Any) -> Any:
        """``value`` as this option's type (an int is a float too), or :class:`BadValue`."""
        return typed(self.kind, value)

    def checked(self, value: Any) -> Any:
        """``value`` typed and within range, or :class:`BadValue` saying why not."""
        value = typed(self.kind, value)
        why = self.check.why(value) if self.check is not None else None
        if why is not None:
            raise BadValue(why)
        return value

    def parse_text(self, text: str) -> Any:
        """An environment variable's text as this option's value (typed and checked)."""
        return self.checked(parse_text(self.kind, text))


# --------------------------------------------------------------------------- the table

_ALL = frozenset(COMMANDS)
_REVIEW = frozenset({"run", "batch", ENTRY, DEFAULTS})
_SETTING = frozenset({CONFIG_FILE, ENV})
_CONT = frozenset({"continue"})
_SECRET = "a file under review must not choose which secret is sent"


_TABLE: tuple[Option, ...] = (
    Option("path", "str", None, "A receipt or answer file of the chain",
           frozenset({"continue", "show"}), argument=True),
    Option("manifest", "path", None, "The manifest: reviews.toml, or JSON Lines (.jsonl/.ndjson)",
           frozenset({"batch"}), argument=True),
    Option("jobs", "int", 4, "Reviews sent at the same time", frozenset({"batch"}) | _SETTING,
           short="-j", check=AtLeast(1)),
    Option("shard", "str", None,
           "K/N: run only shard K (0-based) of N, split by a hash of the topic",
           frozenset({"batch"})),
    Option("format", "str", None, "Manifest format: toml or jsonl", frozenset({"batch"}),
           default_text="from the file's extension", check=OneOf(("toml", "jsonl"))),
    Option("report", "path", None, "Write the JSON report to this file (replaced if there)",
           frozenset({"batch"})),
    Option("fail_fast", "bool", False, "Start no new review after the first failure",
           frozenset({"batch"}), negatable=False),
    Option("max_total_tokens", "int", None,
           "Start no new review once this run's receipts used this many tokens",
           frozenset({"batch"}), check=Positive()),
    Option("max_cost", "float", None,
           "Start no new review once this run's answers cost this much (at the prices setting)",
           frozenset({"batch"}), check=Positive()),
    Option("resume", "bool", True, "Adopt what earlier runs left; --no-resume redoes every entry",
           frozenset({"batch"})),
    Option("resume_from", "str", None,
           "Adopt earlier receipts only if committed unchanged in this git revision (in CI on a "
           "pull request: the base branch, so the change's own receipts are not believed)",
           frozenset({"batch"})),
    Option("context", "paths", (), "A file, folder or glob inside the repository (repeatable)",
           frozenset({"run", ENTRY, DEFAULTS}), short="-c", review=True, under_root=True),
    Option("prompt", "str", None, "The review request", frozenset({"run", ENTRY}), short="-p",
           review=True),
    Option("prompt_file", "path", None,
           "Read the review request from a file (in a manifest: relative to its folder)",
           frozenset({"run", ENTRY}), review=True),
    Option("topic", "str", "review", "Names the output files: <topic>_deepseek_<model>_<stamp>",
           frozenset({"run", ENTRY}), review=True,
           check=Matches(TOPIC_PATTERN, "use letters, digits, '.', '_' or '-' (at most 120), "
                         "starting with a letter or digit")),
    Option("model", "str", "deepseek-v4-flash", "Model name as the server knows it",
           _REVIEW | _SETTING, check=NotBlank(), review=True),
    Option("endpoint", "str", None, "Chat-completions URL or base URL",
           _REVIEW | _SETTING | _CONT,
           default_text="OLLAMA_HOST, else localhost:11434; continue: the receipt's",
           review=True, origin_matters=True),
    Option("api_key_env", "str", None, "Environment variable holding the API key",
           frozenset({"run", "continue", "batch", ENV}),
           default_text="OLLAMA_API_KEY, sent over https only", review=True, refusal=_SECRET),
    Option("repo_root", "str", None, "Repository root", _ALL,
           default_text="the enclosing git work tree, else ."),
    Option("output_dir", "str", "reviews", "Output folder, inside the repository",
           _REVIEW | _SETTING, default_text="reviews, at the repository root", review=True,
           under_root=True),
    Option("template", "str", "default",
           "Bundled template: default, spec-review, code-review or diff-review", _REVIEW | _SETTING,
           review=True),
    Option("template_file", "path", None,
           "A template file of your own (in a manifest: relative to its folder)",
           frozenset({"run", ENTRY, DEFAULTS}), review=True),
    Option("temperature", "float", 0.0,
           "Sampling temperature, always sent (Ollama forces 1.0 when absent)",
           _REVIEW | _SETTING, check=Between(0, 2), review=True),
    Option("max_tokens", "int", 8192, "Completion token cap, sent as max_tokens",
           _REVIEW | _SETTING, check=Positive(), review=True),
    Option("stream", "bool", True, "Stream the answer (SSE)", _REVIEW | _SETTING | _CONT,
           review=True),
    Option("extra_body", "json", {},
           "Extra JSON body fields, e.g. '{\"reasoning_effort\":\"none\"}'", _REVIEW,
           review=True),
    Option("max_file_bytes", "int", 200_000, "Refuse a context file larger than this",
           _REVIEW | _SETTING, check=Positive(), review=True),
    Option("max_context_bytes", "int", 400_000, "Refuse a larger context in total",
           _REVIEW | _SETTING, check=Positive(), review=True),
    Option("keep_reasoning", "bool", False, "Write the model's reasoning to <stem>.reasoning.md",
           _REVIEW | _CONT, review=True),
    Option("findings", "bool", False,
           "Write the findings block of the answer to <stem>.findings.json beside the last "
           "segment (a template that asks for one: code-review, spec-review)",
           _REVIEW | _SETTING, review=True),
    Option("max_continuations", "int", 3, "Continuation requests when cut off; 0 disables",
           _REVIEW | _SETTING | _CONT, check=AtLeast(0), review=True),
    Option("continuation_style", "str", "prefill",
           "prefill (assistant prefill, exact seam) or directive (a user message)",
           _REVIEW | _SETTING | _CONT, check=OneOf(CONTINUATION_STYLES), review=True),
    Option("continuation_model", "str", None, "Model for continuations",
           _REVIEW | _SETTING | _CONT, default_text="the review's", review=True),
    Option("continuation_max_tokens", "int", None, "Token cap for continuations",
           _REVIEW | _SETTING | _CONT, default_text="the review's", check=Positive(),
           review=True),
    Option("server", "str", "ollama",
           "Server kind, for the fields that make it continue a prefill: "
           + ", ".join(SERVER_PRESETS), _REVIEW | _SETTING | _CONT,
           check=OneOf(tuple(SERVER_PRESETS)), review=True),
    Option("api", "str", "openai",
           "openai (/v1/chat/completions) or ollama (Ollama's /api/chat, with num_ctx sized "
           "to the request)", _REVIEW | _SETTING, check=OneOf(CHAT_APIS), review=True),
    Option("prices", "json", {},
           "Prices per million tokens by model (or model@host), for stats: "
           "{\"deepseek-v4-flash\": {\"input\": 0.14, \"cache_hit\": 0.028, \"output\": 0.28}}",
           _SETTING, origin_matters=True),
    Option("reasoning", "str", None,
           "Reasoning: none, low, medium, high or max, sent as the --server kind reads it",
           _REVIEW | _SETTING, default_text="the model's", check=OneOf(REASONING_LEVELS),
           review=True),
    Option("continuation_extra_body", "json", {},
           "Extra JSON body fields for continuation requests only", _REVIEW | _CONT, review=True),
    Option("context_window", "int", None, "The model's context window; warn before sending more",
           _REVIEW | _SETTING, check=Positive(), review=True),
    Option("allow_truncated_prompt", "bool", False,
           "Keep an answer even if the server silently clipped the prompt", _REVIEW | _CONT,
           review=True),
    Option("allow_secrets", "bool", False,
           "Send context that looks like it holds secrets to a remote endpoint",
           frozenset({"run", "continue", "batch"}), negatable=False, review=True,
           refusal="a file under review must not switch the secret scan off"),
    Option("force", "bool", False, "Continue even if the last segment ended normally", _CONT,
           negatable=False),
    Option("max_attempts", "int", 5, "Attempts per request, retries included",
           frozenset({"run", "continue", "batch"}) | _SETTING, check=AtLeast(1)),
    Option("retry_wait", "float", 1.0,
           "First backoff in seconds; doubles per retry (with jitter), up to 30",
           frozenset({"run", "continue", "batch"}), check=AtLeast(0, "seconds")),
    Option("connect_timeout", "float", 10.0, "Seconds to connect",
           frozenset({"run", "continue", "batch"}) | _SETTING, check=Positive("seconds")),
    Option("read_timeout", "float", 600.0, "Seconds to wait for the next bytes",
           frozenset({"run", "continue", "batch"}) | _SETTING, check=Positive("seconds")),
    Option("total_timeout", "float", 1800.0, "Seconds one attempt may take in all, retries apart",
           frozenset({"run", "continue", "batch"}) | _SETTING, check=Positive("seconds")),
    Option("sign", "bool", False,
           "Sign each segment: an in-toto statement and its SSH signature beside the receipt",
           frozenset({"run", "batch", "continue"}) | _SETTING, cli_only=True),
    Option("signing_key", "str", None,
           "SSH key that signs: a private key file, or a .pub key whose private half ssh-agent "
           "holds", frozenset({"run", "batch", "continue", ENV}), cli_only=True,
           default_text="git's user.signingkey when gpg.format is ssh",
           refusal="a file under review must not choose which of your keys signs"),
    Option("allowed_signers", "str", None,
           "Who may sign reviews: an allowed-signers file in git's format",
           frozenset({"verify", ENV}), cli_only=True,
           default_text="git's gpg.ssh.allowedSignersFile",
           refusal="a file under review must not choose whose signatures are believed"),
    Option("require_signature", "bool", False,
           "An unsigned segment fails (default: a warning once allowed signers are given)",
           frozenset({"verify"}) | _SETTING, cli_only=True, negatable=False),
    Option("diff", "str", None,
           "Review a change: A..B (commit A to B), A...B (from their merge base), or A "
           "(meaning A...HEAD, a pull request)", frozenset({"run", ENTRY}), review=True),
    Option("staged", "bool", False, "Review the staged change (the index against HEAD)",
           frozenset({"run"}), negatable=False, review=True,
           refusal="a batch reviews commits, not what is staged at the moment"),
    Option("rev", "str", None,
           "Read the context files from this commit's blobs, not the working tree",
           frozenset({"run", ENTRY}), review=True),
    Option("since_last_review", "bool", False,
           "With a diff: review only what changed since the commit the newest review of the "
           "same topic pinned", frozenset({"run", ENTRY}), negatable=False, review=True),
    Option("diff_context", "int", 3, "Lines of context around each change of the diff",
           _REVIEW | _SETTING, check=AtLeast(0), review=True),
    Option("function_context", "bool", False,
           "Show the whole function around each change of the diff", _REVIEW | _SETTING,
           review=True),
    Option("whole_files", "bool", False, "Add the new version of every changed file, whole",
           _REVIEW, review=True),
    Option("renames", "bool", True, "Detect renamed files in the diff", _REVIEW | _SETTING,
           review=True),
    Option("include_lock_files", "bool", False, "Keep lock files in the diff", _REVIEW,
           review=True),
    Option("include_generated", "bool", False,
           "Keep files marked linguist-generated in the diff", _REVIEW, review=True),
    Option("include_binary", "bool", False,
           "Keep binary files in the diff (as git shows them: one line)", _REVIEW, review=True),
    Option("dry_run", "bool", False,
           "Check and plan everything and show what would be sent; send and write nothing",
           frozenset({"run", "batch"}), negatable=False, cli_only=True),
)  # fmt: skip

OPTIONS: dict[str, Option] = {o.key: o for o in _TABLE}


def default(key: str) -> Any:
    """The built-in default of ``key`` (the one place it is written)."""
    return OPTIONS[key].default


def in_scope(scope: str) -> tuple[Option, ...]:
    """The options of ``scope`` (a command, ``entry``, ``config_file``, ...), in table order."""
    return tuple(o for o in _TABLE if scope in o.scopes)


#: Keys an entry may hold, a manifest's ``[defaults]`` may hold, and a config file may hold.
ENTRY_KEYS: tuple[str, ...] = tuple(o.key for o in in_scope(ENTRY))
DEFAULT_KEYS: tuple[str, ...] = tuple(o.key for o in in_scope(DEFAULTS))
SETTING_KEYS: tuple[str, ...] = tuple(o.key for o in _TABLE if o.scopes & _SETTING)


# --------------------------------------------------------------------------- naming

_Namer = Callable[[Option], str]
_NAMERS: dict[str, _Namer] = {
    "key": lambda o: o.key,
    "flag": lambda o: o.long_flag,
    # In a manifest: its key, or, for what a manifest may not set, the flag of ``batch``.
    "manifest": lambda o: o.key if o.in_manifest else o.long_flag,
}
_naming: ContextVar[_Namer] = ContextVar("deepseek_review_naming", default=_NAMERS["key"])


def name_of(key: str) -> str:
    """``key`` as the layer reporting an error spells it: ``--max-tokens`` on the command
    line, ``max_tokens`` in a manifest and in a library call (the default)."""
    return _naming.get()(OPTIONS[key])


@contextmanager
def naming(style: Literal["key", "flag", "manifest"]) -> Iterator[None]:
    """Errors raised inside name options as ``style`` says (the CLI: ``flag``; a manifest's
    entries: ``manifest``)."""
    token = _naming.set(_NAMERS[style])
    try:
        yield
    finally:
        _naming.reset(token)


def check(key: str, value: Any) -> Any:
    """``value`` for ``key``, typed and checked; a :class:`~.errors.ConfigError` naming the
    option as :func:`name_of` spells it when it is out of range."""
    try:
        return OPTIONS[key].checked(value)
    except BadValue as exc:
        raise ConfigError(f"{name_of(key)} {exc.why}") from None
