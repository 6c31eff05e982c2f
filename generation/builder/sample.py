"""``build_sample``: regenerate the committed sample benchmark under ``data/sample/``.

The sample is the synthetic cohort (``cohort/``, from :func:`physassist.synth.generate_cohort`)
plus sessions built from it (``sessions/<scenario>.jsonl``: 4 scenarios x 3 tiers x 3
sessions, and their ``manifest.json``). Both are byte-for-byte reproducible from the seed; the
sessions folder is replaced whole, in one rename, only when the whole build succeeded.
"""

from __future__ import annotations

import json
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
    subjects = sample_size(cohort)
    generate_cohort(cohort, subjects, seed=seed)
    # The manifest names the cohort by how it is made: the EHR store's fingerprint has the files'
    # times in it, which every checkout changes.
    store = {"source": "../cohort", "subjects": subjects, "seed": seed}
    with tempfile.TemporaryDirectory(prefix="physassist-stores-") as cache:
        return build_sessions(
            cohort,
            root / "sessions",
            sessions_per_slot=SESSIONS_PER_SLOT,
            seed=seed,
            cache_dir=cache,
            force=True,
            store_record=store,
        )
