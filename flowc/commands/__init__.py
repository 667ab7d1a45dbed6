"""The subcommands, one module each (``register(subparsers)`` and ``HANDLERS``), and
:mod:`flowc.commands.console`, what they share. :mod:`flowc.cli` loads only the module
of the command it runs, so this package imports none of them."""
