"""Batch manifests: planning every review of a ``batch`` run.

The manifest is read and its structure checked by :mod:`batch.manifest_file`; here each entry of
the selected shard becomes the :class:`~reviewing.pipeline.ReviewOptions` that ``run`` would build
from the same options, and is planned exactly as ``run --dry-run`` plans it. Precedence per
key: the entry, then the options given to ``batch``, then ``[defaults]``, then the
environment and the config file, then the built-in defaults.

Nothing is sent and nothing is written unless the whole manifest checks out: every problem
(unknown keys, missing or mistyped fields, bad or duplicate topics, context that matches
nothing or lies outside the repository, bad endpoints and templates) is collected with its
entry and line, and one :class:`ManifestError` carries them all. The structure of every entry
is checked; only the entries of the selected shard are planned (their context gathered).
Problems name options as a manifest does (``max_tokens``), or, for what only the operator
may set, as the flag of ``batch``.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from deepseek_review.batch.manifest_file import (
    FORMATS,
    Entry,
    Manifest,
    ManifestError,
    Problem,
    detect_format,
    read_manifest,
    scan_toml_lines,
)
from deepseek_review.batch.manifest_share import ContextCache, EntryOptions, PromptFiles
from deepseek_review.chat.types import RetryPolicy, Timeouts
from deepseek_review.context.gather import Output
from deepseek_review.context.places import refuse_git_data, refuse_ignored
from deepseek_review.context.ranges import parse_range
from deepseek_review.context.types import is_glob
from deepseek_review.errors import ConfigError, InputError, NothingNew, ReviewError
from deepseek_review.git.runner import find_repo_root, resolve_inside
from deepseek_review.options.config import Setting, configured_review_values, spellings
from deepseek_review.options.merge import merge
from deepseek_review.options.table import OPTIONS, name_of, naming, naming_as
from deepseek_review.options.values import BadValue
from deepseek_review.reviewing.pipeline import (
    DEFAULT_OUTPUT_DIR,
    ReviewOptions,
    ReviewPlan,
    plan_review,
)
from deepseek_review.reviewing.plan import SharedPlans
from deepseek_review.reviewing.setup import REVIEW_FIELDS, build_review_options
from deepseek_review.util.path_cache import paths_settled

if TYPE_CHECKING:
    from deepseek_review.reviewing.split_plan import SplitReview

__all__ = [
    "FORMATS",
    "ContextCache",
    "Entry",
    "Manifest",
    "ManifestError",
    "PlannedEntry",
    "PlannedManifest",
    "Problem",
    "Shard",
    "detect_format",
    "entry_options",
    "plan_manifest",
    "read_manifest",
    "scan_toml_lines",
    "shard_of",
]


# --------------------------------------------------------------------------- shards


@dataclass(frozen=True)
class Shard:
    """Shard ``index`` of ``count`` (0-based): the entries whose topic hashes to it."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 0 <= self.index < self.count:
            raise ConfigError(
                f"{name_of('shard')} {self.index}/{self.count}: need 0 <= K < N (K is 0-based), "
                "e.g. 0/4"
            )

    @classmethod
    def parse(cls, text: str) -> Shard:
        m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text)
        if not m:
            raise ConfigError(f"{name_of('shard')} {text!r}: expected K/N, e.g. 0/4 (K is 0-based)")
        return cls(int(m.group(1)), int(m.group(2)))

    def holds(self, topic: str) -> bool:
        return shard_of(topic, self.count) == self.index

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"


def shard_of(topic: str, count: int) -> int:
    """The shard of ``topic`` among ``count``: stable across machines, runs and Pythons."""
    return int(hashlib.sha256(topic.encode("utf-8")).hexdigest()[:16], 16) % count


# --------------------------------------------------------------------------- options


class KeyRefused(InputError):
    """A refusal of the file one key names (``prompt_file``, ``context``): reported at the
    line that sets the key."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(message)
        self.key = key


def _line_of(manifest: Manifest, entry: Entry, exc: ReviewError) -> int | None:
    """The line a problem of ``entry`` is reported at: its key's, when the refusal is of one."""
    key = exc.key if isinstance(exc, KeyRefused) else ""
    if key in entry.key_lines:
        return entry.key_lines[key]
    return manifest.default_key_lines.get(key, entry.line)


