"""``config``: the effective settings and where each came from."""

import sys

from ..textsafe import escape
from .app import JsonOpt, QuietOpt, RepoRootOpt, VerboseOpt, _json_out, _write_lines, app, example


@app.command(epilog=example("deepseek-review config --json"))
def config(
    repo_root: RepoRootOpt = None,
    as_json: JsonOpt = False,
    verbose: VerboseOpt = False,
    quiet: QuietOpt = False,
) -> None:
    # Its help: its summary in commands.COMMANDS.
    from .. import api

    found = api.configuration(repo_root=repo_root)
    root, settings = found.root, found.settings
    data = settings.as_dict()
    data["endpoint"]["resolved"] = found.endpoint
    if as_json:
        _json_out({"repo_root": str(root), "settings": data})
        return
    width = max(len(k) for k in settings.items)
    lines = [f"repository root: {root}"]
    for name, s in settings.items.items():
        value = found.endpoint if name == "endpoint" else s.value
        # Values come from the repository's config file and the environment: escaped (before
        # padding, so the columns line up) rather than written to the terminal as they are.
        shown = "(not set)" if value is None else escape(str(value))
        lines.append(f"{name:<{width}}  {shown:<44}  {s.source}")
    _write_lines(sys.stdout, lines)
