"""PhysAssist's Hydra sweeper (``hydra/sweeper=redacting``, the default): Hydra's basic sweeper,
whose ``multirun.yaml`` is written redacted; see ``physassist.cli.secrets``."""

from __future__ import annotations

from typing import Any

from hydra._internal.core_plugins.basic_sweeper import BasicSweeper
from omegaconf import DictConfig, OmegaConf


class RedactingSweeper(BasicSweeper):
    """The basic sweeper, saving the sweep's config with no secret in it."""

    def sweep(self, arguments: list[str]) -> Any:
        from physassist.cli.secrets import recorded

        config = self.config
        assert config is not None  # set by setup()
        # The sweeper saves this one as multirun.yaml (and reads its sweep dir and Hydra's own
        # overrides from it); the launcher composes every job from its own, real, config.
        shown = OmegaConf.create(recorded(config))
        assert isinstance(shown, DictConfig)
        self.config = shown
        try:
            return super().sweep(arguments)
        finally:
            self.config = config
