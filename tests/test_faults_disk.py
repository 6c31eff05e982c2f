"""A full disk (ENOSPC, a tiny filled tmpfs) under Hydra's output dir or Inspect's log dir: one
line naming the directory, exit 2 (Hydra's: nothing ran) or 4 (Inspect's: the run is FAILED)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from fixtures_tracking import cli, search_runs, store_uri


@pytest.fixture
def full_dir(tmp_path) -> Iterator[Path]:
    """A 64 KiB tmpfs, filled (mounting needs root: skipped elsewhere)."""
    mount = tmp_path / "full"
    mount.mkdir()
    made = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mount)], capture_output=True)
    if made.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {made.stderr.decode().strip()}")
    try:
        subprocess.run(["dd", "if=/dev/zero", f"of={mount / 'fill'}", "bs=1k", "count=64"], capture_output=True)
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], capture_output=True)


def _eval(tmp_path: Path, run_dir: Path, log_dir: Path):
    return cli(
        [
            "physassist-eval",
            "inspect.limit=1",
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
        f"physassist-eval: error: Hydra's output dir {full_dir / 'out' / '.hydra'}: no space left on device (nothing ran)"
    ]


def test_a_full_inspect_log_dir_is_one_line_exit_4_and_the_run_failed(tmp_path, full_dir) -> None:
    proc = _eval(tmp_path, tmp_path / "out", full_dir / "logs")
    assert proc.returncode == 4, proc.stderr[-2000:]
    line = f"physassist-eval: fault: Inspect's log dir {full_dir / 'logs'}: no space left on device"
    assert proc.stderr.strip().splitlines()[-1] == line and "Traceback" not in proc.stderr
    [run] = search_runs(store_uri(tmp_path)).to_dict("records")
    assert run["status"] == "FAILED" and "no space left" in run["tags.physassist.end_reason"]
