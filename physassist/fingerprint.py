"""The one fingerprint format: what a run read (its sessions, its EHR source) as 20 hex chars.

`physassist-data validate`, `physassist-ehr build`, the run's tags and its MLflow dataset
digests all print the string this function makes, so a number can be matched to its data by
eye. 20 hex chars (80 bits) fit MLflow's dataset digest column (36 chars) and a file name.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable

FINGERPRINT_CHARS = 20


def fingerprint(chunks: Iterable[str | bytes]) -> str:
    """sha256 over the concatenated ``chunks`` (text as UTF-8), first 20 hex chars."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)
    return digest.hexdigest()[:FINGERPRINT_CHARS]
