"""The console commands (``physassist-*``). Every command's process imports this package
first, so its start-up (imports, Hydra's composition, the task build) runs with the collector
set for a command (``physassist.gc_freeze.command_start``)."""

from physassist.gc_freeze import command_start

command_start()
