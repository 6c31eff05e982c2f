"""A full disk (ENOSPC, a tiny filled tmpfs) under Hydra's output dir or Inspect's log dir: one
line naming the directory, exit 2 (Hydra's: nothing ran) or 4 (Inspect's: the run is FAILED).
Inspect's log dir may also fill up during the run (a 40 KB tmpfs, empty at the start: the log's
start fits, three sessions of ~30 KB each do not): Inspect then ends the eval as an error
whose only record is the log it could not write, and the command says why in the same one
line, exit 4."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures_tracking import cli, search_runs, store_uri


def _tmpfs(tmp_path: Path, size_k: int, fill: bool) -> Iterator[Path]:
    """A tmpfs of ``size_k`` KiB, ``fill``ed or empty (mounting needs root: skipped elsewhere)."""
    mount = tmp_path / "full"
    mount.mkdir()
    made = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_k}k", "tmpfs", str(mount)], capture_output=True
    )
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        if fill:
            subprocess.run(
                ["dd", "if=/dev/zero", f"of={mount / 'fill'}", "bs=1k", f"count={size_k}"],
                capture_output=True,
            )
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


@pytest.fixture
def full_dir(tmp_path) -> Iterator[Path]:
    """A 64 KiB tmpfs, filled."""
    yield from _tmpfs(tmp_path, 64, fill=True)


@pytest.fixture
def small_dir(tmp_path) -> Iterator[Path]:
    """A 40 KiB tmpfs, empty: it fills up during a run."""
    yield from _tmpfs(tmp_path, 40, fill=False)


def _eval(tmp_path: Path, run_dir: Path, log_dir: Path, limit: int = 1):
    return cli(
        [
            "physassist-eval",
            f"inspect.limit={limit}",
            "inspect.display=none",
            f"inspect.log_dir={log_dir}",
            f"tracking.uri={store_uri(tmp_path)}",
            f"hydra.run.dir={run_dir}",
        ],
        cwd=tmp_path,
    )


def test_a_full_hydra_output_dir_is_one_line_and_exit_2(tmp_path, full_dir) -> None:
    proc = _eval(tmp_path, full_dir / "out", tmp_path / "logs")
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        f"physassist-eval: error: Hydra's output dir {full_dir / 'out' / '.hydra'}: no space left "
        "on device (nothing ran)"
    ]


def test_a_full_inspect_log_dir_is_one_line_exit_4_and_the_run_failed(tmp_path, full_dir) -> None:
    proc = _eval(tmp_path, tmp_path / "out", full_dir / "logs")
    assert proc.returncode == 4, proc.stderr[-2000:]
    line = f"physassist-eval: fault: Inspect's log dir {full_dir / 'logs'}: no space left on device"
    assert proc.stderr.strip().splitlines()[-1] == line and "Traceback" not in proc.stderr
    [run] = search_runs(store_uri(tmp_path)).to_dict("records")
    assert run["status"] == "FAILED" and "no space left" in run["tags.physassist.end_reason"]


def test_an_inspect_log_dir_that_fills_up_during_the_run_is_one_line_exit_4(
    tmp_path, small_dir
) -> None:
    proc = _eval(tmp_path, tmp_path / "out", small_dir / "logs", limit=3)
    assert proc.returncode == 4, proc.stderr[-2000:]
    assert proc.stderr.strip().splitlines() == [
        f"physassist-eval: fault: Inspect's log dir {small_dir / 'logs'}: no space left on device"
    ]
    [run] = search_runs(store_uri(tmp_path)).to_dict("records")
    assert run["status"] == "FAILED" and "no space left" in run["tags.physassist.end_reason"]
