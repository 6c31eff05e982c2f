"""The committed sample sessions load strictly in both languages and round-trip losslessly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from physassist.data import load_sessions, session_stats

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "sample" / "sessions"
pytestmark = pytest.mark.skipif(
    not any(SAMPLE.glob("*.jsonl")), reason=f"no sample sessions at {SAMPLE} yet"
)


@pytest.fixture(scope="module")
def sample_en():
    return load_sessions("sample")


def test_sample_validates_in_english_and_chinese(sample_en) -> None:
    zh = load_sessions(SAMPLE, language="zh")
    assert len(sample_en.sessions) == len(zh.sessions) > 0
    assert len(sample_en.turns) == 4 * len(sample_en.sessions)
    assert sample_en.fingerprint == zh.fingerprint


def test_sample_round_trips(sample_en) -> None:
    for session in sample_en.sessions:
        file, line = session.origin
        original = Path(file).read_text(encoding="utf-8").splitlines()[line - 1]
        assert session.to_dict() == json.loads(original)


def test_sample_gold_observations_are_non_empty(sample_en) -> None:
    stats = session_stats(sample_en)
    assert stats["all_gold_observations_non_empty"], stats["empty_gold_observations"][:5]
