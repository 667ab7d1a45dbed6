"""The command line's side of ``[tool.flowc]``: the ``--plugin`` and ``--trust`` options,
and loading the plugins before a command reads its flows (the settings themselves and the
trust rule are :mod:`flowc.project`'s, which the language server reads too)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from flowc.project.config import Config
from flowc.project.plugins import config_trusted, load_plugins_for

__all__ = ["add_plugin_option", "add_trust_option", "setup_plugins"]


def add_plugin_option(parser: argparse.ArgumentParser) -> None:
    """``--plugin MODULE_OR_FILE`` (repeatable) and ``--trust``, on every command that
    reads a flow and may import plugins."""
    parser.add_argument(
        "--plugin",
        action="append",
        metavar="MODULE_OR_FILE",
        help="import Python that registers custom conditions and targets: a module name or a "
        ".py file (repeatable; also `plugins` in [tool.flowc], imported only from a trusted "
        "folder)",
    )
    add_trust_option(parser)


def setup_plugins(args: argparse.Namespace, paths: Sequence[str]) -> bool:
    """Load the plugins of ``[tool.flowc]`` (the configuration of ``paths[0]``; only from
    a trusted folder, else a one-line notice on stderr) and of ``--plugin``; whether any
    was loaded. A plugin that cannot load is a usage error."""
    config = Config.for_inputs(paths)
    decision = config_trusted(config, bool(getattr(args, "trust", False)))
    if decision is not None and not decision.trusted and config.path is not None:
        print(decision.notice(config.path), file=sys.stderr)
    trusted = decision is None or decision.trusted
    return load_plugins_for(getattr(args, "plugin", None), config, trusted=trusted)


def add_trust_option(parser: argparse.ArgumentParser, what: str | None = None) -> None:
    """``--trust``: import the plugins the configuration lists even if its folder is not
    on the user's list (``what`` overrides the help)."""
    from flowc.project.trust import OPTION

    parser.add_argument(
        OPTION,
        action="store_true",
        default=False,
        help=what
        or "import the plugins that [tool.flowc] in pyproject.toml lists even though its "
        "folder is not trusted (`flowc trust`; docs/trust.md); --plugin's load either way",
    )
