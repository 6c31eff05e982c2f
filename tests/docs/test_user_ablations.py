"""A user's own ablation never breaks the project's tests (issue 44).

The worked example of docs/experiments.md writes ``conf/terminal/tight.yaml``; a user may also
leave a malformed file in a group. Planted in a copy of ``conf/``, the project's checks of the
options, the compositions and the strategies (the ones that failed with the worked example's
file in ``conf/``) still pass, because they check the shipped files (``tests/shipped_conf.py``),
and the malformed file gets the command's one-line error when it is chosen.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from fixtures_tracking import REPO, VENV_BIN
from readme_commands import commands
from shipped_conf import SOURCE_ENV, shipped, tracked

WORKED_EXAMPLE = "conf/terminal/tight.yaml"
MALFORMED = ("conf/terminal/mine.yaml", "mode: natural\nbudget: 16\nnudge: true\nnudg: false\n")
#: The checks that failed with the worked example's file in conf/ (the slow end-to-end ones of
#: the issue's nine run the installed command on the shipped conf/ the same way).
CHECKS = [
    "tests/cli/test_conf_compose.py::test_every_group_has_its_documented_options",
    "tests/cli/test_conf_compose.py::test_every_option_maps_to_valid_task_arguments[terminal]",
    "tests/cli/test_options.py::test_every_choice_of_a_group_is_one_yaml_file_and_nothing_else",
    "tests/cli/test_options.py::test_every_yaml_value_of_an_option_is_accepted",
    "tests/cli/test_options.py::test_the_schema_refuses_unknown_keys_and_wrong_types_in_one_line",
    "tests/cli/test_options.py::test_open_nodes_stay_open_and_a_users_complete_group_file_composes",
    "tests/docs/test_architecture.py::test_each_strategy_owns_its_control_tool_and_prompt",
]


def _planted(tmp_path: Path) -> Path:
    """A copy of the repository's conf/ with the worked example's file, as the page writes it,
    and a malformed file of the user's."""
    conf = tmp_path / "conf"
    shutil.copytree(REPO / "conf", conf)
    [example] = [s for s in commands(REPO / "docs" / "experiments.md") if s.file == WORKED_EXAMPLE]
    for name, text in ((WORKED_EXAMPLE, example.text), MALFORMED):
        (tmp_path / name).write_text(text)
    return conf


@pytest.mark.slow
def test_the_shipped_checks_pass_beside_a_users_files_and_a_malformed_one_is_one_line(
    tmp_path: Path,
) -> None:
    conf = _planted(tmp_path)
    names = {str(p) for p in shipped(conf, tracked())}
    assert (
        "terminal/natural.yaml" in names
        and "terminal/tight.yaml" not in names
        and "terminal/mine.yaml" not in names
    )
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PHYSASSIST_CONF_DIR"))
    }
    checks = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *CHECKS],
        cwd=REPO,
        env={**env, SOURCE_ENV: str(conf)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert checks.returncode == 0, checks.stdout[-3000:] + checks.stderr[-2000:]
    # the user's files work, or are refused in one line, where the user runs them: the command
    user_env = {**env, "PHYSASSIST_CONF_DIR": str(conf)}
    tight, mine = (
        subprocess.run(
            [str(VENV_BIN / "physassist-eval"), "--cfg", "job", f"terminal={name}"],
            cwd=tmp_path,
            env=user_env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        for name in ("tight", "mine")
    )
    assert tight.returncode == 0 and "budget: 2" in tight.stdout, tight.stderr[-2000:]
    assert mine.returncode == 2 and mine.stdout == ""
    assert mine.stderr.splitlines() == [
        "physassist-eval: error: terminal.nudg (terminal/mine.yaml): no such key; terminal has "
        "mode, budget, nudge; did you mean terminal.nudge?"
    ]
