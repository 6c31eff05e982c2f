"""Every offline command of README.md and docs/*.md runs as written (``readme_commands``).

One test per page, so ``pytest -n`` spreads the pages over its workers: a page's steps run in
order in one scratch directory (``readme_commands.run_page``), with a copy of ``conf/``
(``PHYSASSIST_CONF_DIR``) that the page's YAML files are written into, so a later command sees
them (the worked example's ``conf/terminal/tight.yaml``); ``<id>`` is the sweep id the page's
last sweep printed. A block marked ``<!-- output of: <command> -->`` must hold what that command
printed, numbers within the shown rounding (``readme_commands.excerpt_problems``); when the
sample or the agents change, ``python tests/readme_commands.py --refresh <page>`` rewrites
them. A command must exit 0 and print no Python warning; a ``$`` line of a console block must
print its first shown line (``...`` stands for anything). The default eval and the two-job
sweep of "Is this difference real?" must also keep to the console's line budget. Each command
that is not run is one skipped test with its reason (``readme_commands.SKIPS``), so ``pytest
-rs`` lists them.
"""

from __future__ import annotations

import math
import re
import resource
import shlex
from pathlib import Path

import pytest
from fixtures_tracking import REPO, VENV_BIN
from readme_commands import REFRESH, SKIPS, commands, excerpt_problems, pages, run_page

LINE_BUDGET = 20  # result lines a default run may print (physassist/cli/console.py)
#: A progress line (``printing.progress_line``): a finished session's, or the heartbeat's with the
#: calls in flight. How many depends on the machine's speed, not on what the run found: the
#: budget counts the other lines, these are checked for their form.
PROGRESS = re.compile(
    r"sessions \d+/\d+  mRS so far (-|\d+\.\d)  unscored turns \d+"
    r"(  calls in flight \d+( \((\d+ retrying; )?slowest \d+ s\))?)?"
)
BUDGETED = ("physassist-eval", "physassist-eval -m model=baseline query=implicit,explicit")
#: A Python warning as the warnings module prints it: ``<file>:<line>: <Category>: <message>``.
PY_WARNING = re.compile(r"^\S+:\d+: \w*Warning: .*$", re.M)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _matches(expected: str, printed: str) -> bool:
    pattern = ".*".join(re.escape(part) for part in expected.split("..."))
    return any(re.fullmatch(pattern, line.strip()) for line in printed.splitlines())


PAGES = [p.relative_to(REPO).as_posix() for p in pages(REPO)]
RUN = [
    page for page in PAGES if any(step.command and not step.skip for step in commands(REPO / page))
]
NOT_RUN = [
    (page, step) for page in PAGES for step in commands(REPO / page) if step.command and step.skip
]


@pytest.mark.slow
@pytest.mark.parametrize("page", RUN)
def test_offline_commands_run_as_written(page: str, tmp_path: Path) -> None:
    failures, seconds, drifted = [], {}, False  # seconds: (wall, CPU of the command's processes)
    cpu = _children_cpu()
    for ran in run_page(REPO, page, tmp_path, VENV_BIN):
        step, printed = ran.step, ran.printed or ""
        if step.output_of:  # a number in the docs is what its command prints
            problems = (
                excerpt_problems(step.expected, printed)
                if ran.printed is not None
                else [f"the page does not run {step.output_of!r} before it"]
            )
            failures += [f"{step}: {problem}" for problem in problems]
            drifted = drifted or bool(problems)
            continue
        if ran.code is None:
            continue
        seconds[step.command] = (ran.seconds, round(_children_cpu() - cpu, 1))
        cpu = _children_cpu()
        if step.expected:
            if not _matches(step.expected[0], printed):
                failures.append(
                    f"{step}: printed {printed.strip()[-500:]!r}, README shows {step.expected[0]!r}"
                )
        elif ran.code != 0:
            failures.append(f"{step}: exit {ran.code}: {printed.strip()[-1500:]}")
        warned = PY_WARNING.findall(
            printed
        )  # what a command prints by default holds no Python warning
        if warned:
            failures.append(f"{step}: {len(warned)} Python warning(s), the first: {warned[0]}")
        if step.command in BUDGETED:
            failures += [f"{step}: {problem}" for problem in budget_problems(printed)]
    print("seconds per command (wall, CPU):", seconds)
    if drifted:
        failures.append(
            f"the page's numbers differ from what its commands print now: `{REFRESH} {page}` "
            "rewrites them"
        )
    assert not failures, "\n\n".join(failures)


def budget_problems(printed: str) -> list[str]:
    """More result lines than ``LINE_BUDGET``, or a ``sessions`` line not of the progress form."""
    lines = printed.splitlines()
    progress = [line for line in lines if line.startswith("sessions ")]
    results = len(lines) - len(progress)
    return [
        *(f"progress line not of its form: {line!r}" for line in progress
          if not PROGRESS.fullmatch(line)),
        *([f"{results} result lines (budget {LINE_BUDGET}):\n{printed}"]
          if results > LINE_BUDGET else []),
    ]  # fmt: skip


