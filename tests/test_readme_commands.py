"""Every offline command of README.md and docs/*.md runs as written (``readme_commands``).

One test per page, so ``pytest -n`` spreads the pages over its workers: a page's steps run in
order in one scratch directory, with a copy of ``conf/`` (``PHYSASSIST_CONF_DIR``) that the
page's YAML files are written into, so a later command sees them (the worked example's
``conf/terminal/tight.yaml``); ``<id>`` is the sweep id the page's last sweep printed. A command
must exit 0; a ``$`` line of a console block must print its first shown line (``...`` stands for
anything). The default eval and the two-job sweep of "Is this difference real?" must also keep to
the console's line budget. Each command that is not run is one skipped test with its reason
(``readme_commands.SKIPS``), so ``pytest -rs`` lists them.
"""

from __future__ import annotations

import os
import re
import resource
import shlex
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from fixtures_tracking import REPO, VENV_BIN
from readme_commands import SKIPS, commands, pages

LINE_BUDGET = 20  # what a default run may print (physassist/cli/console.py)
BUDGETED = ("physassist-eval", "physassist-eval -m model=baseline query=implicit,explicit")
SWEEP_ID = re.compile(r"^sweep ([0-9a-f]{12})\b", re.M)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _matches(expected: str, printed: str) -> bool:
    pattern = ".*".join(re.escape(part) for part in expected.split("..."))
    return any(re.fullmatch(pattern, line.strip()) for line in printed.splitlines())


PAGES = [p.relative_to(REPO).as_posix() for p in pages(REPO)]
RUN = [page for page in PAGES if any(step.command and not step.skip for step in commands(REPO / page))]
NOT_RUN = [(page, step) for page in PAGES for step in commands(REPO / page) if step.command and step.skip]


@pytest.mark.slow
@pytest.mark.parametrize("page", RUN)
def test_offline_commands_run_as_written(page: str, tmp_path: Path) -> None:
    steps = commands(REPO / page)
    shutil.copytree(REPO / "conf", tmp_path / "conf")
    env = {**os.environ, "PHYSASSIST_CONF_DIR": str(tmp_path / "conf"), "PATH": f"{VENV_BIN}{os.pathsep}{os.environ['PATH']}"}
    env.pop("HYDRA_FULL_ERROR", None)
    sweep_id, failures, seconds = None, [], {}  # seconds: (wall, CPU of the command's processes)
    for step in steps:
        if step.skip:
            continue
        if step.file:
            target = tmp_path / step.file
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(step.text)
            continue
        command = step.command.replace("<id>", sweep_id or "<id>")
        started, cpu = time.monotonic(), _children_cpu()
        proc = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=1800)
        seconds[command] = (round(time.monotonic() - started, 1), round(_children_cpu() - cpu, 1))
        printed = proc.stdout + proc.stderr
        sweep_id = (SWEEP_ID.findall(printed) or [sweep_id])[-1]
        if step.expected:
            if not _matches(step.expected[0], printed):
                failures.append(f"{step}: printed {printed.strip()[-500:]!r}, README shows {step.expected[0]!r}")
        elif proc.returncode != 0:
            failures.append(f"{step}: exit {proc.returncode}: {printed.strip()[-1500:]}")
        if command in BUDGETED and len(printed.splitlines()) > LINE_BUDGET:
            failures.append(f"{step}: {len(printed.splitlines())} lines (budget {LINE_BUDGET}):\n{printed}")
    print("seconds per command (wall, CPU):", seconds)
    assert not failures, "\n\n".join(failures)


@pytest.mark.parametrize(("page", "step"), NOT_RUN, ids=[f"{page}:{step.line}" for page, step in NOT_RUN])
def test_command_not_run_here(page: str, step) -> None:
    pytest.skip(f"{page} line {step.line}: {step.skip}: {step.command}")


def test_every_offline_command_is_run_or_skipped_for_a_reason() -> None:
    """The extractor finds the pages' commands, and skips only those it must."""
    steps = {page: commands(REPO / page) for page in PAGES}
    run = [s.command for page in PAGES for s in steps[page] if s.command and not s.skip]
    assert [s.command for s in steps["README.md"] if s.command and not s.skip] == ["physassist-eval"]
    assert any(c.startswith("physassist-generate generator=scripted") for c in run)
    assert any(s.file == "conf/terminal/tight.yaml" for s in steps["docs/experiments.md"])
    every = [s for page in PAGES for s in steps[page] if s.command]
    assert all(s.skip for s in every if "OPENAI_API_KEY" in s.command or "/data/" in s.command or "://" in s.command)
    assert all(shlex.split(c) for c in run)
    used = {s.skip for s in every if s.skip}
    assert used == {reason for _, reason in SKIPS}, "a rule of SKIPS that no command needs"


TOUR_COMMAND = re.compile(r"`((?:physassist-\w+|mlflow|inspect) [^`]*)`")


def test_the_readme_tour_shows_commands_the_pages_run_or_skip_for_a_reason() -> None:
    """The README's tour is inline code, not run there: each command in it is a command of a
    topic page, so it is run (or skipped with its reason) on that page."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    tour = readme[readme.index("## A tour"):readme.index("\n## ", readme.index("## A tour") + 1)]
    shown = TOUR_COMMAND.findall(tour)
    on_pages = {s.command for page in PAGES[1:] for s in commands(REPO / page) if s.command}
    assert len(shown) >= 8 and not [c for c in shown if c not in on_pages], [c for c in shown if c not in on_pages]
