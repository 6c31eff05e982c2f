"""Faults of the store cache: a damaged store is rebuilt or refused, never used.

Real damage on a copy of the cached sample store: three 4 KiB writes into the middle of
three data blocks (the file header left intact, as a disk or a stray ``dd`` would leave
it), or the file cut in half. Each test first shows the damage is real (DuckDB fails to
read it), so none of them can pass on an intact file.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from physassist.cli.ehr import main as ehr_main
from physassist.ehr import manifest
from physassist.ehr.sources import EHRSourceError
from physassist.ehr.store import EHRBuildError, EHRStore, build_store, open_store
from physassist.ehr.tables import TABLES
from physassist.ehr.tools import ToolContext, call_tool

BLOCK = 262_144  # DuckDB's block size
HEADER = 3 * 4096  # its file headers
SUBJECT = 30000001


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample store as the cache holds it (never modified: tests damage copies)."""
    return build_store("sample", cache_dir=tmp_path_factory.mktemp("pristine"))


@pytest.fixture
def cache(built: Path, tmp_path: Path) -> Path:
    """A private cache holding a copy of the sample store and its manifest."""
    cache = tmp_path / "cache"
    cache.mkdir()
    shutil.copy2(built, cache / built.name)
    shutil.copy2(manifest.manifest_path(built), cache / manifest.manifest_path(built).name)
    return cache


def overwrite_blocks(path: Path) -> None:
    """Overwrite 4 KiB inside each of three consecutive blocks in the middle of the file."""
    middle = (path.stat().st_size - HEADER) // BLOCK // 2
    with open(path, "r+b") as handle:
        for block in range(middle, middle + 3):
            handle.seek(HEADER + block * BLOCK + 1000)
            handle.write(b"\xff" * 4096)


