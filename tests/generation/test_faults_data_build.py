"""``physassist-data build`` writes a whole folder or nothing, with a manifest its readers check.

A second build into a folder that holds sessions is refused (exit 1, one line) unless
``--force``, which replaces the folder whole (no file of the first build is left). ``kill -9``
at chosen moments (while it builds, when its new folder appears beside the target, when the
manifest is being written into it) leaves the target as it was or as the new build made it,
never a mix, and the next build removes what the killed one left beside it. A folder whose
files do not match its manifest (a file changed, added or missing) is refused by ``validate``
and by ``physassist-eval`` in one line; a folder without a manifest (the released benchmark)
is read as it is, and the committed sample's manifest matches its files."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
from fixtures_tracking import VENV_BIN, cli

from physassist.data.folder import MANIFEST, check
from physassist.data.loader import SAMPLE_SESSIONS

BOUND_S = 60.0


def _build(out: Path, *extra: str) -> subprocess.CompletedProcess:
    return cli(
        [
            "physassist-data",
            "build",
            "--store",
            "sample",
            "--out",
            str(out),
            "--per-slot",
            "1",
            *extra,
        ],
        cwd=out.parent,
        timeout=120,
    )


def _names(folder: Path) -> set[str]:
    return {p.name for p in folder.iterdir()}


def _validate(folder: Path) -> subprocess.CompletedProcess:
    return cli(["physassist-data", "validate", str(folder)], cwd=folder.parent)


def test_a_second_build_is_refused_unless_forced_and_then_replaces_the_folder(tmp_path) -> None:
    out = tmp_path / "sessions"
    first = _build(out, "--scenarios", "med_safety", "diagnostic_workup")
    assert first.returncode == 0, first.stderr[-2000:]
    assert _names(out) == {"med_safety.jsonl", "diagnostic_workup.jsonl", MANIFEST}
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    second = _build(out, "--scenarios", "discharge_planning")
    assert second.returncode == 1
    assert second.stderr.strip().splitlines() == [
        f"physassist-data: error: {out} already exists and holds files; pass --force to replace "
        "it, or choose another folder"
    ]
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before
    forced = _build(out, "--scenarios", "discharge_planning", "--force")
    assert forced.returncode == 0, forced.stderr[-2000:]
    assert _names(out) == {
        "discharge_planning.jsonl",
        MANIFEST,
    }  # nothing of the first build is left
    manifest = json.loads((out / MANIFEST).read_text())
    assert (
        manifest["scenarios"] == ["discharge_planning"]
        and manifest["per_slot"] == 1
        and manifest["seed"] == 0
    )
    assert manifest["store"]["fingerprint"] and manifest["code"].startswith("physassist ")
    assert _names(tmp_path) == {"sessions"}  # nothing beside it
    check(out)


def _moment(proc: subprocess.Popen, ready) -> bool:
    """Wait for ``ready()`` (bounded); False if the build ended first."""
    deadline = time.monotonic() + BOUND_S
    while not ready():
        if proc.poll() is not None:
            return False
        assert time.monotonic() < deadline, "the moment never came"
        time.sleep(0.001)
    return True


@pytest.mark.parametrize("moment", ["building", "new folder", "manifest"])
def test_kill_9_at_any_moment_leaves_the_old_folder_or_the_new_one(tmp_path, moment) -> None:
    out = tmp_path / "sessions"
    assert _build(out, "--scenarios", "med_safety").returncode == 0
    old = {p.name: p.read_bytes() for p in out.iterdir()}
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen(
        [
            str(VENV_BIN / "physassist-data"),
            "build",
            "--store",
            "sample",
            "--out",
            str(out),
            "--per-slot",
            "1",
            "--scenarios",
            "diagnostic_workup",
            "--force",
        ],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    scratch = tmp_path / f".sessions.partial-{proc.pid}"
    ready = {
        "building": lambda: any(
            "duckdb" in _link(p) for p in Path(f"/proc/{proc.pid}/fd").glob("*")
        ),
        "new folder": scratch.exists,
        "manifest": (scratch / MANIFEST).exists,
    }[moment]
    assert _moment(proc, ready), f"the build ended before the moment {moment!r}"
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    now = {p.name: p.read_bytes() for p in out.iterdir()}
    assert now == old or set(now) == {"diagnostic_workup.jsonl", MANIFEST}, (moment, sorted(now))
    check(out)  # whichever it is, it matches its manifest
    assert _validate(out).returncode == 0
    again = _build(
        out, "--scenarios", "treatment_response", "--force"
    )  # removes what the killed build left
    assert again.returncode == 0, again.stderr[-2000:]
    assert _names(tmp_path) == {"sessions"} and _names(out) == {
        "treatment_response.jsonl",
        MANIFEST,
    }


def _link(path: Path) -> str:
    try:
        return os.readlink(path)
    except OSError:
        return ""


def test_a_folder_that_does_not_match_its_manifest_is_refused_by_validate_and_eval(
    tmp_path,
) -> None:
    out = tmp_path / "sessions"
    shutil.copytree(SAMPLE_SESSIONS, out)
    assert _validate(out).returncode == 0
    shutil.copy(out / "med_safety.jsonl", tmp_path / "kept.jsonl")
    with (out / "med_safety.jsonl").open("a") as handle:  # an edit by hand
        handle.write("\n")
    proc = _validate(out)
    assert proc.returncode == 1
    [line] = proc.stderr.strip().splitlines()
    assert line.startswith(
        f"physassist-data: error: {out}: its session files do not match its {MANIFEST} "
        "(med_safety.jsonl has changed)"
    ), line
    shutil.copy(tmp_path / "kept.jsonl", out / "med_safety.jsonl")
    shutil.copy(tmp_path / "kept.jsonl", out / "extra.jsonl")  # a file of another build
    proc = cli(
        [
            "physassist-eval",
            f"dataset.source={out}",
            "inspect.limit=1",
            "tracking=none",
            f"hydra.run.dir={tmp_path / 'out'}",
        ],
        cwd=tmp_path,
    )
    assert proc.returncode == 2
    [line] = proc.stderr.strip().splitlines()
    assert (
        line.startswith("physassist-eval: error: ") and "extra.jsonl was not built with it" in line
    ), line
    (out / "extra.jsonl").unlink()
    (out / "med_safety.jsonl").unlink()
    assert "med_safety.jsonl is missing" in _validate(out).stderr


def test_a_folder_without_a_manifest_is_read_as_it_is(tmp_path) -> None:
    released = tmp_path / "released"
    released.mkdir()
    for path in SAMPLE_SESSIONS.glob("*.jsonl"):
        shutil.copy(path, released / path.name)
    proc = _validate(released)
    assert proc.returncode == 0 and proc.stdout.startswith("OK: 36 sessions"), proc.stderr


def test_the_committed_sample_matches_its_manifest() -> None:
    check(SAMPLE_SESSIONS)
    manifest = json.loads((SAMPLE_SESSIONS / MANIFEST).read_text())
    assert manifest["store"] == {"source": "../cohort", "subjects": 63, "seed": 0}
    from physassist.data import load_sessions

    assert manifest["fingerprint"] == load_sessions("sample").fingerprint
