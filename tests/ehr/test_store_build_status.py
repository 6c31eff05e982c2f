"""What a store build tells a command's console: a build that takes long (the full MIMIC-IV,
minutes) says at INFO that it is building while it runs, then how long it took; a quick one
(the sample, ~1 s) only at DEBUG, so a first run's console shows no store line."""

from __future__ import annotations

import logging

import pytest

from physassist.ehr import store


def _told(tmp_path, caplog: pytest.LogCaptureFixture) -> list[tuple[int, str]]:
    with caplog.at_level(logging.DEBUG, logger=store.log.name):
        store.build_store("sample", cache_dir=tmp_path)
    return [(r.levelno, r.getMessage()) for r in caplog.records if r.name == store.log.name]


def test_a_quick_build_is_told_only_at_debug(tmp_path, caplog) -> None:
    [(level, message)] = _told(tmp_path, caplog)
    assert level == logging.DEBUG and message.startswith("built ") and " from " in message


def test_a_slow_build_says_it_is_building_then_how_long_it_took(
    tmp_path, caplog, monkeypatch
) -> None:
    monkeypatch.setattr(store, "ANNOUNCE_S", 0.0)  # any build is slow
    told = _told(tmp_path, caplog)
    assert [level for level, _ in told] == [logging.INFO, logging.INFO]
    assert (
        told[0][1]
        == f"building the EHR store of {store.detect_source('sample').root} in {tmp_path} (once "
        "per source) ..."
    )
    assert told[1][1].startswith("built ") and told[1][1].endswith("s")


def test_physassist_ehr_build_shows_a_slow_build_as_it_starts(tmp_path) -> None:
    """Its own summary comes at the end; the store's lines on stderr say what it is doing."""
    import subprocess
    import sys

    code = (
        "import sys\nfrom physassist.ehr import store\nstore.ANNOUNCE_S = 0.0\n"
        "from physassist.cli.ehr import main\nsys.exit(main(['build', 'sample', '--cache-dir', "
        "sys.argv[1]]))\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr.splitlines()[0].startswith("building the EHR store of "), proc.stderr
    assert proc.stderr.splitlines()[1].startswith("built "), proc.stderr
    assert proc.stdout.startswith("store:"), proc.stdout
