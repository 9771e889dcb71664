"""The one exception tree of deepseek-review, and the exit code of each failure kind.

Every failure the user can cause or meet is a subclass of :class:`ReviewError`. The CLI catches
``ReviewError`` in exactly one place and exits with the subclass's ``exit_code``; the table
below is also docs/reference/exit-codes.md's table (a test checks they agree).

::

    ReviewError                      1   base; also "internal error" for unexpected failures
    ├── ConfigError                  2   bad option value or configuration (endpoint, limits, ...)
    ├── InputError                   3   bad input: context, prompt, template, manifest, receipt
    ├── TruncatedReview              4   the answer is still cut off after the continuations allowed
    ├── ServerError                  5   the server could not be reached or refused the request
    ├── BadResponse                  6   the server answered, but not with a usable completion
    ├── PromptTruncated              7   the server silently kept only part of the prompt
    ├── SecretsFound                 8   the context holds secrets and the endpoint is not local
    ├── VerificationFailed           9   a receipt, answer or chain does not check out
    ├── OutputError                 10   the output could not be written (permissions, disk, clash)
    ├── BatchIncomplete             11   some batch entries failed or stayed truncated
    ├── NoProgress                  12   a cut-off answer gained no text: the cap is too small
    ├── FindingsGate                13   findings at or above the --fail-on severity exist
    ├── PromptDoesNotFit            14   the server says the prompt would not fit its context
    ├── MissingObject               16   a git object a review needs or pins is not in the clone
    ├── NothingNew                   0   --since-last-review: nothing new to review (not a failure)
    └── Interrupted                130   stopped by SIGINT / SIGTERM; re-running resumes

Messages are one line, say what failed and where, and never contain secrets.
"""

from __future__ import annotations


class ReviewError(Exception):
    """Base of every failure deepseek-review reports to its user."""

    exit_code: int = 1
    #: A short hint printed after the message (what to do about it), or "".
    hint: str = ""

    def __init__(self, message: str, *, hint: str = "") -> None:
        super().__init__(message)
        if hint:
            self.hint = hint

    @property
    def message(self) -> str:
        return str(self.args[0]) if self.args else self.__class__.__name__


class ConfigError(ReviewError):
    """A bad option value or configuration: endpoint, limits, template name, ..."""

    exit_code = 2


class InputError(ReviewError):
    """Bad input the user gave us: a context path, prompt, manifest or receipt."""

    exit_code = 3


class TruncatedReview(ReviewError):
    """The answer is still cut off by the token cap after every continuation allowed."""

    exit_code = 4


class ServerError(ReviewError):
    """The server could not be reached, or refused the request (after retries)."""

    exit_code = 5
    #: Nothing came back at all (refused, or timed out): the server failed, not the
    #: request; a batch over several servers drains it.
    unreachable: bool = False


class BadResponse(ReviewError):
    """The server answered, but not with a completion we can use (after retries)."""

    exit_code = 6


class PromptTruncated(ReviewError):
    """The server silently kept only part of the prompt (Ollama clips at its context length)."""

    exit_code = 7


class SecretsFound(ReviewError):
    """The gathered context holds secrets and is about to leave this machine."""

    exit_code = 8


class VerificationFailed(ReviewError):
    """A receipt, answer file or chain does not check out."""

    exit_code = 9


class OutputError(ReviewError):
    """The answer, receipt or record could not be written."""

    exit_code = 10


class BatchIncomplete(ReviewError):
    """A batch finished with entries that failed or stayed truncated."""

    exit_code = 11


class NoProgress(ReviewError):
    """A segment cut off by the token cap added no answer text (a thinking model's reasoning
    used the whole cap, or the server only repeated the answer so far): continuing at the same
    cap would pay for the same nothing again."""

    exit_code = 12


class FindingsGate(ReviewError):
    """``findings --fail-on``: a finding at or above the severity given exists (the export
    is written first)."""

    exit_code = 13


class PromptDoesNotFit(ReviewError):
    """The server said, before anything was sent, that the prompt and the answer's cap would
    not fit the context it runs the model with (Ollama would silently drop part of it)."""

    exit_code = 14


class MissingObject(ReviewError):
    """A commit or blob a review names or a record pins is not in the repository (a shallow
    clone, a pruned branch): the message names it and the fix (``git fetch --unshallow``)."""

    exit_code = 16


class NothingNew(ReviewError):
    """``--since-last-review`` found nothing new since the last review: nothing is sent. Not
    a failure (a CI re-run of the same commit), so it exits 0 with one line; a batch skips
    the entry and goes on with the others."""

    exit_code = 0


class Interrupted(ReviewError):
    """Stopped by a signal; what was finished is kept and a re-run resumes."""

    exit_code = 130


#: Every failure kind with its exit code, in table order (docs/reference/exit-codes.md).
EXIT_CODES: tuple[tuple[int, type[ReviewError]], ...] = tuple(
    (cls.exit_code, cls)
    for cls in (
        ReviewError,
        ConfigError,
        InputError,
        TruncatedReview,
        ServerError,
        BadResponse,
        PromptTruncated,
        SecretsFound,
        VerificationFailed,
        OutputError,
        BatchIncomplete,
        NoProgress,
        FindingsGate,
        PromptDoesNotFit,
        MissingObject,
        NothingNew,
        Interrupted,
    )
)
