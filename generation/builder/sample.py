"""``build_sample``: regenerate the committed sample benchmark under ``data/sample/``.

The sample is the synthetic cohort (``cohort/``, from :func:`physassist.synth.generate_cohort`)
plus sessions built from it (``sessions/<scenario>.jsonl``: 4 scenarios x 3 tiers x 3
sessions). Both are byte-for-byte reproducible from the seed; sessions are written to a
temporary folder first and swapped in only when the whole build succeeded.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from .build import BuildReport, build_sessions

#: Subjects in the sample cohort: every archetype x tier three times (7 archetypes x 3 tiers).
SAMPLE_SUBJECTS = 63
SESSIONS_PER_SLOT = 3


def sample_size(cohort: Path) -> int:
    """Subjects of the committed cohort (its ``meta/cohort.json``), else ``SAMPLE_SUBJECTS``."""
    meta = cohort / "meta" / "cohort.json"
    if meta.is_file():
        n = json.loads(meta.read_text(encoding="utf-8")).get("n_subjects")
        if isinstance(n, int) and n > 0:
            return n
    return SAMPLE_SUBJECTS


def build_sample(root: str | Path = "data/sample", seed: int = 0) -> BuildReport:
    """Regenerate ``<root>/cohort`` and ``<root>/sessions``; returns the session build report."""
    from physassist.synth import generate_cohort

    root = Path(root)
    cohort = root / "cohort"
    generate_cohort(cohort, sample_size(cohort), seed=seed)
    final = root / "sessions"
    root.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=root, prefix=".sessions-") as tmp:
        with tempfile.TemporaryDirectory(prefix="physassist-stores-") as cache:
            report = build_sessions(cohort, Path(tmp) / "sessions",
                                    sessions_per_slot=SESSIONS_PER_SLOT, seed=seed,
                                    cache_dir=cache)
        if final.exists():
            shutil.rmtree(final)
        shutil.move(str(Path(tmp) / "sessions"), final)
    report.files = [final / p.name for p in report.files]
    return report
