"""A thin Hydra launcher over Ray's own API: each sweep job is one Ray task.

``hydra-ray-launcher`` pins cloudpickle 2.2 (it would downgrade the project's 3.x), so the
project launches on Ray itself, the way Hydra's joblib launcher does on loky: the driver
composes nothing; every task composes its job's config and calls Hydra's ``run_job``, in the
driver's working directory (a cluster needs the same paths on every node). Ray (``pip install
-e ".[cluster]"``) is imported only when a sweep uses ``hydra/launcher=ray``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from hydra.core.hydra_config import HydraConfig
from hydra.core.singleton import Singleton
from hydra.core.utils import JobReturn, configure_log, filter_overrides, run_job, setup_globals
from hydra.plugins.launcher import Launcher
from hydra.types import HydraContext, TaskFunction
from omegaconf import DictConfig, OmegaConf, open_dict

log = logging.getLogger(__name__)


def _run(
    idx: int,
    overrides: Sequence[str],
    hydra_context: HydraContext,
    config: DictConfig,
    task_function: TaskFunction,
    singleton_state: dict[Any, Any],
    cwd: str,
) -> JobReturn:
    """One job inside a Ray worker: the same steps as Hydra's joblib launcher."""
    os.chdir(cwd)
    setup_globals()
    Singleton.set_state(singleton_state)
    sweep_config = hydra_context.config_loader.load_sweep_config(config, list(overrides))
    with open_dict(sweep_config):
        sweep_config.hydra.job.id = f"{sweep_config.hydra.job.name}_{idx}"
        sweep_config.hydra.job.num = idx
    HydraConfig.instance().set_config(sweep_config)
    return run_job(
        hydra_context=hydra_context,
        config=sweep_config,
        task_function=task_function,
        job_dir_key="hydra.sweep.dir",
        job_subdir_key="hydra.sweep.subdir",
    )


class RayLauncher(Launcher):
    """``hydra/launcher=ray``: ``address`` (null = a local Ray started for the sweep, ``auto`` or
    ``ray://head:10001`` = an existing cluster), ``init`` (more ``ray.init`` arguments) and the
    resources each job asks for."""

    def __init__(
        self,
        address: str | None = None,
        num_cpus: float = 1,
        num_gpus: float = 0,
        init: dict[str, Any] | None = None,
    ) -> None:
        self.address = address
        self.num_cpus = num_cpus
        self.num_gpus = num_gpus
        self.init = dict(init or {})
        self.config: DictConfig | None = None
        self.task_function: TaskFunction | None = None
        self.hydra_context: HydraContext | None = None

    def setup(
        self, *, hydra_context: HydraContext, task_function: TaskFunction, config: DictConfig
    ) -> None:
        self.config = config
        self.hydra_context = hydra_context
        self.task_function = task_function

    def launch(
        self, job_overrides: Sequence[Sequence[str]], initial_job_idx: int
    ) -> Sequence[JobReturn]:
        import ray

        assert (
            self.config is not None
            and self.task_function is not None
            and self.hydra_context is not None
        )
        setup_globals()
        configure_log(self.config.hydra.hydra_logging, self.config.hydra.verbose)
        Path(str(self.config.hydra.sweep.dir)).mkdir(parents=True, exist_ok=True)
        if not ray.is_initialized():
            init = OmegaConf.to_container(OmegaConf.create(self.init), resolve=True)
            ray.init(address=self.address, **init)  # type: ignore[arg-type]
        log.info(
            "Ray is launching %d jobs on %s",
            len(job_overrides),
            ray.get_runtime_context().gcs_address,
        )
        for idx, overrides in enumerate(job_overrides):
            log.info("\t#%d : %s", initial_job_idx + idx, " ".join(filter_overrides(overrides)))
        task = ray.remote(num_cpus=self.num_cpus, num_gpus=self.num_gpus, max_retries=0)(_run)
        state = Singleton.get_state()
        refs = [
            task.remote(
                initial_job_idx + idx,
                list(overrides),
                self.hydra_context,
                self.config,
                self.task_function,
                state,
                os.getcwd(),
            )
            for idx, overrides in enumerate(job_overrides)
        ]
        return ray.get(refs)
