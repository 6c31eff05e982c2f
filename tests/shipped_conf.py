"""``conf/`` as the project ships it, for the tests: a user's own ablations never break them.

A new ablation is a YAML file a user adds to a ``conf/`` group (docs/experiments.md's worked
example writes ``conf/terminal/tight.yaml``). The tests check what the project ships against its
declarations (each terminal option is a strategy, each group holds the options the table
declares, ...), so they run on a copy of ``conf/`` that holds only the shipped files: those git
tracks, and those the options table declares (a developer's new option before it is committed).
Outside a git checkout ``conf/`` is taken whole. ``tests/conftest.py`` points
``PHYSASSIST_CONF_DIR`` at the copy for the whole session (in-process compositions and the
commands the tests start); ``$PHYSASSIST_TEST_CONF`` names another ``conf/`` to copy from (a test
plants user files in one: ``tests/docs/test_user_ablations.py``).
"""

from __future__ import annotations

import atexit
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SOURCE_ENV = "PHYSASSIST_TEST_CONF"


def tracked(repo: Path = REPO) -> set[str] | None:
    """The files of ``conf/`` git tracks, relative to it; None outside a git checkout."""
    try:
        listed = subprocess.run(
            ["git", "-C", str(repo), "ls-files", "-z", "--", "conf"],
            capture_output=True,
            timeout=60,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    names = [n for n in listed.stdout.decode().split("\0") if n]
    if listed.returncode != 0 or not names:
        return None
    return {str(Path(n).relative_to("conf")) for n in names}


def declared() -> set[str]:
    """The group files the options table declares: ``<group>/<value>.yaml`` for each group
    option."""
    from physassist.options import OPTIONS

    return {
        f"{o.key.split('.')[0]}/{v}.yaml"
        for o in OPTIONS
        if o.values and o.identity
        for v in o.values
    }


def shipped(conf: Path, known: set[str] | None) -> list[Path]:
    """The files of ``conf`` (relative) that ship: ``known`` (tracked) or declared; all if
    unknown."""
    files = sorted(p.relative_to(conf) for p in conf.rglob("*") if p.is_file())
    if known is None:
        return files
    keep = known | declared()
    return [f for f in files if str(f) in keep]


def copy_shipped(conf: Path, dest: Path, known: set[str] | None) -> Path:
    for relative in shipped(conf, known):
        (dest / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(conf / relative, dest / relative)
    return dest


def use_shipped_conf() -> Path:
    """Copy the shipped ``conf/`` (of ``$PHYSASSIST_TEST_CONF``, else the repository's) to a
    temporary directory removed at exit, and make it the config directory of this process and
    the commands it starts."""
    source = Path(os.environ.get(SOURCE_ENV) or REPO / "conf")
    dest = Path(tempfile.mkdtemp(prefix="physassist-shipped-conf-"))
    atexit.register(shutil.rmtree, dest, ignore_errors=True)
    copy_shipped(source, dest / "conf", tracked())
    os.environ["PHYSASSIST_CONF_DIR"] = str(dest / "conf")
    return dest / "conf"
