"""Synthetic cohorts for the benchmarks, generated once and kept between runs.

    from cohorts import cohort
    path, seconds = cohort(100_000)   # seconds is None when the kept cohort was reused

Generating the 100k-subject cohort takes 25-35 min on the shared 2-core machine, and
``ehr_tools.py`` and ``source_check.py`` needed it on every run. A cohort is kept as
``<dir>/cohort-<size>-seed<seed>-<generator>``, where ``<generator>`` hashes the generator's
sources (``physassist/synth/*.py``): a changed generator makes a new cohort and the stale ones
of that size and seed are removed. It is written into a temporary sibling and renamed when
complete, so an interrupted generation is never reused. ``<dir>`` is ``$PHYSASSIST_COHORTS``,
else ``~/.cache/physassist/cohorts``.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import time
from pathlib import Path

import physassist.synth
from physassist.synth import generate_cohort


def default_dir() -> Path:
    env = os.environ.get("PHYSASSIST_COHORTS")
    return Path(env).expanduser() if env else Path.home() / ".cache" / "physassist" / "cohorts"


def generator_hash() -> str:
    """What the generated files depend on besides size and seed: the generator's code."""
    digest = hashlib.sha256()
    for path in sorted(Path(physassist.synth.__file__).parent.glob("*.py")):
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:12]


def cohort(size: int, seed: int = 0, root: Path | None = None) -> tuple[Path, float | None]:
    """The kept cohort of ``size`` subjects and ``seed``, generated first if absent; with the
    seconds its generation took (``None`` when reused)."""
    root = root or default_dir()
    root.mkdir(parents=True, exist_ok=True)
    prefix = f"cohort-{size}-seed{seed}-"
    final = root / f"{prefix}{generator_hash()}"
    for other in root.glob(f"{prefix}*"):  # another generator's, or a generation cut short
        if other != final:
            shutil.rmtree(other, ignore_errors=True)
    if final.is_dir():
        return final, None
    partial = root / f".{final.name}.{os.getpid()}.partial"
    shutil.rmtree(partial, ignore_errors=True)
    started = time.perf_counter()
    generate_cohort(partial, size, seed=seed)
    partial.rename(final)
    return final, round(time.perf_counter() - started, 1)
