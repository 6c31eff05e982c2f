"""How long the README's first command takes from a fresh clone, phase by phase, and what would
cut it (issue 25, target 5: install + default run <= 2 min on an idle machine).

Each run clones this tree's HEAD (``--ref``) into a temporary directory and runs the README's
first command there step by step, as a user on a fresh machine would: ``python3 -m venv .venv``,
the install, ``physassist-eval``. pip's cache is a new empty directory (``PIP_CACHE_DIR``, and
``UV_CACHE_DIR`` for uv) for the cold run, so every wheel is really downloaded from the package
index; the warm run (``--warm``) repeats the variant in a new clone and virtualenv with that
cache filled. pip runs in-process under a small wrapper that times its own phases without
changing what it does: resolve (with the metadata it fetches, the isolated build environment
for our ``setuptools`` backend and, in pip 23.2, the wheels' downloads), download (every wheel
fetched, inside or after the resolve), build (our editable wheel), install (unpacking, and
byte-compiling unless ``--no-compile``: compile), and each package's install.

A variant is one way to run the command (``VARIANTS``): the README's as it stands, pip upgraded
first (as ``.ci/run`` does), ``--no-compile``, without the ``dev`` extra (the test command then
installs it: timed as ``test install``), a lighter ``mlflow``, uv. Every process runs under
``nice -n 10`` (``--nice``). It prints per variant and cache state the medians of each phase's
wall and CPU seconds and the load average, and for the first cold run of each variant the MB
downloaded per package, the virtualenv's size and the top packages by size and by install time.
Every temporary directory is removed; each step has a timeout.

    python benchmarks/install.py [--variants readme,upgraded] [--repeats 2] [--warm] [--out f.json]
    python benchmarks/install.py --report f.json g.json    # the summary of saved runs together
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
STEP_TIMEOUT = 1200  # seconds: one venv, install or eval; a cold install is ~2-3 min idle

#: Run as ``python piptimed.py OUT.json install ...`` with the new virtualenv's python: pip in
#: this process, its phases timed by wrapping the functions that do them (outermost call only,
#: so an in-process build environment's nested pip is not counted twice). Names differ between
#: pip releases; a missing one is skipped.
PIP_TIMED = r"""
import compileall, importlib, json, sys, time
from collections import defaultdict

phases, cpu, packages = defaultdict(float), defaultdict(float), defaultdict(float)
depth = defaultdict(int)


def wrap(module, path, phase, per_package=False):
    try:
        owner = importlib.import_module(module)
        *parents, name = path.split(".")
        for parent in parents:
            owner = getattr(owner, parent)
        original = getattr(owner, name)
    except (ImportError, AttributeError):
        return

    def timed(*args, **kwargs):
        depth[phase] += 1
        started, cpu_started = time.perf_counter(), time.process_time()
        try:
            return original(*args, **kwargs)
        finally:
            depth[phase] -= 1
            elapsed = time.perf_counter() - started
            if depth[phase] == 0:
                phases[phase] += elapsed
                cpu[phase] += time.process_time() - cpu_started
                if per_package:
                    packages[str(args[0])] += elapsed

    setattr(owner, name, timed)


wrap("pip._internal.resolution.resolvelib.resolver", "Resolver.resolve", "resolve")
wrap("pip._internal.build_env", "BuildEnvironment.install_requirements", "build env")
wrap("pip._internal.build_env.installer", "SubprocessBuildEnvironmentInstaller.install",
     "build env")
wrap("pip._internal.build_env.installer", "InprocessBuildEnvironmentInstaller.install", "build env")
wrap("pip._internal.operations.prepare", "RequirementPreparer.prepare_linked_requirements_more",
     "download")
wrap("pip._internal.network.download", "Downloader.__call__", "download")
wrap("pip._internal.commands.install", "build", "build")
wrap("pip._internal.commands.install", "install_given_reqs", "install")
wrap("pip._internal.req.req_install", "install_wheel", "install one", per_package=True)  # pip 23
wrap("pip._internal.operations.install.wheel", "install_wheel", "install one",
     per_package=True)  # imported when called
