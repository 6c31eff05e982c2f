"""The experiment's way through the code: rooms entered, returns, climbs (issue 26).

Runs ``physassist-eval`` once in this process (``inspect.limit=1`` on the sample: the walk
does not depend on the number of sessions) with a ``sys.setprofile`` hook and follows the
composed config from the call of ``physassist.cli.eval.run_experiment`` (its ``cfg``): every
call into the project's code (``physassist``, ``tasks``, ``solvers``, ``scorers``,
``generation``) that receives the object, a part of it (a mapping, list, tuple, config node or
dataclass held in it, recursively; single values such as strings are not followed: they are
what the settings say, not the settings) or a value derived from it (what such a
call returns when every argument it got was a setting: a mapping, list, tuple, dataclass,
config node, string or number; a value computed from the experiment together with a result,
an Inspect log or a table, is a result and is not followed) is a step of the walk; so is a
call on an object that holds one of them as an attribute (a method whose ``self`` carries it).

* a *room* is a module; it is *entered* by a step whose module differs from the module of the
  nearest step below which it runs (its caller on the walk), so a room calling itself stays in;
* a *return* is an entry into a room that was entered before (the walk left it and came back);
* a *climb* is an entry into a room of a higher layer than its caller's (entry points 3,
  ``tasks``/``generation`` 2, ``solvers``/``scorers`` 1, the library 0: imports go down, so a
  climb is the flow coming back up to where it came from).

    python benchmarks/experiment_walk.py                  # tracking=none
    python benchmarks/experiment_walk.py --tracking  # a local MLflow store (SQLite in a temp dir)
    python benchmarks/experiment_walk.py --json walk.json # also write the steps
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
from collections import Counter
from pathlib import Path
from types import FrameType
from typing import Any

PROJECT = ("physassist", "tasks", "solvers", "scorers", "generation")
ENTRY = ("physassist.cli", "generation.cli", "physassist._registry", "physassist.synth.__main__")
LAYER = {"tasks": 2, "generation": 2, "solvers": 1, "scorers": 1, "physassist": 0}
SCALARS = (int, float, bool, type(None))


def layer(room: str) -> int:
    return 3 if room.startswith(ENTRY) else LAYER[room.split(".")[0]]


def _is_config_node(obj: Any) -> bool:
    return type(obj).__module__.startswith("omegaconf")


def settings_like(obj: Any) -> bool:
    """A value the experiment is made of (not a result, a model, a tracker, a task)."""
    if isinstance(obj, (dict, list, tuple, str, Path, *SCALARS)) or _is_config_node(obj):
        return True
    if type(obj).__name__ == "mappingproxy":
        return True
    return dataclasses.is_dataclass(obj) and not isinstance(obj, type)


class Walk:
    def __init__(self, root_module: str, root_function: str) -> None:
        self.root = (root_module, root_function)
        self.tracked: dict[int, Any] = {}  # id -> object (kept alive so ids are not reused)
        self.steps: dict[int, tuple[FrameType, str]] = {}  # frame id -> (frame, room)
        self.entries: list[tuple[str, str, str]] = []  # (room, caller room, function)
        self.active = False
        self._rooms: dict[Any, str | None] = {}
        self._base = ""

    # -- what is followed ------------------------------------------------------------
    def track(self, obj: Any, depth: int = 0) -> None:
        if depth > 8 or isinstance(obj, (*SCALARS, str, Path)) or not settings_like(obj):
            return  # a model, a task, a log held in a part is no setting
        if id(obj) in self.tracked:
            return
        self.tracked[id(obj)] = obj
        if _is_config_node(obj):
            from omegaconf import DictConfig, ListConfig

            if isinstance(obj, DictConfig):
                children = [obj._get_node(k) for k in obj.keys()]
                children = [
                    c if isinstance(c, (DictConfig, ListConfig)) else c._value() for c in children
                ]
            else:
                children = [obj._get_node(i) for i in range(len(obj))]
                children = [
                    c if isinstance(c, (DictConfig, ListConfig)) else c._value() for c in children
                ]
        elif isinstance(obj, dict) or type(obj).__name__ == "mappingproxy":
            children = list(obj.values())
        elif isinstance(obj, (list, tuple)):
            children = list(obj)
        elif dataclasses.is_dataclass(obj) and not isinstance(obj, type):
            children = [getattr(obj, f.name, None) for f in dataclasses.fields(obj)]
        else:
            children = []
        for child in children:
            self.track(child, depth + 1)

    def _is_tracked(self, obj: Any) -> bool:
        return id(obj) in self.tracked and self.tracked[id(obj)] is obj

    def _carries(self, obj: Any) -> bool:
        """An object holding the experiment as an attribute (a method's ``self``) carries it."""
        if (
            isinstance(obj, (type, *SCALARS, str))
            or not hasattr(obj, "__dict__")
            or type(obj).__name__ == "module"
        ):
            return False
        try:
            return any(self._is_tracked(v) for v in vars(obj).values())
        except TypeError:
            return False

    # -- the hook --------------------------------------------------------------------
    def room(self, code) -> str | None:
        if code in self._rooms:
            return self._rooms[code]
        name = None
        path = Path(code.co_filename)
        if self._base and code.co_filename.startswith(self._base):
            parts = path.relative_to(self._base).with_suffix("").parts
            if parts and parts[0] in PROJECT and path.suffix == ".py":
                name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        self._rooms[code] = name
        return name

    def _arguments(self, frame: FrameType) -> list[Any]:
        code = frame.f_code
        n = code.co_argcount + code.co_kwonlyargcount
        n += bool(code.co_flags & 0x04) + bool(code.co_flags & 0x08)  # *args, **kwargs
        names = code.co_varnames[:n]
        values = [frame.f_locals.get(v) for v in names]
        out = []
        for name, value in zip(names, values, strict=True):
            if (
                code.co_flags & 0x04 and name == names[code.co_argcount + code.co_kwonlyargcount]
            ) and isinstance(value, tuple):
                out += list(value)
            elif code.co_flags & 0x08 and name == names[-1] and isinstance(value, dict):
                out += list(value.values())
            else:
                out.append(value)
        return out

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            room = self.room(frame.f_code)
            if room is None:
                return
            if not self.active:
                if (room, frame.f_code.co_name) == self.root:
                    self.active = True
                    self.root_frame = frame
                    self.track(frame.f_locals.get("cfg"))
                    self.steps[id(frame)] = (frame, room)
                    self.entries.append((room, "", frame.f_code.co_name))
                return
            if id(frame) in self.steps:  # a generator or coroutine resumed
                return
            args = self._arguments(frame)
            if not any(self._is_tracked(a) or self._carries(a) for a in args):
                return
            caller = frame.f_back
            while caller is not None and id(caller) not in self.steps:
                caller = caller.f_back
            caller_room = self.steps[id(caller)][1] if caller is not None else ""
            self.steps[id(frame)] = (frame, room)
            if room != caller_room:
                self.entries.append((room, caller_room, frame.f_code.co_name))
        elif event == "return" and self.active and id(frame) in self.steps:
            if frame is self.root_frame:
                self.active = False
                return
            if frame.f_code.co_flags & 0x2A0:  # a generator or coroutine: a yield is no result
                return
            if all(settings_like(a) for a in self._arguments(frame)) and settings_like(arg):
                self.track(arg)

    # -- the figures -----------------------------------------------------------------
    def summary(self) -> dict[str, Any]:
        entered = Counter(room for room, _, _ in self.entries)
        climbs = [
            (room, caller)
            for room, caller, _ in self.entries
            if caller and layer(room) > layer(caller)
        ]
        return {
            "rooms": len(entered),
            "returns": sum(entered.values()) - len(entered),
            "climbs": len(climbs),
            "max_entries": max(entered.values()) if entered else 0,
            "entries": dict(entered.most_common()),
            "climbs_into": [f"{caller} -> {room}" for room, caller in climbs],
            "walk": [
                f"{caller or '-'} -> {room}.{function}" for room, caller, function in self.entries
            ],
        }


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--tracking", action="store_true", help="log to a local MLflow store (SQLite, temp dir)"
    )
    parser.add_argument("--json", type=Path, help="write the summary and the walk here")
    parser.add_argument("overrides", nargs="*", help="more physassist-eval overrides")
    options = parser.parse_args()

    import physassist
    from physassist.cli import eval as cli_eval

    tmp = Path(tempfile.mkdtemp(prefix="experiment-walk-"))
    argv = [
        "physassist-eval",
        "inspect.limit=1",
        f"inspect.log_dir={tmp / 'logs'}",
        f"hydra.run.dir={tmp / 'hydra'}",
    ]
    argv += (
        [f"tracking.uri=sqlite:///{tmp / 'mlruns' / 'mlflow.db'}"]
        if options.tracking
        else ["tracking=none"]
    )
    argv += options.overrides
    walk = Walk("physassist.cli.eval", "run_experiment")
    walk._base = str(Path(physassist.__file__).resolve().parents[1]) + "/"
    sys.argv = argv
    sys.setprofile(walk)  # the main thread, where Hydra, the CLI and Inspect's event loop run
    try:
        cli_eval.main()
    except SystemExit as exc:
        if exc.code not in (0, None):
            print(f"physassist-eval exited {exc.code}", file=sys.stderr)
    finally:
        sys.setprofile(None)
    summary = walk.summary()
    print(
        "walk of cfg from run_experiment "
        f"({'MLflow store' if options.tracking else 'tracking=none'}; {walk._base}):"
    )
    print(
        f"  rooms {summary['rooms']}, returns {summary['returns']}, climbs {summary['climbs']}, "
        f"most entries into one room {summary['max_entries']}"
    )
    for room, n in summary["entries"].items():
        print(f"  {n:>3}  {room}")
    if summary["climbs_into"]:
        print("  climbs: " + ", ".join(summary["climbs_into"]))
    if options.json:
        options.json.write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
