"""The shape of the code, checked: imports go one way with no circle, each terminal strategy
owns its control tool, and the library never names a strategy."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("physassist", "tasks", "generation", "solvers", "scorers")
#: Entry points sit above everything: the console scripts (physassist/cli, generation/cli),
#: Inspect's registry module and ``python -m`` mains. They may import everything below.
ENTRY_POINTS = (
    "physassist.cli",
    "generation.cli",
    "physassist._registry",
    "physassist.synth.__main__",
    "physassist.tracking.__main__",
)
#: Who may import whom: only down (a higher number imports a lower one), and never across
#: a pair of SIBLINGS.
#: The entry points themselves: each console script's module (pyproject.toml [project.scripts]),
#: Inspect's registry module and the ``python -m`` mains. What two of them share lives in the
#: library or in a CLI-support module of ``physassist/cli`` that is none of these.
ENTRY_MODULES = (
    *(
        spec.split(":")[0]
        for spec in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
            "scripts"
        ].values()
    ),
    "physassist._registry",
    *(
        ".".join(p.relative_to(ROOT).with_suffix("").parts)
        for package in PACKAGES
        for p in (ROOT / package).rglob("__main__.py")
    ),
)
#: What reads a composed config: Hydra and OmegaConf are the command line's (and its support
#: modules'); below it, code takes the typed ``physassist.experiment`` objects.
CONFIG_LIBRARIES = ("omegaconf", "hydra")
LAYERS = {"entry": 3, "tasks": 2, "generation": 2, "solvers": 1, "scorers": 1, "physassist": 0}
SIBLINGS = {frozenset({"tasks", "generation"}), frozenset({"solvers", "scorers"})}


def _modules() -> dict[str, Path]:
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join(parts)] = path
    return out


def _imported_names(module: str, path: Path) -> list[str]:
    """Every dotted name ``module`` imports anywhere in its file (also inside functions)."""
    found: list[str] = []
    package = module.split(".") if path.name == "__init__.py" else module.split(".")[:-1]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = ".".join(package[: len(package) - node.level + 1] + ([base] if base else []))
            names = [base] + [f"{base}.{a.name}" for a in node.names]
        found += names
    return found


def _imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """Project modules ``module`` imports anywhere in its file (also inside functions)."""
    found = set()
    for name in _imported_names(module, path):
        parts = name.split(".")
        while parts and ".".join(parts) not in known:
            parts.pop()
        target = ".".join(parts)
        if target and target != module and not module.startswith(target + "."):
            found.add(target)
    return found


def _layer(module: str) -> str:
    if module.startswith(ENTRY_POINTS):
        return "entry"
    return module.split(".")[0]


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    known = _modules()
    return {m: _imports(m, p, known) for m, p in known.items()}


def test_imports_never_run_back_up(graph) -> None:
    upward = sorted(
        (a, b)
        for a, targets in graph.items()
        for b in targets
        if LAYERS[_layer(b)] > LAYERS[_layer(a)] or frozenset({_layer(a), _layer(b)}) in SIBLINGS
    )
    assert upward == []


def test_no_entry_point_imports_another(graph) -> None:
    """Two commands share code through the library or a CLI-support module, never through
    one of them (``python -m physassist.synth`` runs ``cli/data_commands``, not ``cli/data``)."""
    assert set(ENTRY_MODULES) >= {
        "physassist.cli.eval",
        "generation.cli",
        "physassist.synth.__main__",
    }
    crossing = sorted((a, b) for a in ENTRY_MODULES for b in graph[a] if b in ENTRY_MODULES)
    assert crossing == []


def test_below_the_command_line_nothing_reads_a_config_object() -> None:
    """Only the command line (and its support modules) imports Hydra or OmegaConf: what runs
    after composition takes the typed experiment (``physassist.experiment``) or a part of it."""
    readers = sorted(
        (module, name)
        for module, path in _modules().items()
        if _layer(module) != "entry"
        for name in _imported_names(module, path)
        if name.split(".")[0] in CONFIG_LIBRARIES
    )
    assert readers == []


def test_no_import_circle(graph) -> None:
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    circles: list[list[str]] = []

    def visit(v: str) -> None:  # Tarjan's strongly connected components
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                circles.append(sorted(component))

    for module in graph:
        if module not in index:
            visit(module)
    assert circles == []


def test_each_strategy_owns_its_control_tool_and_prompt() -> None:
    from physassist.cli.config import conf_dir  # conf/ as shipped (tests/shipped_conf.py)
    from physassist.options import values
    from physassist.vocab import LANGUAGES, PREPARE_TO_ANSWER
    from solvers.terminal import CONTROL_TOOLS, STRATEGIES

    assert (
        set(STRATEGIES)
        == set(values("terminal"))
        == {p.stem for p in (conf_dir() / "terminal").glob("*.yaml")}
    )
    for name, cls in STRATEGIES.items():
        strategy = cls()
        for language in LANGUAGES:
            assert strategy.rule(language), f"{name}: no prompts/terminal_{name}_{language}.txt"
        if cls.control is not None:
            assert cls.control.schema["name"] == cls.control.name and cls.control.reply
    assert CONTROL_TOOLS == {PREPARE_TO_ANSWER} | {
        c.control.name for c in STRATEGIES.values() if c.control
    }


def test_the_library_and_scorers_never_name_a_strategy() -> None:
    from solvers.terminal import STRATEGIES

    names = [
        f'"{n}"' for n in STRATEGIES if n != "prepare_to_answer"
    ]  # that one is also the released format's
    for package in ("physassist", "scorers", "tasks"):
        for path in (ROOT / package).rglob("*.py"):
            if path.name == "options.py":  # the terminal option's declaration lists them
                continue
            text = path.read_text(encoding="utf-8")
            assert not [n for n in names if n in text], path


def test_the_builder_and_the_pure_library_never_load_inspect() -> None:
    """Sessions, the EHR tools, the cohort, the template builder, the PHM patient and the
    grounding check run without Inspect (``physassist-data build-sample`` never pays for
    importing it; a stored log is grounded by plain functions)."""
    pure = (
        "physassist.data",
        "physassist.ehr.tools",
        "physassist.synth",
        "generation.builder.build",
        "generation.builder.sample",
        "solvers.patient.phm",
        "solvers.patient.replay",
        "physassist.grounding.session",
    )
    code = (
        f"import importlib, sys\nfor m in {pure!r}: importlib.import_module(m)\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] == 'inspect_ai'))"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert out.stdout.strip() == "[]"
