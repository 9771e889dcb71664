"""Running git safely and reading its objects, diffs and patches."""
