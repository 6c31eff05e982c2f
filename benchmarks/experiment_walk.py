"""The experiment's way through the code: rooms entered, returns, climbs (issues 26 and 39).

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

Two more walks, with the same steps, rooms, returns and climbs (``--walk``):

* ``session``: a session from loading to the scorer. The walk follows what the data layer's
  ``physassist.data.loader.parse_records`` returns (the first typed form of the data; that
  call is the walk's first step) and, as for the config, its parts and what is derived from
  them; the session's models count as its parts and its JSON text (how a Sample carries it)
  as a value derived from it: the one string followed. A step whose nearest caller on the walk
  is missing (it runs below the loading, not below a step) takes its caller room from the
  nearest frame of the project's code below it.
* ``tool``: one strict ``Observation.search`` call, from the agent's tool call
  (``physassist.ehr.tools.call_tool``: the first such call of the run, in the worker thread
  the toolbox runs it in) down to DuckDB. The walk follows the call's context
  (``ToolContext``), its arguments and the store the context holds (the store access the call
  is given: a method of an object holding it is a step), counting the steps of that thread.

    python benchmarks/experiment_walk.py                  # tracking=none
    python benchmarks/experiment_walk.py --tracking  # a local MLflow store (SQLite in a temp dir)
    python benchmarks/experiment_walk.py --json walk.json # also write the steps
    python benchmarks/experiment_walk.py --walk session
    python benchmarks/experiment_walk.py --walk tool      # model=baseline ehr=strict
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import tempfile
import threading
from collections import Counter
from collections.abc import Callable
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


def _is_session_model(obj: Any) -> bool:
    """A pydantic model of the data layer: a session or one of its parts."""
    return type(obj).__module__.startswith("physassist.data") and hasattr(type(obj), "model_fields")


def _is_session_text(obj: Any) -> bool:
    """A session's JSON text (a Sample's ``metadata["session"]``)."""
    return isinstance(obj, str) and len(obj) > 64 and obj.startswith("{")


def session_like(obj: Any) -> bool:
    """A value a session is made of: its models, its JSON text, and what a setting may be."""
    return _is_session_model(obj) or _is_session_text(obj) or settings_like(obj)


class Walk:
    def __init__(
        self,
        root_module: str,
        root_function: str,
        *,
        follows: Callable[[Any], bool] = settings_like,
        starts: Callable[[FrameType], list[Any]] | None = None,
        source: tuple[str, str] | None = None,
    ) -> None:
        """``follows``: the values the walk follows; ``starts``: the objects followed from the
        root's frame (None: a root call that returns none is not the root: its ``cfg``
        otherwise); ``source``: a (module, function) whose return value is followed, its call
        the walk's first step (the root then only opens the walk)."""
        self.root = (root_module, root_function)
        self.follows = follows
        self.starts = starts or (lambda frame: [frame.f_locals.get("cfg")])
        self.source = source
        self.tracked: dict[int, Any] = {}  # id -> object (kept alive so ids are not reused)
        self.steps: dict[int, tuple[FrameType, str]] = {}  # frame id -> (frame, room)
        self.entries: list[tuple[str, str, str]] = []  # (room, caller room, function)
        self.active = False
        self.done = False
        self.thread: int | None = None  # the root's thread: steps of other threads are not counted
        self._rooms: dict[Any, str | None] = {}
        self._base = ""

    # -- what is followed ------------------------------------------------------------
    def track(self, obj: Any, depth: int = 0) -> None:
        if isinstance(obj, str) and not _is_session_text(obj):
            return  # a single value is what the settings say (a session's text is the session)
        if depth > 8 or isinstance(obj, (*SCALARS, Path)) or not self.follows(obj):
            return  # a model, a task, a log held in a part is no setting
        if id(obj) in self.tracked:
            return
        self.tracked[id(obj)] = obj
        if isinstance(obj, str):
            return
        if _is_session_model(obj):
            children = [getattr(obj, name, None) for name in type(obj).model_fields]
        elif _is_config_node(obj):
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

    def _open(self, frame: FrameType, room: str) -> None:
        starts = self.starts(frame)
        if not starts:
            return
        self.active = True
        self.thread = threading.get_ident()
        self.root_frame = frame
        for obj in starts:
            self.track(obj)
        if self.source is None:
            self.steps[id(frame)] = (frame, room)
            self.entries.append((room, "", frame.f_code.co_name))

    def _caller_room(self, frame: FrameType) -> str:
        """The room of the nearest step below ``frame``; without one (below the source), of
        the nearest frame of the project's code."""
        caller = frame.f_back
        while caller is not None and id(caller) not in self.steps:
            caller = caller.f_back
        if caller is not None:
            return self.steps[id(caller)][1]
        caller = frame.f_back
        while caller is not None and self.room(caller.f_code) is None:
            caller = caller.f_back
        return (self.room(caller.f_code) or "") if caller is not None else ""

    def __call__(self, frame: FrameType, event: str, arg: Any) -> None:
        if event == "call":
            room = self.room(frame.f_code)
            if room is None:
                return
            if not self.active:
                if not self.done and (room, frame.f_code.co_name) == self.root:
                    self._open(frame, room)
                return
            if id(frame) in self.steps or threading.get_ident() != self.thread:
                return  # a generator or coroutine resumed; another thread's work
            args = self._arguments(frame)
            if not any(self._is_tracked(a) or self._carries(a) for a in args):
                return
            caller_room = self._caller_room(frame)
            self.steps[id(frame)] = (frame, room)
            if room != caller_room:
                self.entries.append((room, caller_room, frame.f_code.co_name))
        elif event == "return" and self.active and threading.get_ident() == self.thread:
            if frame is self.root_frame:
                self.active, self.done = False, True
                return
            if self.source is not None and (self.room(frame.f_code), frame.f_code.co_name) == (
                self.source
            ):
                if not self.entries:  # the first load: where the walk starts
                    self.entries.append((self.source[0], "", self.source[1]))
                self.track(arg)
                return
            if id(frame) not in self.steps:
                return
            if frame.f_code.co_flags & 0x2A0:  # a generator or coroutine: a yield is no result
                return
            if all(self.follows(a) for a in self._arguments(frame)) and self.follows(arg):
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