wrap("compileall", "compile_file", "compile")

from pip._internal.cli.main import main

out, sys.argv = sys.argv[1], ["pip", *sys.argv[2:]]
try:
    code = main()
finally:
    phases.pop("install one", None)
    cpu.pop("install one", None)
    with open(out, "w") as f:
        json.dump({"phases": phases, "cpu": cpu, "packages": packages}, f)
sys.exit(code)
"""

#: Run with the new virtualenv's python: bytes on disk of each installed distribution (its files
#: and their ``__pycache__``), and of the whole virtualenv.
SIZES = r"""
import importlib.metadata as md, json, os, sys
sizes = {}
for dist in md.distributions():
    files = {str(dist.locate_file(f)) for f in dist.files or []}
    dirs = {os.path.dirname(p) for p in files if p.endswith(".py")}
    files |= {os.path.join(d, "__pycache__", c) for d in dirs
              if os.path.isdir(os.path.join(d, "__pycache__"))
              for c in os.listdir(os.path.join(d, "__pycache__"))
              if os.path.join(d, c.split(".")[0] + ".py") in files}
    name = dist.metadata["Name"]
    sizes[name] = sizes.get(name, 0) + sum(os.path.getsize(p) for p in files if os.path.isfile(p))
venv = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(sys.prefix) for f in fs
           if not os.path.islink(os.path.join(d, f)))
