"""Subcommands beyond `compile`, one module each; importing a module registers it
into :data:`flowc.cli.COMMANDS` and :data:`flowc.cli.EXTRA_PARSERS`."""

from flowc.commands import check, decompile, fmt, migrate, render, run, testing  # noqa: F401
