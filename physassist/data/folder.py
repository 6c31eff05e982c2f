"""A folder of session files, written whole or not at all, with a manifest of what is in it.

``physassist-data build`` wrote its scenario files one by one into the output folder: killed
half-way, it left new and old files side by side (and a ``.tmp``), and a second build with other
scenarios kept the first build's other files; ``validate`` and ``physassist-eval`` then read the
mix as one dataset. Now a build writes every file and ``manifest.json`` into a new folder beside
the target and puts it in place with one rename (``write``); the manifest says how the folder was
made and holds the SHA-256 of each session file, and every reader of a local folder
(``physassist.data.loader``, so ``validate``, ``stats`` and ``physassist-eval``) refuses a folder
whose session files do not match it (``check``), in one line.

A folder without a manifest (the released PhysAssistBench, files you wrote yourself) is read as
it is.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import hashlib
import json
import os
import shutil
from collections.abc import Mapping
from pathlib import Path
from typing import Any

MANIFEST = "manifest.json"
#: The manifest's key holding ``{file name: SHA-256 hex}`` of every session file of the folder.
HASHES = "sha256"
_SESSION_FILES = "*.jsonl"


class FolderError(ValueError):
    """A session folder that does not match its manifest, or that a build may not replace."""


def sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def holds_sessions(path: Path) -> bool:
    """Whether ``path`` exists and is not an empty directory (a build would replace something)."""
    return path.exists() and (not path.is_dir() or any(path.iterdir()))


def check(directory: Path) -> None:
    """Raise ``FolderError`` when ``directory`` has a manifest that its session files do not
    match (a file missing, changed or added); a folder without one passes."""
    manifest_path = directory / MANIFEST
    if not manifest_path.is_file():
        return
    try:
        hashes = json.loads(manifest_path.read_text(encoding="utf-8")).get(HASHES)
    except (ValueError, AttributeError) as exc:
        raise FolderError(
            f"{manifest_path}: not a readable manifest ({exc}); rebuild the folder"
        ) from None
    if hashes is None:
        return  # another tool's manifest.json, without our file hashes: nothing to check against
    if not isinstance(hashes, dict):  # ours, damaged: its files cannot be vouched for
        raise FolderError(
            f"{manifest_path}: {HASHES} is not a mapping of file name to SHA-256; "
            "rebuild the folder"
        )
    present = {p.name: p for p in directory.glob(_SESSION_FILES)}
    problems = [f"{name} is missing" for name in sorted(set(hashes) - set(present))]
    problems += [f"{name} was not built with it" for name in sorted(set(present) - set(hashes))]
    problems += [
        f"{name} has changed"
        for name in sorted(set(hashes) & set(present))
        if sha256(present[name]) != hashes[name]
    ]
    if problems:
        raise FolderError(
            f"{directory}: its session files do not match its {MANIFEST} ({'; '.join(problems)}): "
            "a build was cut short, or files were changed or added by hand; build it again with "
            f"--force, or delete {MANIFEST} to read the files as they are"
        )


def write(
    out: Path, files: Mapping[str, str], manifest: Mapping[str, Any], force: bool = False
) -> list[Path]:
    """Write ``files`` (name -> text) and the manifest (with their hashes) as the folder ``out``.

    Everything is written into a new folder beside ``out`` and synced, then put in place with one
    rename (an existing ``out`` is exchanged with it, then removed): a build killed at any moment
    leaves the old folder or the new one, never a mix. An ``out`` that holds anything is refused
    unless ``force`` (``FolderError``). A folder a killed build left beside ``out`` is removed.
    """
    out = Path(out)
    if holds_sessions(out) and not force:
        raise FolderError(
            f"{out} already exists and holds files; pass --force to replace it, "
            "or choose another folder"
        )
    out.parent.mkdir(parents=True, exist_ok=True)
    _remove_abandoned(out)
    scratch = out.with_name(f".{out.name}.partial-{os.getpid()}")
    shutil.rmtree(scratch, ignore_errors=True)
    scratch.mkdir()
    try:
        hashes = {}
        for name, text in sorted(files.items()):
            _write_synced(scratch / name, text)
            hashes[name] = sha256(scratch / name)
        _write_synced(
            scratch / MANIFEST,
            json.dumps({**manifest, HASHES: hashes}, indent=2, ensure_ascii=False) + "\n",
        )
        _sync_dir(scratch)
        if out.exists():
            _exchange(scratch, out)  # scratch now holds the old folder
            shutil.rmtree(scratch, ignore_errors=True)
        else:
            scratch.rename(out)
        _sync_dir(out.parent)
    except BaseException:
        shutil.rmtree(scratch, ignore_errors=True)
        raise
    return [out / name for name in sorted(files)] + [out / MANIFEST]


def _write_synced(path: Path, text: str) -> None:
    with path.open("w", encoding="utf-8", newline="\n") as handle:
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())


def _sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _remove_abandoned(out: Path) -> None:
    """Folders ``.<name>.partial-<pid>`` beside ``out`` whose process is gone (kill -9)."""
    for path in out.parent.glob(f".{out.name}.partial-*"):
        pid = path.name.rsplit("-", 1)[-1]
        if pid.isdigit() and not _alive(int(pid)):
            shutil.rmtree(path, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


_RENAME_EXCHANGE = 2  # linux/fs.h
_AT_FDCWD = -100


def _exchange(a: Path, b: Path) -> None:
    """Swap two directories in one step (Linux ``renameat2(RENAME_EXCHANGE)``); where the
    system has no such call, two renames (a moment with no ``b``)."""
    libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is not None:
        if renameat2(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
            return
        code = ctypes.get_errno()
        if code not in (errno.ENOSYS, errno.EINVAL):  # not supported by this file system: fall back
            raise OSError(code, os.strerror(code), str(b))
    aside = b.with_name(f"{b.name}.old-{os.getpid()}")
    b.rename(aside)
    a.rename(b)
    aside.rename(a)
