"""The layers the README states, read from the code's own imports.

Every module of ``app/`` is parsed with ``ast`` (nothing is imported) and mapped to its layer;
an import of a module in a higher layer fails the test, whether it sits at module level, under
``if TYPE_CHECKING``, or inside a function: a function-level import is still a dependency, only a
later one. Each offender is printed as ``app/x.py:LINE imports app.y (layer A above layer B)``.
"""
from __future__ import annotations

import ast
from pathlib import Path

APP = Path(__file__).resolve().parent.parent / "app"

# ground first; each layer may import its own and the ones before it, never one after it
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("ground", ("app", "app.errors", "app.memo", "app.diagnostics", "app.native", "app.legend",
                "app.collector", "app.source_files", "app.config", "app.outputs")),
    ("validate", ("app.validate",)),
    ("gl", ("app.gl",)),
    ("cl", ("app.cl",)),
    ("window", ("app.window",)),
    ("sharing", ("app.sharing",)),
    ("scenes", ("app.scenes", "app.yuv", "app.postprocess")),
    ("schedule", ("app.schedule",)),
    ("session", ("app.session",)),
    ("ui", ("app.ui",)),
    ("trace", ("app.trace",)),
    ("commands", ("app.run", "app.commands", "app.lab", "app.bench", "app.attach")),
    ("cli", ("app.cli", "app.__main__")),
)

# layers that stand side by side though one is above the other: the first imports nothing of the
# second. The trace and the report are written where no panel exists (--no-overlay, the bench)
APART: dict[str, str] = {"app.trace": "app.ui"}

# (importing file, imported module): why it is allowed for now. Delete an entry when its reason is gone.
KNOWN: dict[tuple[str, str], str] = {}


def module_name(path: Path, app: Path = APP) -> str:
    parts = path.relative_to(app.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _within(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def layer_of(module: str) -> int:
    """The index in LAYERS of the longest prefix naming ``module`` (``app`` alone: ground)."""
    best, best_len = None, -1
    for index, (_, prefixes) in enumerate(LAYERS):
        for prefix in prefixes:
            if _within(module, prefix) and len(prefix) > best_len:
                best, best_len = index, len(prefix)
    if best is None:
        raise AssertionError(f"{module}: in no layer; add it to LAYERS in tests/test_layers.py")
    return best


def _is_module(name: str, app: Path) -> bool:
    where = app.parent.joinpath(*name.split("."))
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def app_imports(path: Path, app: Path = APP) -> list[tuple[int, str]]:
    """(line, module) of every import of a glshare module in ``path``, at any depth."""
    module = module_name(path, app)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join(base + ([node.module] if node.module else []))
            else:
                source = node.module or ""
            # ``from app import native`` imports the module app.native, not only the package app
            subs = [f"{source}.{alias.name}" for alias in node.names if _is_module(f"{source}.{alias.name}", app)]
            found += [(node.lineno, name) for name in subs] or [(node.lineno, source)]
    return sorted((line, name) for line, name in found if name == "app" or name.startswith("app."))


def upward_imports(app: Path = APP) -> tuple[list[str], set[tuple[str, str]]]:
    """The offending lines, and the KNOWN entries that were met."""
    offenders, met = [], set()
    for path in sorted(app.rglob("*.py")):
        rel = path.relative_to(app.parent).as_posix()
        module = module_name(path, app)
        own = layer_of(module)
        for line, name in app_imports(path, app):
            theirs = layer_of(name)
            if theirs > own:
                why = f"layer {LAYERS[theirs][0]} above layer {LAYERS[own][0]}"
            elif any(_within(module, low) and _within(name, high) for low, high in APART.items()):
                why = f"layer {LAYERS[own][0]} reads nothing of layer {LAYERS[theirs][0]}"
            else:
                continue
            if (rel, name) in KNOWN:
                met.add((rel, name))
                continue
            offenders.append(f"{rel}:{line} imports {name} ({why})")
    return offenders, met


def test_every_module_has_a_layer():
    for path in APP.rglob("*.py"):
        layer_of(module_name(path))


def test_no_upward_import():
    offenders, _ = upward_imports()
    assert not offenders, "imports against the layer order (README, Layout):\n" + "\n".join(offenders)


def test_known_exceptions_still_exist():
    """A KNOWN entry whose import is gone is deleted, so the list says what is left to do."""
    _, met = upward_imports()
    assert set(KNOWN) <= met, f"KNOWN entries no longer needed: {sorted(set(KNOWN) - met)}"


def test_the_check_sees_function_level_and_relative_imports(tmp_path):
    """The parser finds an import inside a function and a relative one (so the test can fail)."""
    app = tmp_path / "app"
    for folder in (app, app / "gl", app / "ui"):
        folder.mkdir(exist_ok=True)
        (folder / "__init__.py").write_text("")
    (app / "ui" / "panel.py").write_text("")
    (app / "gl" / "x.py").write_text("def f():\n    from app.ui import panel\n\n\nfrom ..ui import panel\n")
    offenders, _ = upward_imports(app)
    assert offenders == ["app/gl/x.py:2 imports app.ui.panel (layer ui above layer gl)",
                         "app/gl/x.py:5 imports app.ui.panel (layer ui above layer gl)"]


def _package(module: str) -> str:
    """``app.x`` for any module inside app/x/ (or app/x.py)."""
    return ".".join(module.split(".")[:2])


def test_no_cycle_between_packages():
    """Within a layer too (scenes, yuv and postprocess; the commands), the packages of app/ import
    one another one way only: no chain of imports leads from a package back to itself."""
    edges: dict[str, set[str]] = {}
    for path in APP.rglob("*.py"):
        own = _package(module_name(path))
        for _, name in app_imports(path):
            if name != "app" and _package(name) != own:
                edges.setdefault(own, set()).add(_package(name))
    for start in sorted(edges):
        came_from: dict[str, str] = {}  # package -> the one whose import reached it first
        stack = [start]
        while stack:
            here = stack.pop()
            for nxt in sorted(edges.get(here, ())):
                if nxt == start:
                    chain = [here]
                    while chain[-1] != start:
                        chain.append(came_from[chain[-1]])
                    raise AssertionError("a cycle: " + " -> ".join([*reversed(chain), start]))
                if nxt not in came_from:
                    came_from[nxt] = here
                    stack.append(nxt)