def _tool_call(frame: FrameType) -> list[Any]:
    """The objects followed from a strict ``Observation.search`` call (none for other calls)."""
    from physassist.ehr.tools import from_api_name

    local = frame.f_locals
    ctx = local.get("ctx")
    if from_api_name(str(local.get("name"))) != "Observation.search" or (
        getattr(ctx, "semantics", None) != "strict"
    ):
        return []
    print(f"  the call: Observation.search {local.get('arguments')}", file=sys.stderr)
    return [ctx, local.get("arguments"), ctx.store]  # type: ignore[union-attr]  # ctx is set


def _store_tracked(walk: Walk) -> Walk:
    """The store is no setting, yet the call is given it: followed by identity."""
    original = walk.track

    def track(obj: Any, depth: int = 0) -> None:
        if type(obj).__name__ == "EHRStore":
            walk.tracked[id(obj)] = obj
            return
        original(obj, depth)

    walk.track = track  # type: ignore[method-assign]  # a per-walk rule
    return walk


#: walk -> (what it follows, its physassist-eval overrides, the walk).
WALKS: dict[str, Callable[[], tuple[str, list[str], Walk]]] = {
    "config": lambda: (
        "cfg from run_experiment",
        [],
        Walk("physassist.cli.eval", "run_experiment"),
    ),
    "session": lambda: (
        "a session from parse_records to the scorer",
        [],
        Walk(
            "physassist.cli.eval",
            "run_experiment",
            follows=session_like,
            starts=lambda frame: [None],
            source=("physassist.data.loader", "parse_records"),
        ),
    ),
    "tool": lambda: (
        "one strict Observation.search from call_tool",
        ["model=baseline", "ehr=strict"],
        _store_tracked(Walk("physassist.ehr.tools", "call_tool", starts=_tool_call)),
    ),
}


def main() -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--tracking", action="store_true", help="log to a local MLflow store (SQLite, temp dir)"
    )
    parser.add_argument("--json", type=Path, help="write the summary and the walk here")
    parser.add_argument(
        "--walk",
        choices=tuple(WALKS),
        default="config",
        help="config: cfg from run_experiment; session: from loading to the scorer; "
        "tool: one strict Observation.search call down to DuckDB",
    )
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
    described, overrides, walk = WALKS[options.walk]()
    argv += overrides + options.overrides
    walk._base = str(Path(physassist.__file__).resolve().parents[1]) + "/"
    sys.argv = argv
    sys.setprofile(walk)  # the main thread, where Hydra, the CLI and Inspect's event loop run
    if options.walk == "tool":
        threading.setprofile(walk)  # the worker threads the toolbox runs the calls in
    try:
        cli_eval.main()
    except SystemExit as exc:
        if exc.code not in (0, None):
            print(f"physassist-eval exited {exc.code}", file=sys.stderr)
    finally:
        sys.setprofile(None)
        threading.setprofile(None)  # type: ignore[arg-type]  # None removes the hook
    summary = walk.summary()
    print(
        f"walk of {described} "
        f"({'MLflow store' if options.tracking else 'tracking=none'}; {walk._base}):"
    )
    print(
        f"  rooms {summary['rooms']}, returns {summary['returns']}, climbs {summary['climbs']}, "
        f"most entries into one room {summary['max_entries']}"
    )
    for room, n in summary["entries"].items():
        print(f"  {n:>3}  {room}")
    if options.walk != "config":
        print(f"  {sum(summary['entries'].values())} entries (stays) in all")
    if summary["climbs_into"]:
        print("  climbs: " + ", ".join(summary["climbs_into"]))
    if options.json:
        options.json.write_text(json.dumps(summary, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
