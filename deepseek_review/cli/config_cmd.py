"""``config``: the effective settings and where each came from.

It shows everything it read, also what a run would refuse: each refused value is marked
under its setting with the error a run stops with, and then ``config`` exits 2 (the exit code
of a refused setting) after printing it all, with ``--json`` too (one document, with a
``refused`` list)."""

import sys
from typing import Any

from deepseek_review.cli.app import (
    JsonOpt,
    QuietOpt,
    RepoRootOpt,
    VerboseOpt,
    app,
    example,
    json_out,
    write_lines,
)
from deepseek_review.errors import ConfigError
from deepseek_review.util.textsafe import escape


def _plain(value: Any) -> Any:
    """A value read from TOML as JSON can hold it (a TOML date becomes its text)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return str(value)


@app.command(epilog=example("deepseek-review config --json"))
def config(
    repo_root: RepoRootOpt = None,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    """Show every setting's effective value and its source (flag, env, config file, default).

    Everything read is shown, also what a run would refuse: each refused value is marked
    under its setting with the error a run stops with, and then config exits 2 (with --json,
    the same document, listing them under "refused")."""
    from deepseek_review import api
    from deepseek_review.chat.endpoint import DEFAULT_KEY_ENV

    found = api.configuration(repo_root=repo_root)
    root, settings, refused = found.root, found.settings, found.refused
    key_default = f"{DEFAULT_KEY_ENV} (default, https only)"
    if as_json:
        data: dict[str, dict[str, Any]] = settings.as_dict()
        for item in data.values():
            item["value"] = _plain(item["value"])
        data["endpoint"]["resolved"] = found.endpoint
        if settings["api_key_env"] is None:
            data["api_key_env"]["effective"] = DEFAULT_KEY_ENV
        marks = [
            {"name": r.name, "key": r.key, "value": _plain(r.value), "message": r.message}
            for r in refused
        ]
        json_out({"repo_root": str(root), "settings": data, "refused": marks})
    else:
        width = max(len(k) for k in settings.items)
        lines = [f"repository root: {root}"]
        for name, s in settings.items.items():
            value = found.endpoint if name == "endpoint" and found.endpoint else s.value
            # Values come from the repository's config file and the environment: escaped
            # (before padding, so the columns line up) rather than written as they are.
            shown = "(not set)" if value is None else escape(str(value))
            if name == "api_key_env" and value is None:
                shown = key_default
            lines.append(f"{name:<{width}}  {shown:<44}  {s.source}")
            mine = [r for r in refused if r.key == name]
            lines += [f"{'':<{width}}  refused: {escape(r.message)}" for r in mine]
        others = [r for r in refused if r.key is None or r.key not in settings.items]
        if others:
            lines.append("refused (not a setting here):")
            lines += [f"  {escape(r.message)}" for r in others]
        write_lines(sys.stdout, lines)
    if refused:
        n = len(refused)
        raise ConfigError(
            f"{n} refused setting{'s' if n != 1 else ''}, marked above; first: {refused[0].message}"
        )