def test_the_line_budget_counts_result_lines_and_checks_the_progress_lines(capsys) -> None:
    """A loaded machine prints more heartbeats, not a longer result: those are checked for
    their form (as ``progress_line`` prints them) and left out of the budget, which a grown
    result block still exceeds."""
    from physassist.cli.printing import progress_line

    progress_line(3, 36, 41.25, 0)
    progress_line(3, 36, math.nan, 0, "calls in flight 2 (1 retrying; slowest 12 s)")
    progress_line(9, 36, 40.0, 1, "calls in flight 0")
    beats = capsys.readouterr().out.splitlines()
    result = [f"result line {k}" for k in range(LINE_BUDGET)]
    assert budget_problems("\n".join(beats * 4 + result)) == []
    grown = budget_problems("\n".join(beats + result + ["one more"]))
    assert len(grown) == 1 and grown[0].startswith(f"{LINE_BUDGET + 1} result lines")
    assert budget_problems("sessions 3/36 done\nok") == [
        "progress line not of its form: 'sessions 3/36 done'"
    ]


@pytest.mark.parametrize(
    ("page", "step"), NOT_RUN, ids=[f"{page}:{step.line}" for page, step in NOT_RUN]
)
def test_command_not_run_here(page: str, step) -> None:
    pytest.skip(f"{page} line {step.line}: {step.skip}: {step.command}")


def test_every_offline_command_is_run_or_skipped_for_a_reason() -> None:
    """The extractor finds the pages' commands, and skips only those it must."""
    steps = {page: commands(REPO / page) for page in PAGES}
    run = [s.command for page in PAGES for s in steps[page] if s.command and not s.skip]
    assert [s.command for s in steps["README.md"] if s.command and not s.skip] == [
        "physassist-eval"
    ]
    assert any(c.startswith("physassist-generate generator=scripted") for c in run)
    assert any(s.file == "conf/terminal/tight.yaml" for s in steps["docs/experiments.md"])
    every = [s for page in PAGES for s in steps[page] if s.command]
    assert all(
        s.skip
        for s in every
        if "OPENAI_API_KEY" in s.command or "/data/" in s.command or "://" in s.command
    )
    assert all(shlex.split(c) for c in run)
    used = {s.skip for s in every if s.skip}
    assert used == {reason for _, reason in SKIPS}, "a rule of SKIPS that no command needs"


TOUR_COMMAND = re.compile(r"`((?:physassist-\w+|mlflow|inspect) [^`]*)`")


def test_the_readme_tour_shows_commands_the_pages_run_or_skip_for_a_reason() -> None:
    """The README's tour is inline code, not run there: each command in it is a command of a
    topic page, so it is run (or skipped with its reason) on that page."""
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    tour = readme[readme.index("## A tour") : readme.index("\n## ", readme.index("## A tour") + 1)]
    shown = TOUR_COMMAND.findall(tour)
    on_pages = {s.command for page in PAGES[1:] for s in commands(REPO / page) if s.command}
    assert len(shown) >= 8 and not [c for c in shown if c not in on_pages], [
        c for c in shown if c not in on_pages
    ]


def test_an_output_block_is_compared_within_its_rounding_and_refreshed(tmp_path: Path) -> None:
    """``<!-- output of: ... -->``: the block after it is what its command printed, numbers
    within the decimals shown, any id for an id; ``refreshed`` rewrites only the numbers."""
    from readme_commands import refreshed

    page = tmp_path / "page.md"
    page.write_text(
        "```bash\nphysassist-eval -m model=a,b\n```\n\n<!-- output of: physassist-eval -m "
        "model=a,b -->\n"
        "```\nmodel  mRS [95% CI]\n-----  -----------------\nb      31.1 [27.0, 35.0]  p 0.66  "
        "4d3ca79a\n```\n"
    )
    [run, shown] = commands(page)
    assert run.command == shown.output_of == "physassist-eval -m model=a,b" and shown.lines == (
        6,
        9,
    )
    printed = (
        "job ...\nmodel  mRS [95% CI]\n-----  ------------------\nb      33.7 [29.7, 37.7]  p "
        "0.657  e54eb91a\n"
    )
    assert excerpt_problems(shown.expected, printed) == [
        "'b      31.1 [27.0, 35.0]  p 0.66  4d3ca79a': 31.1 (prints 33.7), 27.0 (prints 29.7), "
        "35.0 (prints 37.7)"
    ]
    new = refreshed(shown.expected, printed)
    assert new == [
        "model  mRS [95% CI]",
        "-----  ------------------",
        "b      33.7 [29.7, 37.7]  p 0.66  4d3ca79a",
    ]
    assert (
        excerpt_problems(new, printed) == []
    )  # 0.66 is 0.657 at the decimals shown; ids are any id
    assert excerpt_problems(["b 33.7 [29.7, 37.7] p 0.66 4d3ca79a", "not printed"], printed) == [
        "not printed: 'not printed'"
    ]
