"""The git options of a review (``ReviewOptions.git``), in a module of their own: the front
door reads them before planning is imported, to start a change's diff early
(:func:`.gitstart.head_start`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .errors import InputError
from .options import check, default, name_of

if TYPE_CHECKING:
    from .gitdiff import DiffSettings


@dataclass(frozen=True)
class GitOptions:
    """The git options of a review (``ReviewOptions.git``)."""

    diff: str | None = default("diff")
    staged: bool = default("staged")
    rev: str | None = default("rev")
    since_last_review: bool = default("since_last_review")
    diff_context: int = default("diff_context")
    function_context: bool = default("function_context")
    whole_files: bool = default("whole_files")
    renames: bool = default("renames")
    include_lock_files: bool = default("include_lock_files")
    include_generated: bool = default("include_generated")
    include_binary: bool = default("include_binary")

    def __post_init__(self) -> None:
        check("diff_context", self.diff_context)
        if self.staged and self.diff is not None:
            raise InputError(f"{name_of('staged')} and {name_of('diff')} cannot be used together")
        if self.rev is not None and (self.diff is not None or self.staged):
            raise InputError(
                f"{name_of('rev')} reads whole files from one commit; a change has its own "
                f"commits ({name_of('diff')}, {name_of('staged')})"
            )

    @property
    def settings(self) -> DiffSettings:
        from .gitdiff import DiffSettings

        return DiffSettings(self.diff_context, self.function_context, self.renames)
