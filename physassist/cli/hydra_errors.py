"""Hydra's composition errors as one line naming the key and the valid choices.

Hydra reports an unknown option (``query=sideways``) or key (``modle=oracle``), and the groups'
schema (``physassist/cli/schema.py``) an unknown key or a mistyped value in a group file or an
override, over several lines with its search path and a stack-trace hint; the README promises one
line, like every other bad value. ``reported`` runs a Hydra entry point with Hydra's own
reporting off and prints those errors that way (exit 2); an unexpected exception keeps its
traceback.
"""

from __future__ import annotations

import difflib
import os
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

_OVERRIDE = re.compile(r"Could not (?:override|append to|delete from config\.?) '([^']+)'")
# A group file that does not fit its schema: "In 'terminal/mine': ConfigKeyError raised while
# composing config:\nKey 'nudg' not in 'terminal'\n    full_key: terminal.nudg ..."
_IN_FILE = re.compile(
    r"In '([^']+)': (\w+) raised while composing config:\n(.*?)\n\s*full_key: (\S+)", re.S
)


class JobFailed(RuntimeError):
    """A sweep job failed: bad input (code 2), a failed evaluation (code 1, see its log) or a
    system fault such as a failed endpoint (code 4)."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code

    # keeps the code when a launcher sends it back from another process
    def __reduce__(self) -> tuple[type[JobFailed], tuple[str, int]]:
        return (JobFailed, (str(self), self.code))


def _fields(dotted: str, node: Any = None) -> list[str]:
    """The keys the schema allows under ``dotted`` (a group such as ``terminal``): those of
    ``node`` (the refusing node's dataclass, when OmegaConf names it), else of the eval's schema."""
    import dataclasses

    from physassist.cli.schema import eval_schema

    if not dataclasses.is_dataclass(node):
        node = eval_schema()
        for part in dotted.split(".") if dotted else []:
            found = (
                {f.name: f.type for f in dataclasses.fields(node)}
                if dataclasses.is_dataclass(node)
                else {}
            )
            node = found.get(part)
    return [f.name for f in dataclasses.fields(node)] if dataclasses.is_dataclass(node) else []


def _schema_error(key: str, message: str, where: str, node: Any = None) -> str:
    """One line for a key the schema refuses: unknown (naming the allowed keys) or mistyped."""
    message = message.strip().splitlines()[0]
    if not message.startswith("Key '"):
        if "is not Optional" in message:
            message = "may not be null"
        return f"{key} ({where}): {message}"
    parent, _, name = key.rpartition(".")
    allowed = _fields(parent, node)
    owner = parent or getattr(node, "__name__", "the config")
    close = difflib.get_close_matches(name, allowed, n=1)
    hint = f"; did you mean {'.'.join(filter(None, (parent, close[0])))}?" if close else ""
    keys = (
        f"; {owner} has {', '.join(allowed)}"
        if allowed
        else f"; add a key to {owner} with +{key}=<value>"
    )
    return f"{key} ({where}): no such key{keys}{hint}"


def one_line(exc: BaseException, program: str = "physassist-eval") -> str:
    """The error in one line that names the key (and the valid choices, when Hydra knows them);
    an unknown name is matched against what ``program`` takes (``cli/commands``)."""
    from hydra.errors import MissingConfigException

    if isinstance(exc, MissingConfigException) and exc.missing_cfg_file:
        group, _, option = str(exc.missing_cfg_file).rpartition("/")
        if group and exc.options:
            return (
                f"{group}={option}: no such option in group {group} (choices: "
                f"{', '.join(exc.options)})"
            )
        return f"{exc.missing_cfg_file}: no such config"
    from omegaconf.errors import OmegaConfBaseException

    text = str(exc)
    in_file = _IN_FILE.search(text)
    if in_file:
        return _schema_error(in_file.group(4), in_file.group(3), f"{in_file.group(1)}.yaml")
    cause = exc.__cause__
    key = getattr(cause, "full_key", None)
    # An unknown top-level key of physassist-eval is named with its groups (below); of another
    # command (physassist-generate) with its schema's keys.
    root = getattr(getattr(cause, "object_type", None), "__name__", "eval")
    unknown_top = (
        key
        and "." not in key
        and root == "eval"
        and str(getattr(cause, "msg", "")).startswith("Key '")
    )
    if isinstance(cause, OmegaConfBaseException) and key and not unknown_top:
        return _schema_error(
            key,
            str(getattr(cause, "msg", "") or cause),
            "command line",
            getattr(cause, "object_type", None),
        )
    found = _OVERRIDE.search(text)
    if found:
        from physassist.cli.commands import names as command_names
        from physassist.cli.config import conf_dir

        key = found.group(1)
        names = command_names(program, conf_dir())
        close = difflib.get_close_matches(key.split(".")[0], names, n=1)
        hint = f"; did you mean {close[0]}?" if close else ""
        return f"{key}: no such config group or key (groups and keys: {', '.join(names)}){hint}"
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    return lines[0] if lines else repr(exc)


def _from_hydra_flags(exc: ValueError) -> bool:
    """Hydra raised it while reading its flags (``-m`` with ``--cfg``, ``--resolve`` alone)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    code = tb.tb_frame.f_code if tb is not None else None
    return (
        code is not None
        and code.co_name == "_run_hydra"
        and f"{os.sep}hydra{os.sep}" in code.co_filename
    )


def _flags_hint(program: str) -> str:
    """For ``-m ... --cfg job``: the command that prints one job's composition."""
    args = sys.argv[1:]
    if not {"-m", "--multirun"} & set(args):
        return ""
    one = [
        a.split(",")[0] if "=" in a and not a.startswith("-") and "[" not in a else a for a in args
    ]
    one = [a for a in one if a not in ("-m", "--multirun")]
    return f" (--cfg prints one composition: {program} {' '.join(one)})"


def _output_dir(exc: OSError) -> str:
    """The directory a failed write was in: the file's, else the ``output_dir`` Hydra was
    writing to (a local of its ``_save_config``/``run_job`` frames; Hydra's own config is reset
    by then)."""
    if exc.filename:
        return f"Hydra's output dir {Path(str(exc.filename)).parent}"
    tb, found = exc.__traceback__, None
    while tb is not None:
        found = tb.tb_frame.f_locals.get("output_dir", found)
        tb = tb.tb_next
    return f"Hydra's output dir {found}" if found else "Hydra's output dir"


def _output_dir_error(exc: BaseException) -> OSError | None:
    """The ``OSError`` (``exc`` or its cause) with which Hydra failed to make or write a job's
    output dir, before any code of ours ran in the job; a full disk anywhere."""
    from physassist.faults import no_space

    failed = next(
        (e for e in (exc, exc.__cause__, exc.__context__) if isinstance(e, OSError)), None
    )
    if failed is None:
        return None
    if no_space(failed):
        return failed
    ours = str(Path(__file__).resolve().parents[2])
    tb, in_hydra = exc.__traceback__, False
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_name in ("run_job", "sweep") and f"{os.sep}hydra{os.sep}" in code.co_filename:
            in_hydra = True
        elif in_hydra and code.co_filename.startswith(ours) and ".venv" not in code.co_filename:
            return None  # raised in the job, by our code: not Hydra's setup
        tb = tb.tb_next
    return failed if in_hydra else None


def output_dir_line(exc: OSError) -> str:
    """Hydra's output dir could not be written: one line naming it (or the file) and why."""
    from physassist.faults import no_space

    if no_space(exc):
        return f"{_output_dir(exc)}: no space left on device (nothing ran)"
    what = f"cannot write {exc.filename}" if exc.filename else "cannot write it"
    return f"Hydra's output dir: {what}: {(exc.strerror or str(exc)).lower()} (nothing ran)"


def reported(entry: Callable[[], Any], program: str = "physassist-eval") -> Any:
    """Run a Hydra entry point; composition errors become one line and exit status 2."""
    from hydra.errors import (
        ConfigCompositionException,
        MissingConfigException,
        OverrideParseException,
    )

    from physassist.cli.inspect_habits import unknown_flag

    flag = unknown_flag(sys.argv[1:], program)
    if flag:  # argparse would print its usage block
        print(f"{program}: error: {flag}", file=sys.stderr)
        raise SystemExit(2)
    previous = os.environ.get("HYDRA_FULL_ERROR")
    user_full_error = previous == "1"  # as Hydra reads it
    os.environ["HYDRA_FULL_ERROR"] = "1"  # Hydra re-raises instead of printing its own report
    try:
        return entry()
    except (MissingConfigException, ConfigCompositionException, OverrideParseException) as exc:
        if user_full_error:
            raise
        print(f"{program}: error: {one_line(exc, program)}", file=sys.stderr)
        raise SystemExit(2) from None
    except JobFailed as exc:  # after the config was read: masked (an error may quote a secret)
        from physassist.redaction import scrub

        print(f"{program}: error: {scrub(str(exc))}", file=sys.stderr)
        raise SystemExit(exc.code) from None
    except (OSError, ValueError) as exc:
        # Hydra's output dir (.hydra/*.yaml, the job log) on a full disk, not writable or no
        # directory at all (logging's own ValueError wraps the log file's OSError)
        if not user_full_error and (failed := _output_dir_error(exc)) is not None:
            print(f"{program}: error: {output_dir_line(failed)}", file=sys.stderr)
            raise SystemExit(2) from None
        if not isinstance(exc, ValueError) or user_full_error or not _from_hydra_flags(exc):
            raise  # Hydra's own flags used together that it refuses: one line below
        print(f"{program}: error: {exc}{_flags_hint(program)}", file=sys.stderr)
        raise SystemExit(2) from None
    finally:
        if previous is None:
            os.environ.pop("HYDRA_FULL_ERROR", None)
        else:
            os.environ["HYDRA_FULL_ERROR"] = previous
