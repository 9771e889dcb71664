"""Progress lines in tests: the counters a run or batch reports."""

from __future__ import annotations

import re

#: The counters every plain batch line starts with: finished of total, then the reviews in
#: flight (asking the server, each with one of the --jobs slots; or writing their answer),
#: then those waiting: ``[3/6 finished, 2 asking, 0 writing, 1 waiting]`` (after a halt or an
#: interrupt, the pending ones after the finished: ``[4/7 finished, 3 pending, ...]``).
COUNTERS = re.compile(
    r"^deepseek-review: \[(\d+)/(\d+) finished, (?:\d+ pending, )?(\d+) asking, (\d+) writing, "
    r"(\d+) waiting\] "
)


def counters(line: str) -> tuple[int, ...]:
    """(finished, total, asking, writing, waiting) of a plain batch line."""
    m = COUNTERS.match(line)
    assert m, line
    return tuple(map(int, m.groups()))