@contextmanager
def _refused_at(key: str) -> Iterator[None]:
    """A refusal within, located at ``key``."""
    try:
        yield
    except InputError as exc:
        raise KeyRefused(key, exc.message) from None


def _inside_repo(manifest: Manifest, root: Path, key: str, value: str) -> Path:
    """A file a manifest names, relative to its folder; it must lie inside the repository
    (the manifest is a file under review: it must not send, or copy into a request record,
    a file from elsewhere on the machine), outside git's data, and not one git ignores."""
    if value.startswith("~") or Path(value).is_absolute():
        raise InputError(
            f"{key} {value}: must be a path relative to the manifest's folder, inside the "
            "repository"
        )
    path, rel = resolve_inside(root, str(manifest.folder / value), what=key)
    with _refused_at(key):
        refuse_git_data(root, value, path, what=key)
        refuse_ignored(root, [(key, value, rel)], by="a manifest")
    return path


def _named_files(root: Path, specs: Sequence[str]) -> list[tuple[str, str, str]]:
    """The context ``specs`` that name a file (not a folder or glob: git's listing leaves out
    what it ignores), as (key, spelled, repo-relative path); what does not resolve is left to
    gathering, which words its own refusal."""
    named = []
    for given in specs:
        try:  # a range names lines of the file before ``#L``: that file must not be ignored
            ranged = parse_range(given, lambda s: os.path.lexists(root / s))
        except ReviewError:
            continue
        spec = given if ranged is None else ranged.path
        if is_glob(spec) and not os.path.lexists(root / spec):
            continue
        try:
            resolved, rel = resolve_inside(root, spec, what="context path")
        except ReviewError:
            continue
        refuse_git_data(root, given, resolved, what=name_of("context"))
        named.append((name_of("context"), given, rel))
    return named


def _layer(values: Mapping[str, Any], source: str) -> dict[str, Setting]:
    """A manifest's table as a level of precedence: a file under review chose these."""
    return {
        k: Setting(k, v, source, "the manifest" if OPTIONS[k].origin_matters else None)
        for k, v in values.items()
    }


_KEYS = list(REVIEW_FIELDS)


def _levels_below(
    manifest: Manifest, overrides: Mapping[str, Any], base: Mapping[str, Setting]
) -> list[Mapping[str, Setting]]:
    """The levels of precedence under an entry: ``batch``'s options, ``[defaults]``, and the
    environment and config file (``base``)."""
    given = {k: Setting(k, v, "flag") for k, v in overrides.items()}
    return [given, _layer(manifest.defaults, "manifest [defaults]"), base]


def _settled(levels: Sequence[Mapping[str, Setting]]) -> dict[str, Setting]:
    """The levels under every entry merged once into one level: what they set, the first
    that sets a key winning (defaults left to each entry's merge), so that each entry's merge
    looks at two levels, not four, and gives the same settings."""
    return {k: s for k, s in merge(levels, _KEYS).items() if s.source != "default"}


def entry_options(
    manifest: Manifest,
    entry: Entry,
    *,
    overrides: Mapping[str, Any] | None = None,
    base: Mapping[str, Setting] | None = None,
    repo_root: str | None = None,
    retry: RetryPolicy | None = None,
    timeouts: Timeouts | None = None,
    prompt_files: PromptFiles | None = None,
    below: Sequence[Mapping[str, Setting]] | None = None,
    root: Path | None = None,
    shared: EntryOptions | None = None,
    pool: Sequence[str] = (),
) -> ReviewOptions:
    """The entry as :class:`ReviewOptions` (what ``run`` would build from the same options).

    ``below`` holds the levels under the entry (the options given to ``batch``,
    ``[defaults]``, the environment and config file) and ``root`` the repository root
    (``repo_root`` found), when the caller found them once for every entry; ``shared`` the
    options already built for entries like this one, and the outputs they all leave out;
    ``pool`` the servers the operator spread the batch over (an entry may name any of them,
    as it may name the operator's one endpoint)."""
    overrides = overrides or {}
    if below is None:
        below = _levels_below(manifest, overrides, base or {})
    if root is None:
        root = find_repo_root(repo_root)
    key = "" if shared is None else shared.key(entry)
    known = None if shared is None else shared.get(key)
    values: dict[str, Setting] = {}
    if known is None:
        values = merge([_layer(entry.values, f"manifest entry {entry.index}"), *below], _KEYS)
        limit = values["max_context_bytes"].value
    else:
        limit = known[0]
    if "prompt_file" in entry.values:
        path = _inside_repo(manifest, root, "prompt_file", entry.values["prompt_file"])
        prompt = (prompt_files or PromptFiles()).read(path, entry.values["prompt_file"], limit)
    else:
        prompt = entry.values["prompt"]
    if known is not None:
        if isinstance(known[1], ReviewError):
            raise known[1]
        return replace(known[1], topic=entry.topic, prompt=prompt)
    try:
        operator = (*((overrides["endpoint"],) if "endpoint" in overrides else ()), *pool)
        options = _built_options(manifest, entry, values, prompt, root, retry, timeouts, operator)
    except ReviewError as exc:
        if shared is not None:
            shared.put(key, limit, exc)
        raise
    if shared is not None:
        options = replace(options, outputs=shared.outputs)
        shared.put(key, limit, options)
    return options


