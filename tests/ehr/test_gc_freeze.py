"""frozen_heap: what is alive is frozen and the young generation larger during an eval, and
both are undone afterwards (also when the eval raises)."""

import gc

import pytest

from physassist.gc_freeze import YOUNG_THRESHOLD, frozen_heap


def test_freezes_during_and_restores_after() -> None:
    before = gc.get_threshold()
    frozen_before = gc.get_freeze_count()
    kept = [object() for _ in range(10)]  # noqa: F841  alive when the eval starts
    with frozen_heap():
        assert gc.get_freeze_count() > frozen_before
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_restores_when_the_body_raises() -> None:
    before = gc.get_threshold()
    with pytest.raises(RuntimeError), frozen_heap():
        raise RuntimeError("eval failed")
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0


def test_nested_blocks_leave_the_heap_to_the_outermost() -> None:
    before = gc.get_threshold()
    with frozen_heap():
        frozen = gc.get_freeze_count()
        with frozen_heap():  # e.g. MLflow's logging inside a caller's frozen block
            pass
        assert gc.get_freeze_count() == frozen  # the inner block did not thaw the outer's heap
        assert gc.get_threshold() == (YOUNG_THRESHOLD, *before[1:])
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == before


def test_a_process_that_froze_its_heap_freezes_it_at_exit() -> None:
    """The interpreter's final collections would walk the whole heap: frozen objects are skipped.
    An exit handler registered first runs last (after the freeze) and sees it."""
    import subprocess
    import sys

    code = (
        "import atexit, gc\n"
        "atexit.register(lambda: print('frozen at exit:', gc.get_freeze_count() > 0))\n"
        "from physassist.gc_freeze import frozen_heap\n"
        "with frozen_heap():\n"
        "    pass\n"
        "assert gc.get_freeze_count() == 0\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "frozen at exit: True"


#: Each console script's module and main (pyproject.toml [project.scripts]).
_COMMANDS = (
    "physassist.cli.eval",
    "physassist.cli.report",
    "physassist.cli.rescore",
    "physassist.cli.data",
    "physassist.cli.ehr",
    "generation.cli",
)
_START_EACH = """
import contextlib, gc, importlib, io, sys
default = gc.get_threshold()
modules = [importlib.import_module(name) for name in sys.argv[1:]]
print("imported", gc.get_threshold() == default)
for module in modules:
    gc.set_threshold(*default)
    sys.argv = [module.__name__, "--help"]
    with contextlib.suppress(SystemExit), contextlib.redirect_stdout(io.StringIO()):
        module.main()
    print(module.__name__, gc.get_threshold()[0])
"""


def test_a_command_sets_the_larger_young_generation_where_it_starts_not_on_import() -> None:
    """Its start-up (imports, the task build) is collected as the eval is: not every 700
    allocations over the growing heap (0.35 s of CPU before the default run's eval). Importing
    the commands' modules (a test, a library user) leaves the process's collector alone."""
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-c", _START_EACH, *_COMMANDS],
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    ).stdout.split("\n")
    assert out[0] == "imported True"
    assert out[1:-1] == [f"{name} {YOUNG_THRESHOLD}" for name in _COMMANDS]
