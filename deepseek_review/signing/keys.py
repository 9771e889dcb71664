"""Which key signs, and which allowed-signers file checks: the operator's choice only.

The signing key comes from ``signing_key`` (a flag or ``DEEPSEEK_REVIEW_SIGNING_KEY``), else
git's ``user.signingkey`` when ``gpg.format`` is ``ssh``; the allowed signers from
``allowed_signers`` (a flag or its variable), else git's ``gpg.ssh.allowedSignersFile``.
The repository's config file may set neither (see the options' refusals), and git's values
are read from the user's and the system's git config only, never the repository's own
``.git/config``: the repository under review must not choose which of the operator's keys
signs, nor whose signatures are believed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from deepseek_review.errors import ConfigError
from deepseek_review.git.runner import git_output
from deepseek_review.options.table import OPTIONS, name_of

if TYPE_CHECKING:  # loaded when a key is wanted: most runs do not sign
    from deepseek_review.signing.segments import SigningKey

_PROBE = b"deepseek-review: signing key check\n"


#: What makes ``git config`` (no scope) read other files than ``--global --get`` and
#: ``--system --get`` would: then each scope is asked on its own, as git reads them.
_SCOPE_CHANGERS = ("GIT_CONFIG", "GIT_CONFIG_NOSYSTEM")
_SCOPES = ("global", "system")


_Listed = dict[tuple[str, bytes], bytes] | None


def _git_setting(root: Path, name: str) -> str | None:
    """``name`` from the user's git config, else the system's (not the repository's)."""
    listed = _listed_settings(root)
    for scope in _SCOPES:
        if listed is None:  # git said nothing we can rely on: ask as git reads each scope
            out = git_output(root, "config", f"--{scope}", "--get", name)
        else:
            out = listed.get((scope, _canonical(name)))
        if out is not None and out.strip():
            return os.fsdecode(out.strip())
    return None


def _canonical(name: str) -> bytes:
    """``name`` as ``git config --list`` spells it: section and key lower-cased, the
    subsection between them as written."""
    section, _, rest = name.partition(".")
    middle, _, key = rest.rpartition(".")
    return ".".join(p for p in (section.lower(), middle, key.lower()) if p).encode()


def _listed_settings(root: Path) -> _Listed:
    """The last value of every key of the user's and the system's git config, by scope,
    from ONE ``git config --list`` (one process instead of one per scope);
    None when that could differ from asking ``--global`` and ``--system`` one by one.

    ``--no-includes``: ``--global --get`` does not follow includes either. The repository's
    own config is listed too (git reads it without a scope), and left out by its scope; a
    config git cannot parse fails the listing, and each scope is then asked on its own.
    """
    if any(v in os.environ for v in _SCOPE_CHANGERS):
        return None
    out = git_output(root, "config", "--list", "--show-scope", "--no-includes", "-z")
    if out is None:
        return None
    items = out.split(b"\0")
    got: dict[tuple[str, bytes], bytes] = {}
    for scope, entry in zip(items[0::2], items[1::2], strict=False):
        if scope in (b"global", b"system"):
            key, _, value = entry.partition(b"\n")
            got[(scope.decode(), key)] = value
    return got


def _path(text: str, what: str) -> Path:
    if text.startswith("key::"):
        raise ConfigError(f"{what}: a literal key (key::...) is not supported; name a key file")
    return Path(text).expanduser()


def signing_key(given: str | None, root: Path, env: Mapping[str, str] | None = None) -> SigningKey:
    """The key to sign with, checked by signing a probe: a one-line :class:`ConfigError`
    when it is missing, passphrase-protected without an agent, not in the agent, or when
    ssh-keygen is missing. Called before anything is sent."""
    from deepseek_review.signing import sshsig
    from deepseek_review.signing.segments import SigningKey

    what = name_of("signing_key")
    if given is None:
        fmt = _git_setting(root, "gpg.format")
        git_key = _git_setting(root, "user.signingkey") if fmt == "ssh" else None
        if git_key is None:
            variable = OPTIONS["signing_key"].env_name
            raise ConfigError(
                f"no signing key: give {what} or set {variable}, or set git's user.signingkey "
                "with gpg.format ssh"
            )
        given, what = git_key, "git's user.signingkey"
    path = _path(given, what)
    if not path.is_file():
        raise ConfigError(f"{what} {given}: no such key file")
    key = SigningKey(path, given, env)
    sshsig.ssh_keygen()
    try:
        sshsig.sign(_PROBE, path, env=env)
    except ConfigError as exc:
        if "passphrase" in exc.message:
            raise ConfigError(
                f"{what} {given}: protected by a passphrase and not in ssh-agent "
                "(add it with ssh-add; nothing here asks for a passphrase)"
            ) from None
        raise ConfigError(
            f"{what}: {exc.message} (a .pub key's private half must be in the ssh-agent "
            "SSH_AUTH_SOCK names)"
        ) from None
    return key


def allowed_signers(given: str | None, root: Path) -> Path | None:
    """The allowed-signers file the operator named (flag, variable, or git's
    ``gpg.ssh.allowedSignersFile``), or None."""
    if given is None:
        given = _git_setting(root, "gpg.ssh.allowedSignersFile")
        if given is None:
            return None
    path = _path(given, name_of("allowed_signers"))
    if not path.is_file():
        raise ConfigError(f"{name_of('allowed_signers')} {given}: no such file")
    return path


def configured_key(
    sign: bool | None, given: str | None, root: Path, env: Mapping[str, str] | None
) -> SigningKey | None:
    """:func:`signing_key` when signing is asked for (the arguments, else the environment
    and, for ``sign`` only, the config file), else None."""
    from deepseek_review.options.config import resolve, spellings
    from deepseek_review.options.table import naming_as

    settings = resolve(root, env=env)
    if not (settings["sign"] if sign is None else sign):
        return None
    if given is not None:
        return signing_key(given, root, env)
    # The key the environment named is blamed on its variable, not on a flag never typed.
    with naming_as(spellings({"signing_key": settings.items["signing_key"]})):
        return signing_key(settings["signing_key"], root, env)