def _built_options(
    manifest: Manifest,
    entry: Entry,
    values: dict[str, Setting],
    prompt: str,
    root: Path,
    retry: RetryPolicy | None,
    timeouts: Timeouts | None,
    operator_endpoints: tuple[str, ...],
) -> ReviewOptions:
    """The entry's merged settings built into review options, its context and template file
    checked as what a file under review names."""
    # A manifest is a file under review: the files it names must not be ones git ignores.
    context = values["context"]
    if context.source.startswith("manifest"):
        specs = OPTIONS["context"].typed(context.value)
        with _refused_at("context"):
            refuse_ignored(root, _named_files(root, specs), by="a manifest")
    template_file = values["template_file"]
    if template_file.value is not None:
        path = _inside_repo(manifest, root, "template_file", template_file.value)
        values["template_file"] = Setting("template_file", str(path), template_file.source)
    values["topic"] = Setting("topic", entry.topic, f"manifest entry {entry.index}")
    return build_review_options(
        values,
        prompt,
        root,
        retry=retry,
        timeouts=timeouts,
        operator_endpoints=operator_endpoints,
    )


# --------------------------------------------------------------------------- planning


def _output_folders(
    manifest: Manifest, below: Sequence[Mapping[str, Setting]], root: Path
) -> list[Output]:
    """Every entry's output folder (every shard's), each named folder resolved once (most
    entries share one): an entry's problem with its own is reported when it is planned, so
    such a folder is passed over here."""
    fallback = merge(below, ["output_dir"])["output_dir"].value
    named = []
    for entry in manifest.entries:
        value = entry.values.get("output_dir")
        value = fallback if value is None else value
        named.append(value if isinstance(value, str) else DEFAULT_OUTPUT_DIR)
    folders = []
    for name in dict.fromkeys(named):
        try:
            _, rel = resolve_inside(root, name)
        except ReviewError:
            continue
        folders.append(Output(rel, "an output folder of the batch"))
    return folders


@dataclass(frozen=True)
class PlannedEntry:
    entry: Entry
    plan: ReviewPlan
    nothing_new: str | None = None
    """Why there is nothing to review (``since_last_review`` found no new commit): the entry
    is skipped; ``plan`` is then the whole change's, for its folder and the dry run."""
    split: SplitReview | None = None
    """``split = true`` and a context larger than one review: its parts (``plan`` is the
    first part's)."""

    @property
    def topic(self) -> str:
        return self.entry.topic


@dataclass(frozen=True)
class PlannedManifest:
    manifest: Manifest
    root: Path
    entries: tuple[PlannedEntry, ...]
    """The entries of the selected shard, in manifest order, each planned."""
    total_entries: int
    """Entries in the whole manifest (all shards)."""
    shard: Shard | None = None


