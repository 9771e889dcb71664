"""scripts/check_sizes.py: the lint step that keeps modules and functions sized by concept."""

from __future__ import annotations

from pathlib import Path

import pytest

from scripts import check_sizes


def _function(name: str, body_lines: int, indent: str = "") -> str:
    """Source of a function ``def`` line, a docstring line and ``body_lines`` statements."""
    lines = [f"{indent}def {name}() -> int:", f'{indent}    """Docstring."""']
    lines += [f"{indent}    x{i} = {i}" for i in range(body_lines)]
    lines.append(f"{indent}    return 0")
    return "\n".join(lines) + "\n"


def _write(tmp_path: Path, text: str, name: str = "mod.py") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_a_function_over_sixty_lines_is_reported_with_its_line_and_size(tmp_path: Path) -> None:
    path = _write(tmp_path, "import os\n\n\n" + _function("too_long", 59))  # 62 lines

    found = check_sizes.check_file(path)

    assert [str(o) for o in found] == [f"{path}:4: function too_long is 62 lines (limit 60)"]


def test_a_function_of_sixty_lines_passes(tmp_path: Path) -> None:
    path = _write(tmp_path, _function("just_fits", 57))  # 60 lines

    assert check_sizes.check_file(path) == []


def test_a_method_counts_from_its_decorator_and_is_named_by_its_class(tmp_path: Path) -> None:
    text = "class Board:\n    @staticmethod\n" + _function("tally", 58, indent="    ")
    path = _write(tmp_path, text)

    (found,) = check_sizes.check_file(path)

    assert (found.line, found.what, found.lines) == (2, "function Board.tally", 62)


def test_a_nested_function_too_long_is_reported_besides_its_parent(tmp_path: Path) -> None:
    inner = _function("inner", 59, indent="    ")
    path = _write(tmp_path, "def outer() -> None:\n" + inner)

    names = [o.what for o in check_sizes.check_file(path)]

    assert names == ["function outer", "function outer.inner"]


def test_a_module_over_six_hundred_lines_is_reported(tmp_path: Path) -> None:
    path = _write(tmp_path, "x = 1\n" * 601)

    assert [str(o) for o in check_sizes.check_file(path)] == [
        f"{path}:1: module is 601 lines (limit 600)"
    ]


def test_the_command_fails_naming_each_oversize_and_passes_a_fine_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    fine = tmp_path / "fine"
    fine.mkdir()
    _write(fine, _function("short", 3))
    bad = tmp_path / "bad"
    bad.mkdir()
    _write(bad, _function("long", 70), name="slow.py")

    assert check_sizes.main([str(fine)]) == 0
    assert capsys.readouterr().out == ""
    assert check_sizes.main([str(fine), str(bad)]) == 1
    assert capsys.readouterr().out == f"{bad / 'slow.py'}:1: function long is 73 lines (limit 60)\n"
