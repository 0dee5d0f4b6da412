"""The code's shape the README promises (issue #34): no function or method in app/ over 80 lines,
counted from its ``def`` to its last line (its docstring and comments included), as parsed by ast;
and tests/ mirrors app/, a folder per package (tests/README.md)."""
from __future__ import annotations

import ast
from collections import Counter
from pathlib import Path

TESTS = Path(__file__).resolve().parent
APP = TESTS.parent / "app"
MAX_LINES = 80
# The folders of tests/ that are no package of app/: the suite every backend passes, the red team's scripts.
OWN_FOLDERS = frozenset({"contract", "redteam"})


def long_functions(root: Path, limit: int = MAX_LINES) -> list[str]:
    """``path:line name (n lines)`` of every function under ``root`` longer than ``limit`` lines."""
    found = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                lines = node.end_lineno - node.lineno + 1
                if lines > limit:
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} {node.name} ({lines} lines)")
    return found


def test_no_function_in_app_is_over_80_lines():
    assert long_functions(APP) == [], "split these into well-named pieces"


def test_the_count_finds_a_long_function(tmp_path):
    body = "\n".join(f"        x{i} = {i}" for i in range(MAX_LINES))
    (tmp_path / "m.py").write_text(f"def short():\n    return 1\n\n\nclass C:\n    def long(self):\n{body}\n")
    assert long_functions(tmp_path) == [f"{tmp_path.name}/m.py:6 long ({MAX_LINES + 1} lines)"]


def unmirrored_folders(tests: Path, app: Path) -> list[str]:
    """The folders of ``tests`` that name no package of ``app`` (and are not one of its own)."""
    return sorted(d.name for d in tests.iterdir() if d.is_dir() and not d.name.startswith((".", "__"))
                  and d.name not in OWN_FOLDERS and not (app / d.name / "__init__.py").is_file())


def shared_basenames(tests: Path) -> list[str]:
    """Module names two files under ``tests`` share: pytest's prepend import mode (no __init__.py)
    imports each test module by its basename, so a second one of the same name fails to collect."""
    names = Counter(p.name for p in tests.rglob("*.py") if p.name != "conftest.py")
    return sorted(name for name, n in names.items() if n > 1)


def test_tests_mirror_app():
    assert unmirrored_folders(TESTS, APP) == [], "a test folder names a package of app/ (tests/README.md)"
    assert shared_basenames(TESTS) == [], "rename one: pytest imports test modules by their basename"


def test_the_mirror_checks_find_a_stray_folder_and_a_shared_name(tmp_path):
    app, tests = tmp_path / "app", tmp_path / "tests"
    for d in (app / "gl", tests / "gl", tests / "contract", tests / "render"):
        d.mkdir(parents=True)
    (app / "gl" / "__init__.py").write_text("")
    for f in (tests / "test_x.py", tests / "gl" / "test_x.py", tests / "gl" / "conftest.py", tests / "conftest.py"):
        f.write_text("")
    assert unmirrored_folders(tests, app) == ["render"]
    assert shared_basenames(tests) == ["test_x.py"]