def _checked_overrides(overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The options given to ``batch`` that apply to every entry, typed and checked."""
    out = {}
    for key, value in overrides.items():
        option = OPTIONS.get(key)
        if option is None or not option.review or "batch" not in option.scopes:
            raise ConfigError(f"batch override {key}: not an option of each review")
        try:
            out[key] = option.checked(value)
        except BadValue as exc:
            raise ConfigError(f"{name_of(key)} {exc.why}") from None
    return out


def _plan_entries(
    manifest: Manifest,
    selected: list[Entry],
    problems: list[Problem],
    overrides: Mapping[str, Any],
    base: Mapping[str, Setting],
    below: list[dict[str, Setting]],
    root: Path,
    *,
    env: Mapping[str, str] | None,
    retry: RetryPolicy | None,
    timeouts: Timeouts | None,
    plan: Callable[..., ReviewPlan],
    written: tuple[Output, ...],
    pool: Sequence[str],
) -> list[PlannedEntry]:
    """Each entry of ``selected`` planned, sharing what entries alike share; the problem of an
    entry that cannot be planned is added to ``problems``, located at its line."""
    prompt_files = PromptFiles()
    gather = ContextCache()
    shared = SharedPlans()
    shared_options = EntryOptions(written)
    # What an entry does not set itself is named where it was set: batch's flag (as the
    # caller spells it), the variable, the config file's key.
    names = spellings(below[0])
    names |= {k: name_of(k) for k, s in below[0].items() if s.source == "flag"}
    planned: list[PlannedEntry] = []
    for entry in selected:
        try:
            own = {k: n for k, n in names.items() if k not in entry.values}
            with naming("manifest"), naming_as(own):
                options = entry_options(
                    manifest,
                    entry,
                    overrides=overrides,
                    base=base,
                    repo_root=str(root),
                    retry=retry,
                    timeouts=timeouts,
                    prompt_files=prompt_files,
                    below=below,
                    root=root,
                    shared=shared_options,
                    pool=pool,
                )
                split = None
                try:
                    plan_one, split = _planned(options, env, plan, gather=gather, shared=shared)
                    nothing_new = None
                except NothingNew as exc:
                    whole = replace(options, git=replace(options.git, since_last_review=False))
                    plan_one = plan(whole, env, gather=gather, shared=shared)
                    nothing_new = exc.message
                # Sending names them so too (the Ollama pre-flight).
                plan_one = replace(plan_one, names=own) if own else plan_one
                planned.append(PlannedEntry(entry, plan_one, nothing_new, split))
        except ReviewError as exc:
            line = _line_of(manifest, entry, exc)
            problems.append(Problem(exc.message, entry.index, line, entry.topic))
    return planned


def _planned(
    options: ReviewOptions,
    env: Mapping[str, str] | None,
    plan: Callable[..., ReviewPlan],
    **kw: Any,
) -> tuple[ReviewPlan, SplitReview | None]:
    """An entry's plan, and its parts when it says ``split = true`` and does not fit one."""
    if not options.split:
        return plan(options, env, **kw), None
    from deepseek_review.batch.split_entry import plan_split_entry

    return plan_split_entry(options, env, plan, **kw)


def plan_manifest(
    path: Path,
    *,
    fmt: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    shard: Shard | None = None,
    repo_root: str | None = None,
    retry: RetryPolicy | None = None,
    timeouts: Timeouts | None = None,
    env: Mapping[str, str] | None = None,
    plan: Callable[..., ReviewPlan] = plan_review,
    outputs: Sequence[Output] = (),
    pool: Sequence[str] = (),
) -> PlannedManifest:
    """Read, check and plan a manifest; raise one :class:`ManifestError` listing every problem.

    Nothing is sent or written. ``overrides`` are the options given to ``batch`` that apply
    to every entry (checked here too). No entry's folders and globs send what the batch
    writes: any entry's output folder (all shards'), nor ``outputs`` (the report). ``pool``:
    the URLs of the servers the operator spread the batch over (an entry may name them).
    """
    overrides = _checked_overrides(overrides or {})
    manifest, problems = read_manifest(path, fmt)
    root = find_repo_root(repo_root)
    base = configured_review_values(root, env)
    selected = [e for e in manifest.entries if shard is None or shard.holds(e.topic)]
    planned: list[PlannedEntry] = []
    # Problems with the file or [defaults] would make every plan's complaint misleading.
    if not any(p.entry is None for p in problems):
        below = [_settled(_levels_below(manifest, overrides, base))]
        with paths_settled():  # the root and the output folders, resolved once for all
            written = (*_output_folders(manifest, below, root), *outputs)
            planned = _plan_entries(
                manifest,
                selected,
                problems,
                overrides,
                base,
                below,
                root,
                env=env,
                retry=retry,
                timeouts=timeouts,
                plan=plan,
                written=written,
                pool=pool,
            )
    problems.sort(key=lambda p: (p.entry is not None, p.entry or 0))
    if problems:
        raise ManifestError(manifest.shown, problems)
    return PlannedManifest(
        manifest=manifest,
        root=root,
        entries=tuple(planned),
        total_entries=len(manifest.entries),
        shard=shard,
    )
