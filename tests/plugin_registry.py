"""flowc's process-wide plugin state, kept and put back by the tests that load plugins:
the default registry's custom conditions and targets, and the plugin files imported
(:data:`flowc.runtime.plugins._LOADED`)."""

from __future__ import annotations

from collections.abc import Callable

from flowc.runtime import plugins as plugin_mod
from flowc.runtime.transitions import default_registry


def remember_plugins() -> Callable[[], None]:
    """The plugin state as it is now; the function returned puts it back (as often as it
    is called: a test may load a changed plugin file after it)."""
    reg = default_registry()
    conditions, targets = dict(reg._conditions), dict(reg._targets)
    loaded = set(plugin_mod._LOADED)

    def restore() -> None:
        reg._conditions, reg._targets = dict(conditions), dict(targets)
        plugin_mod._LOADED.clear()
        plugin_mod._LOADED.update(loaded)

    return restore
