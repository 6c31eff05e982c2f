"""PhysAssist's Hydra launcher on Ray (``hydra/launcher=ray``); see ``ray_launcher``."""
