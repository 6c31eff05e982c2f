"""Inspect extension entry point (``[project.entry-points.inspect_ai] physassist``).

Inspect names registry objects after the top-level package that defines them, so the tasks
``tasks/physassistbench.py`` and ``generation/task.py`` are re-registered here as
``physassist/physassistbench`` and ``physassist/generate`` (``inspect eval
tasks/physassistbench.py`` and ``inspect eval generation/task.py`` still load the files
directly). The offline model providers ``physassist/oracle``, ``physassist/baseline``, ...
(one model API named ``physassist``) and the offline generator ``physassist-generate/scripted``
are registered by importing their modules. An entry
point: with ``physassist/cli`` the only modules of ``physassist`` that import from ``tasks``
and ``generation``.
"""

from __future__ import annotations

import inspect as _inspect
from collections.abc import Callable
from typing import Any

from inspect_ai import Task, task
from inspect_ai._util.package import get_installed_package_name

from generation import scripted as _scripted  # noqa: F401  (registers physassist-generate/scripted)
from generation.task import generate as _generation_generate
from physassist.agents import provider as _provider  # noqa: F401  (registers physassist/oracle|baseline)
from tasks.physassistbench import physassistbench as _tasks_physassistbench


def _reexport(decorated: Callable[..., Task], name: str) -> Callable[..., Task]:
    """Register the undecorated task function (``@task`` keeps it as ``__wrapped__``) as
    ``name``."""
    build = getattr(decorated, "__wrapped__", decorated)

    def forward(*args: Any, **kwargs: Any) -> Task:
        return build(*args, **kwargs)

    forward.__signature__ = _inspect.signature(build)  # type: ignore[attr-defined]
    forward.__doc__ = build.__doc__
    forward.__name__ = name
    # Inspect prefixes the package name only when it sees ``physassist`` as installed; it does
    # not when a stale ``physassist.egg-info`` in the working directory shadows the install
    # metadata, so name the task explicitly in that case.
    registered = name if get_installed_package_name(forward) else f"physassist/{name}"
    return task(name=registered)(forward)


physassistbench = _reexport(_tasks_physassistbench, "physassistbench")
generate = _reexport(_generation_generate, "generate")

__all__ = ["generate", "physassistbench"]
