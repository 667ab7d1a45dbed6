"""Loading the plugins a project names: ``[tool.flowc]``'s ``plugins`` (only from a
trusted folder, :mod:`flowc.project.trust`) and those given by whoever runs flowc
(``--plugin``). The imports themselves are :mod:`flowc.runtime.plugins`'s."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from flowc.project.config import Config, ConfigError

if TYPE_CHECKING:
    from flowc.project.trust import Decision

__all__ = ["config_trusted", "load_plugins_for"]


def load_plugins_for(
    cli_specs: Sequence[str] | None, config: Config, *, trusted: bool = True
) -> bool:
    """Load the plugins of ``[tool.flowc]`` (relative to its file), when its folder is
    ``trusted`` (:mod:`flowc.project.trust`), and then ``--plugin``'s (relative to the
    current folder). Returns whether any plugin was loaded."""
    configured = config.plugins if trusted else ()
    if not configured and not cli_specs:
        return False  # `flowc compile` without plugins loads no runtime
    from flowc.runtime.plugins import PluginError, load_plugins

    try:
        if configured and config.path is not None:
            load_plugins(configured, base=config.path.parent, origin=f"{config.path}: plugins:")
        if cli_specs:
            load_plugins(cli_specs)
    except PluginError as err:
        raise ConfigError(str(err)) from None
    return bool(configured or cli_specs)


def config_trusted(config: Config, option: bool) -> Decision | None:
    """Whether the plugins ``config`` lists may be imported: the trust rule's decision
    for its folder (:mod:`flowc.project.trust`; ``option``: ``--trust`` was given), or
    None when it lists none. Raises :class:`~flowc.project.trust.TrustError`."""
    if not config.plugins or config.path is None:
        return None
    from flowc.project.trust import decide

    return decide(config.path.parent, option=option)
