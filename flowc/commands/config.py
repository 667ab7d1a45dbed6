"""``[tool.flowc]`` in ``pyproject.toml``: the settings every command reads.

The nearest ``pyproject.toml`` at or above the input (the current folder for
stdin) is read. Its ``[tool.flowc]`` table may hold only the keys of :data:`KEYS`;
any other key is an error that lists them (a typo such as ``ignroe`` must not be
silently ignored). The ``plugins`` it lists are imported only when its folder is trusted
(:mod:`flowc.commands.trust`).

>>> check_keys({"ignroe": ["W201"]}, "pyproject.toml")
Traceback (most recent call last):
...
flowc.commands.config.ConfigError: pyproject.toml: [tool.flowc] has no setting `ignroe` (did you mean `ignore`?); the settings are: ignore, max-states, plugins, select, strict
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from flowc.commands.console import UsageError

if TYPE_CHECKING:
    from flowc.commands.trust import Decision

__all__ = [
    "KEYS",
    "Config",
    "ConfigError",
    "check_keys",
    "config_trusted",
    "find_pyproject",
    "load_config",
]

#: every setting of ``[tool.flowc]`` and what it holds (``max_states`` is also accepted)
KEYS = {
    "select": 'codes or prefixes to report (`flowc check`), e.g. ["W2", "I301"]',
    "ignore": "codes or prefixes not to report (`flowc check`)",
    "strict": "true: warnings fail `flowc check`",
    "max-states": "the bound on abstract states (`flowc check`, default 300000)",
    "plugins": "modules or .py files that implement custom conditions and targets (every "
    "command that reads a flow; imported only from a trusted folder, `flowc trust`)",
}
ALIASES = {"max_states": "max-states"}


class ConfigError(UsageError):
    """The configuration cannot be used (exit 2)."""


def find_pyproject(start: Path) -> Path | None:
    """The nearest ``pyproject.toml`` in ``start`` or a parent folder."""
    here = start.resolve()
    if not here.is_dir():
        here = here.parent
    for folder in (here, *here.parents):
        candidate = folder / "pyproject.toml"
        if candidate.is_file():
            return candidate
    return None


def check_keys(table: dict[str, Any], where: str) -> None:
    """Refuse a key that is not a setting, with a did-you-mean and the list of settings."""
    for key in table:
        if key in KEYS or key in ALIASES:
            continue
        import difflib  # only for a misspelt key: not on every start-up

        close = difflib.get_close_matches(key, [*KEYS, *ALIASES], n=1)
        hint = f" (did you mean `{ALIASES.get(close[0], close[0])}`?)" if close else ""
        raise ConfigError(
            f"{where}: [tool.flowc] has no setting `{key}`{hint}; the settings "
            f"are: {', '.join(sorted(KEYS))}"
        )


def load_config(path: Path | None) -> dict[str, Any]:
    """The ``[tool.flowc]`` table (empty when there is none); a broken file is an error."""
    if path is None:
        return {}
    import tomllib  # only when there is a file to read: a flow outside a project has none

    from flowc.inputs import InputFileError, read_bytes

    try:  # a regular file of at most 16 MiB: never a device or a FIFO
        data = tomllib.loads(read_bytes(str(path)).decode("utf-8"))
    except InputFileError as err:
        raise ConfigError(str(err)) from None
    except UnicodeDecodeError as err:
        raise ConfigError(f"{path}: cannot read ({err})") from None
    except tomllib.TOMLDecodeError as err:
        raise ConfigError(f"{path}: invalid TOML ({err})") from None
    tool = data.get("tool", {})
    table = tool.get("flowc", {}) if isinstance(tool, dict) else {}
    if not isinstance(table, dict):
        raise ConfigError(f"{path}: [tool.flowc] must be a table")
    check_keys(table, str(path))
    return table


@attrs.frozen
class Config:
    """The ``[tool.flowc]`` table that applies to some inputs, and where it was found."""

    path: Path | None
    table: dict[str, Any]

    @classmethod
    def for_inputs(cls, paths: Sequence[str]) -> Config:
        """The configuration of the first input (the current folder for stdin or none)."""
        first = Path(paths[0]) if paths and paths[0] != "-" else Path.cwd()
        path = find_pyproject(first if first.exists() else Path.cwd())
        return cls(path, load_config(path))

    @property
    def where(self) -> str:
        return str(self.path) if self.path is not None else ""

    @property
    def plugins(self) -> tuple[str, ...]:
        value = self.table.get("plugins", [])
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise ConfigError(
                f"{self.where}: plugins takes a list of module names or .py files, "
                'e.g. plugins = ["myproject.routing", "flows/conditions.py"]'
            )
        return tuple(value)


def load_plugins_for(
    cli_specs: Sequence[str] | None, config: Config, *, trusted: bool = True
) -> bool:
    """Load the plugins of ``[tool.flowc]`` (relative to its file), when its folder is
    ``trusted`` (:mod:`flowc.commands.trust`), and then ``--plugin``'s (relative to the
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
    from flowc.commands.trust import add_trust_option

    add_trust_option(parser)


def config_trusted(config: Config, option: bool) -> Decision | None:
    """Whether the plugins ``config`` lists may be imported: the trust rule's decision
    for its folder (:mod:`flowc.commands.trust`; ``option``: ``--trust`` was given), or
    None when it lists none. Raises :class:`~flowc.commands.trust.TrustError`."""
    if not config.plugins or config.path is None:
        return None
    from flowc.commands.trust import decide

    return decide(config.path.parent, option=option)


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
