"""The console commands (``physassist-*``): each command's ``main()`` is where its process
starts, and sets the process up there (``console.setup``, ``gc_freeze.command_start``), never
on import: a test or a library user importing this package keeps its own settings."""