print(json.dumps({"packages": sizes, "venv": venv}))
"""

MLFLOW = '"mlflow>=3.17",'


@dataclass(frozen=True)
class Variant:
    """One way to run the README's first command (and, when it leaves the ``dev`` extra out,
    the install the test command then makes)."""

    name: str
    what: str
    install: tuple[str, ...] = ("-e", ".[dev]")
    upgrade_pip: bool = False
    uv: bool = False
    pyproject: tuple[tuple[str, str], ...] = ()  # (old, new) replacements in the clone
    test_install: tuple[str, ...] = ()  # the test command's install, timed apart
    expect_ui: bool = True  # mlflow's UI files installed (``mlflow ui`` works)


VARIANTS = {
    v.name: v
    for v in [
        Variant("readme", 'as the README says: the venv\'s pip, pip install -e ".[dev]"'),
        Variant(
            "upgraded", "pip upgraded first (as .ci/run does), then the same", upgrade_pip=True
        ),
        Variant(
            "no-compile",
            "pip upgraded, --no-compile (the first run compiles what it imports)",
            install=("--no-compile", "-e", ".[dev]"),
            upgrade_pip=True,
        ),
        Variant(
            "no-dev",
            'pip upgraded, pip install -e . (the test command then adds ".[dev]"): the README now',
            install=("-e", "."),
            upgrade_pip=True,
            test_install=("-e", ".[dev]"),
        ),
        Variant(
            "skinny",
            "pip upgraded, mlflow-skinny + sqlalchemy + alembic instead of mlflow (no UI)",
            upgrade_pip=True,
            expect_ui=False,
            pyproject=((MLFLOW, '"mlflow-skinny>=3.17", "sqlalchemy>=2", "alembic>=1.13",'),),
        ),
        Variant(
            "lean",
            'pip upgraded, pip install --no-compile -e . (the test command then adds ".[dev]")',
            install=("--no-compile", "-e", "."),
            upgrade_pip=True,
            test_install=("-e", ".[dev]"),
        ),
        Variant(
            "uv",
            'pip install uv, then uv pip install -e ".[dev]" (no bytecode compilation)',
            uv=True,
        ),
    ]
}


@dataclass
class Run:
    variant: str
    cache: str  # "cold" or "warm"
    wall: dict[str, float] = field(default_factory=dict)  # phase -> seconds
    cpu: dict[str, float] = field(default_factory=dict)
    pip_phases: dict[str, float] = field(default_factory=dict)  # wall seconds inside pip
    pip_cpu: dict[str, float] = field(default_factory=dict)  # CPU seconds of pip's own process
    pip_packages: dict[str, float] = field(default_factory=dict)  # install seconds per package
    downloads: dict[str, float] = field(default_factory=dict)  # MB per downloaded file
    local: list[str] = field(default_factory=list)  # wheels taken from a local index or directory
    cache_mb: float = 0.0
    sizes: dict[str, int] = field(default_factory=dict)
    venv_mb: float = 0.0
    load: list[float] = field(default_factory=list)  # 1-min load average before, after
    ok: bool = True
    notes: list[str] = field(default_factory=list)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def step(run: Run, phase: str, argv: list[str], cwd: Path, env: dict, nice: int, log: Path) -> str:
    """Run one command, add its wall and CPU seconds to ``phase``; return what it printed."""
    started, cpu = time.perf_counter(), _children_cpu()
    with open(log, "w") as out:
        proc = subprocess.run(
            ["nice", "-n", str(nice), *argv],
            cwd=cwd,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            timeout=STEP_TIMEOUT,
        )
    run.wall[phase] = run.wall.get(phase, 0.0) + time.perf_counter() - started
    run.cpu[phase] = run.cpu.get(phase, 0.0) + _children_cpu() - cpu
    printed = log.read_text(errors="replace")
    if proc.returncode:
        run.ok = False
        run.notes.append(f"{phase}: exit {proc.returncode}: {printed.strip()[-400:]}")
    return printed


UNITS = {"bytes": 1e-6, "kB": 1e-3, "MB": 1.0, "GB": 1e3}
DOWNLOADING = re.compile(r"Downloading (\S+) \(([\d.]+) (bytes|kB|MB|GB)\)")


def downloads(printed: str) -> dict[str, float]:
    """MB per file pip downloaded, from its ``Downloading name (size)`` lines."""
    found = {}
    for url, size, unit in DOWNLOADING.findall(printed):
        found[url.rsplit("/", 1)[-1]] = float(size) * UNITS[unit]
    return found


def tree_mb(path: Path) -> float:
    return (
        sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink()) / 1e6
    )


def run_once(
    variant: Variant, cache: Path, state: str, ref: str, nice: int, machine_config: bool
) -> Run:
    run = Run(variant.name, state, load=[os.getloadavg()[0]])
    with tempfile.TemporaryDirectory(prefix="physassist-install-") as tmp:
        tmp = Path(tmp)
        clone = tmp / "physassist"
        subprocess.run(
            ["git", "clone", "-q", "--no-hardlinks", str(REPO), str(clone)], check=True, timeout=300
        )
        subprocess.run(["git", "-C", str(clone), "checkout", "-q", ref], check=True, timeout=60)
        for old, new in variant.pyproject:
            pyproject = clone / "pyproject.toml"
            text = pyproject.read_text()
            assert old in text, f"{variant.name}: {old!r} not in pyproject.toml"
            pyproject.write_text(text.replace(old, new))
        venv = clone / ".venv"
        # As on a user's machine: this one sets PYTHONDONTWRITEBYTECODE, with which a module that
        # pip did not compile is compiled again by every process that imports it.
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONDONTWRITEBYTECODE")
        }
        env["PATH"] = os.pathsep.join(
            p for p in env["PATH"].split(os.pathsep) if not p.startswith(sys.prefix)
        )
        env.update(PIP_CACHE_DIR=str(cache / "pip"), UV_CACHE_DIR=str(cache / "uv"))
        if not machine_config:
            env.update(PIP_CONFIG_FILE=os.devnull, UV_NO_CONFIG="1")
            env.pop("PIP_FIND_LINKS", None)
        python3 = getattr(sys, "_base_executable", None) or shutil.which(
            "python3", path=env["PATH"]
        )
        step(run, "venv", [python3, "-m", "venv", ".venv"], clone, env, nice, tmp / "venv.log")
        env.update(VIRTUAL_ENV=str(venv), PATH=f"{venv / 'bin'}{os.pathsep}{env['PATH']}")
        python = str(venv / "bin" / "python")
        printed = ""
        if variant.upgrade_pip:
            printed += step(
                run,
                "pip upgrade",
                [python, "-m", "pip", "install", "--upgrade", "pip"],
                clone,
                env,
                nice,
                tmp / "upgrade.log",
            )
        if variant.uv:
            printed += step(
                run,
                "pip install uv",
                [python, "-m", "pip", "install", "uv"],
                clone,
                env,
                nice,
                tmp / "uv.log",
            )
            uv_out = step(
                run,
                "install",
                [str(venv / "bin" / "uv"), "pip", "install", *variant.install],
                clone,
                env,
                nice,
                tmp / "install.log",
            )
            for what, seconds, unit in re.findall(
                r"(Resolved|Prepared|Installed|Built|Audited) \d+ packages? in ([\d.]+)(ms|s)",
                uv_out,
            ):
                run.pip_phases[what.lower()] = float(seconds) / (1000 if unit == "ms" else 1)
        else:
            (tmp / "piptimed.py").write_text(PIP_TIMED)
            printed += step(
                run,
                "install",
                [
                    python,
                    str(tmp / "piptimed.py"),
                    str(tmp / "pip.json"),
                    "install",
                    *variant.install,
                ],
                clone,
                env,
                nice,
                tmp / "install.log",
            )
            if (tmp / "pip.json").exists():
                timed = json.loads((tmp / "pip.json").read_text())
                run.pip_phases, run.pip_cpu, run.pip_packages = (
                    timed["phases"],
                    timed["cpu"],
                    timed["packages"],
                )
        run.downloads = downloads(printed)
        run.local = sorted(set(re.findall(r"Processing (/\S+\.whl)", printed)))
        run.cache_mb = tree_mb(cache)
        step(
            run, "eval", [str(venv / "bin" / "physassist-eval")], clone, env, nice, tmp / "eval.log"
        )
        ui = list((venv / "lib").glob("python3*/site-packages/mlflow/server/js/build/index.html"))
        if bool(ui) != variant.expect_ui:
            run.notes.append(f"mlflow UI files {'present' if ui else 'missing'}")
        sized = json.loads(
            subprocess.run(
                [python, "-c", SIZES], capture_output=True, text=True, timeout=300, check=True
            ).stdout
        )
        run.sizes, run.venv_mb = sized["packages"], sized["venv"] / 1e6
        if variant.test_install:
            step(
                run,
                "test install",
                [python, "-m", "pip", "install", *variant.test_install],
                clone,
                env,
                nice,
                tmp / "test.log",
            )
    run.load.append(os.getloadavg()[0])
    return run


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


FIRST = ("venv", "pip upgrade", "pip install uv", "install", "eval")  # the README's first command


def report(runs: list[Run]) -> None:
    groups: dict[tuple[str, str], list[Run]] = {}
    for run in runs:
        groups.setdefault((run.variant, run.cache), []).append(run)
    print("\nmedians: wall s (CPU s); first command = venv + pip upgrade + install + eval")
    for (name, state), group in groups.items():
        phases = [p for p in (*FIRST, "test install") if any(p in r.wall for r in group)]
        cells = [
            f"{p} {median([r.wall[p] for r in group]):.1f} "
            f"({median([r.cpu[p] for r in group]):.1f})"
            for p in phases
        ]
        first = median([sum(r.wall.get(p, 0) for p in FIRST) for r in group])
        first_cpu = median([sum(r.cpu.get(p, 0) for p in FIRST) for r in group])
        pip = sorted({k for r in group for k in r.pip_phases})
        inside = ", ".join(
            f"{k} {median([r.pip_phases.get(k, 0) for r in group]):.1f}"
            + (
                f" ({median([r.pip_cpu.get(k, 0) for r in group]):.1f})"
                if any(r.pip_cpu for r in group)
                else ""
            )
            for k in pip
        )
        loads = [x for r in group for x in r.load]
        failed = [n for r in group for n in r.notes]
        print(
            f"{name:10s} {state}: FIRST COMMAND {first:.1f} s ({first_cpu:.1f} CPU) | "
            + ", ".join(cells)
            + (
                f" | inside install: {inside} | load {min(loads):.1f}-{max(loads):.1f}, "
                f"n={len(group)}"
            )
            + (f" | NOTES: {failed}" if failed else "")
        )
    for (name, state), group in groups.items():
        if state != "cold":
            continue
        run = group[0]
        top = sorted(run.downloads.items(), key=lambda kv: -kv[1])
        print(
            f"\n{name}: downloaded {sum(run.downloads.values()):.1f} MB in {len(run.downloads)} "
            f"files (cache after: {run.cache_mb:.0f} MB), {len(run.local)} wheels from local "
            f"files; venv {run.venv_mb:.0f} MB, {len(run.sizes)} distributions"
        )
        print(
            "  largest downloads (MB):",
            ", ".join(f"{f.split('-')[0]} {mb:.1f}" for f, mb in top[:15]),
        )
        print(
            "  largest installed (MB):",
            ", ".join(
                f"{n} {b / 1e6:.0f}"
                for n, b in sorted(run.sizes.items(), key=lambda kv: -kv[1])[:15]
            ),
        )
        if run.pip_packages:
            print(
                "  longest installs (s):",
                ", ".join(
                    f"{n} {s:.1f}"
                    for n, s in sorted(run.pip_packages.items(), key=lambda kv: -kv[1])[:15]
                ),
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--variants",
        default="readme,upgraded,no-compile,no-dev,skinny,uv",
        help=f"comma-separated, of: {', '.join(VARIANTS)}",
    )
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument(
        "--warm", action="store_true", help="also run each variant again with the cache filled"
    )
    parser.add_argument("--ref", default="HEAD", help="the commit of this repository to clone")
    parser.add_argument("--nice", type=int, default=10)
    parser.add_argument(
        "--machine-pip-config",
        action="store_true",
        help="keep this machine's pip configuration (its local index of wheels, as CI has); "
        "by default pip reads none (PIP_CONFIG_FILE=/dev/null): PyPI only, as on a user's machine",
    )
    parser.add_argument("--out", default=None)
    parser.add_argument(
        "--report",
        nargs="+",
        metavar="JSON",
        help="print the summary of saved runs (--out files) only",
    )
    args = parser.parse_args()
    if args.report:
        report(
            [Run(**r) for path in args.report for r in json.loads(Path(path).read_text())["runs"]]
        )
        return
    ref = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", args.ref], capture_output=True, text=True, check=True
    ).stdout.strip()
    chosen = [VARIANTS[name] for name in args.variants.split(",")]
    runs: list[Run] = []
    for _ in range(args.repeats):
        for variant in chosen:
            with tempfile.TemporaryDirectory(prefix="physassist-pipcache-") as cache:
                for state in ("cold", "warm") if args.warm else ("cold",):
                    run = run_once(
                        variant, Path(cache), state, ref, args.nice, args.machine_pip_config
                    )
                    runs.append(run)
                    print(
                        f"{variant.name} {state}: "
                        + ", ".join(f"{p} {run.wall[p]:.1f} s" for p in run.wall)
                        + f" (load {run.load[0]:.1f}-{run.load[1]:.1f})"
                        + ("" if run.ok else f" FAILED {run.notes}"),
                        flush=True,
                    )
                    if args.out:
                        Path(args.out).write_text(
                            json.dumps(
                                {
                                    "ref": ref,
                                    "machine_pip_config": args.machine_pip_config,
                                    "runs": [r.__dict__ for r in runs],
                                },
                                indent=1,
                            )
                        )
    report(runs)


if __name__ == "__main__":
    main()
