"""What one option is (:class:`Option`) and the places a value may come from.

The rows themselves are in :mod:`options.rows`; :mod:`options.table` looks them up and names them.
Standard library only: the command line builds its options from this before anything heavy
is imported.
"""

from typing import Any, Literal, NamedTuple

from deepseek_review.options.values import BadValue, Check, parse_text, typed

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
#: Variables of ours that are not settings, read where they act: the endpoints an operator
#: allows (:mod:`deepseek_review.chat.endpoint`) and the crash points of the fault tests
#: (:mod:`deepseek_review.records.storage`). Named here so a misspelt variable is caught.
ALLOWED_ENV = ENV_PREFIX + "ALLOWED_ENDPOINTS"
#: The servers of a pool (``batch``, ``run --split``), as ``--endpoint`` given more than once:
#: read where the pool is made (:mod:`deepseek_review.batch.setup`), never from a file.
ENDPOINTS_ENV = ENV_PREFIX + "ENDPOINTS"
CRASH_ENV = ENV_PREFIX + "CRASH_AT"
#: The threshold of the ``deepseek-review`` pre-commit hook's gate, read by its entry in
#: ``.pre-commit-hooks.yaml`` (passed as ``findings --fail-on``), not by the tool.
HOOK_FAIL_ON_ENV = ENV_PREFIX + "HOOK_FAIL_ON"


# --------------------------------------------------------------------------- the option


class Option(NamedTuple):
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
    aliases: tuple[str, ...] = ()
    """Other spellings of the flag that a command line also accepts (an older name)."""
    repeats: frozenset[str] = frozenset()
    """Commands on which the flag may be given more than once, each value one more of its
    kind (``--endpoint``: the servers of a pool); one value elsewhere."""

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