def truncate(path: Path) -> None:
    os.truncate(path, path.stat().st_size // 2)


def read_patient(cache: Path) -> int:
    """``physassist-ehr call`` of Patient.read on the sample, through ``cache``: its exit code."""
    return ehr_main(
        [
            "call",
            "sample",
            "--cache-dir",
            str(cache),
            "--subject",
            str(SUBJECT),
            "Patient.read",
            f'{{"subject_id": {SUBJECT}}}',
        ]
    )


def unreadable_tables(path: Path) -> list[str]:
    """Tables DuckDB cannot read in full (raw access, no check of ours). Reads a copy: a store
    this process still holds open under other settings (the eval's reader) cannot be opened
    again by path, which would look like damage."""
    probe = path.with_name(f"probe-{path.name}")
    shutil.copyfile(path, probe)
    try:
        try:
            con = duckdb.connect(str(probe), read_only=True)
        except duckdb.Error:
            return ["<file>"]
        bad = []
        try:
            for table in TABLES:
                try:
                    con.execute(f'SELECT * FROM "{table}"').fetchall()
                except duckdb.Error:
                    bad.append(table)
        finally:
            con.close()
        return bad
    finally:
        probe.unlink()


def answers(store: EHRStore) -> list[dict]:
    """A few tool answers over the tables the damage hits, to compare stores by."""
    ctx = ToolContext(store=store, subject_id=SUBJECT, current_date="2166-12-31")
    tools = ("Observation.search", "MedicationAdministration.search", "MedicationRequest.search")
    return [call_tool(ctx, tool, {"subject_id": SUBJECT}) for tool in tools]


@pytest.mark.parametrize("damage", [overwrite_blocks, truncate])
def test_damaged_cached_store_is_rebuilt_not_used(
    cache: Path, built: Path, damage, caplog: pytest.LogCaptureFixture
) -> None:
    store_file = cache / built.name
    damage(store_file)
    assert unreadable_tables(store_file), "the damage must be real"
    with caplog.at_level(logging.WARNING, logger="physassist.ehr.store"):
        path = build_store("sample", cache_dir=cache)
    assert path == store_file
    assert unreadable_tables(path) == []
    assert manifest.file_sha256(path) == manifest.read_manifest(path)["sha256"]
    [warning] = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert str(store_file) in warning and "rebuilding" in warning
    with open_store("sample", cache_dir=cache) as store, EHRStore(built) as pristine:
        assert answers(store) == answers(pristine)


def test_cli_build_does_not_reuse_a_corrupt_store(
    cache: Path, built: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store_file = cache / built.name
    overwrite_blocks(store_file)
    assert ehr_main(["build", "sample", "--cache-dir", str(cache)]) == 0
    assert unreadable_tables(store_file) == []


def test_truncated_store_opened_directly_is_one_clear_error(cache: Path, built: Path) -> None:
    """Opened as a file (no rebuild possible from here): refused, naming the file and the fix."""
    store_file = cache / built.name
    truncate(store_file)
    with pytest.raises(EHRSourceError) as err:
        open_store(store_file)
    message = str(err.value)
    assert "\n" not in message and str(store_file) in message
    assert "bytes were written" in message and "--force" in message
    # without a manifest (a store from elsewhere) DuckDB's failure is still one clear error
    manifest.manifest_path(store_file).unlink()
    with pytest.raises(EHRSourceError, match="cannot read EHR store"):
        EHRStore(store_file)


def test_corrupt_store_given_as_file_is_refused_by_the_cli(
    cache: Path, built: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store_file = cache / built.name
    overwrite_blocks(store_file)
    code = ehr_main(
        [
            "call",
            str(store_file),
            "--subject",
            str(SUBJECT),
            "Patient.read",
            f'{{"subject_id": {SUBJECT}}}',
        ]
    )
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert "checksum does not match" in err and str(store_file) in err


def test_store_without_manifest_in_the_cache_is_rebuilt(cache: Path, built: Path) -> None:
    """A store from before manifests (or whose manifest was lost) cannot be vouched for."""
    store_file = cache / built.name
    manifest.manifest_path(store_file).unlink()
    overwrite_blocks(store_file)
    build_store("sample", cache_dir=cache)
    assert unreadable_tables(store_file) == []
    assert manifest.damage(store_file) is None


def test_intact_store_is_verified_by_stat_alone(
    cache: Path, built: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The normal path reads no byte of the store; a touched file is hashed once, then trusted."""
    store_file = cache / built.name
    hashed: list[Path] = []
    real = manifest.file_sha256
    monkeypatch.setattr(manifest, "file_sha256", lambda p: hashed.append(p) or real(p))
    assert manifest.damage(store_file) is None  # the copy has a new inode and ctime
    assert hashed == [store_file]
    for _ in range(3):
        with open_store("sample", cache_dir=cache):
            pass
    assert hashed == [store_file]
    os.utime(store_file)  # metadata changed, content not
    assert manifest.damage(store_file) is None
    assert manifest.damage(store_file) is None
    assert hashed == [store_file, store_file]


@contextlib.contextmanager
def unwritable(directory: Path) -> Iterator[None]:
    """Make ``directory`` unwritable for this process: mode 0555, or the immutable flag for
    root (who ignores modes); skip if neither is possible here."""
    if os.geteuid() != 0:
        directory.chmod(0o555)
        try:
            yield
        finally:
            directory.chmod(0o755)
        return
    if (
        shutil.which("chattr") is None
        or subprocess.run(["chattr", "+i", str(directory)], capture_output=True).returncode
    ):
        pytest.skip("running as root without chattr +i: cannot make a directory unwritable")
    try:
        yield
    finally:
        subprocess.run(["chattr", "-i", str(directory)], check=True)


def _probe_unwritable(directory: Path) -> None:
    with pytest.raises(OSError):
        tempfile.TemporaryFile(dir=directory).close()


def test_unwritable_cache_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    cache = tmp_path / "ro-cache"
    cache.mkdir()
    monkeypatch.setenv("PHYSASSIST_CACHE", str(cache))
    with unwritable(cache):
        _probe_unwritable(cache)
        with pytest.raises(EHRBuildError) as err:
            build_store("sample")
        assert str(cache) in str(err.value) and "$PHYSASSIST_CACHE" in str(err.value)
        assert ehr_main(["build", "sample"]) == 2
    err_text = capsys.readouterr().err
    assert len(err_text.strip().splitlines()) == 1
    assert str(cache) in err_text and "$PHYSASSIST_CACHE" in err_text


def test_cache_path_below_a_file_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    assert ehr_main(["build", "sample", "--cache-dir", str(blocker / "stores")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and str(blocker / "stores") in err


def test_damaged_store_in_a_read_only_cache_is_refused_not_used(
    cache: Path, built: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """It cannot be rebuilt there: one line, and nothing is answered from it."""
    overwrite_blocks(cache / built.name)
    with unwritable(cache):
        _probe_unwritable(cache)
        assert read_patient(cache) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.strip().splitlines()) == 1 and str(cache) in captured.err


def test_intact_store_in_a_read_only_cache_is_used(
    cache: Path, built: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest.damage(cache / built.name)  # verified while writable: the stamp is recorded
    with unwritable(cache):
        code = read_patient(cache)
    assert code == 0
    assert f"Patient {SUBJECT}" in capsys.readouterr().out


@pytest.mark.slow
def test_eval_never_reads_a_corrupt_cached_store(
    cache: Path, built: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The issue's run: an eval over a cache whose store has three overwritten blocks. Every
    tool call is answered from intact data (none says 'Corrupt database file')."""
    from inspect_ai import eval as inspect_eval

    from solvers.context import cached_store
    from tasks.physassistbench import physassistbench

    overwrite_blocks(cache / built.name)
    monkeypatch.setenv("PHYSASSIST_CACHE", str(cache))
    cached_store.cache_clear()
    try:
        task = physassistbench(dataset="sample", ehr_source="sample", judge="rules")
        [log] = inspect_eval(
            task,
            model="physassist/baseline",
            limit=12,
            display="none",
            log_dir=str(tmp_path / "logs"),
        )
    finally:
        cached_store.cache_clear()
    assert log.status == "success"
    texts = [
        c["text"] for s in log.samples for t in s.store["physassist:turns"] for c in t["calls"]
    ]
    assert len(texts) > 30
    assert not [t for t in texts if "Corrupt" in t or "execution error" in t]
    assert unreadable_tables(cache / built.name) == []


def test_eval_with_an_unwritable_cache_is_one_line(tmp_path: Path) -> None:
    from fixtures_tracking import cli

    cache = tmp_path / "ro-cache"
    cache.mkdir()
    with unwritable(cache):
        _probe_unwritable(cache)
        proc = cli(
            [
                "physassist-eval",
                "inspect.display=none",
                "tracking=none",
                f"inspect.log_dir={tmp_path / 'logs'}",
                f"hydra.run.dir={tmp_path / 'out'}",
            ],
            cwd=tmp_path,
            timeout=120,
            env={"PHYSASSIST_CACHE": str(cache)},
        )
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2, proc.stderr
    assert len(lines) == 1 and str(cache) in lines[0] and "$PHYSASSIST_CACHE" in lines[0]
    assert "Traceback" not in proc.stderr


def test_cli_call_on_a_corrupt_block_is_a_fault_not_an_answer(
    cache: Path, built: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A store file without a manifest is opened as given; a read of a damaged block is a
    system fault (exit 1, one line), never printed as the tool's answer."""
    store_file = cache / built.name
    manifest.manifest_path(store_file).unlink()
    overwrite_blocks(store_file)
    with EHRStore(store_file, prefetch=False) as store:
        subjects = [
            s for (s,) in store.cursor().execute("SELECT subject_id FROM patients").fetchall()
        ][:5]
    codes = []
    for subject in subjects:
        arguments = json.dumps({"subject_id": subject})
        codes.append(
            ehr_main(
                [
                    "call",
                    str(store_file),
                    "--subject",
                    str(subject),
                    "Observation.search",
                    arguments,
                ]
            )
        )
    captured = capsys.readouterr()
    assert 1 in codes and set(codes) <= {0, 1}
    faults = [line for line in captured.err.splitlines() if line.strip()]
    assert len(faults) == codes.count(1)
    assert all("system fault" in line and "Corrupt database file" in line for line in faults)
    assert "Corrupt" not in captured.out
