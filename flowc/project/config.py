"""``[tool.flowc]`` in ``pyproject.toml``: the settings every command reads.

The nearest ``pyproject.toml`` at or above the input (the current folder for
stdin) is read. Its ``[tool.flowc]`` table may hold only the keys of :data:`KEYS`;
any other key is an error that lists them (a typo such as ``ignroe`` must not be
silently ignored). The ``plugins`` it lists are imported only when its folder is trusted
(:mod:`flowc.project.trust`).

>>> check_keys({"ignroe": ["W201"]}, "pyproject.toml")
Traceback (most recent call last):
...
flowc.project.config.ConfigError: pyproject.toml: [tool.flowc] has no setting `ignroe` (did you mean `ignore`?); the settings are: ignore, max-states, plugins, select, strict
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from flowc.diagnostics import CODES
from flowc.escaping import visible
from flowc.project.errors import UsageError

if TYPE_CHECKING:
    from flowc.compiler.analysis.facts import CheckOptions

__all__ = [
    "KEYS",
    "MAX_STATES_CONFIG",
    "Config",
    "ConfigError",
    "check_keys",
    "find_pyproject",
    "load_config",
    "options_from",
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
    """Refuse a key that is not a setting, with a did-you-mean and the list of settings,
    and a setting given under both of its spellings (one of the two would be ignored).

    >>> check_keys({"max-states": 1, "max_states": 2}, "pyproject.toml")
    Traceback (most recent call last):
    ...
    flowc.project.config.ConfigError: pyproject.toml: [tool.flowc] gives the setting `max-states` twice, as `max-states` and as `max_states`; give it once
    """
    for alias, key in ALIASES.items():
        if alias in table and key in table:
            raise ConfigError(
                f"{where}: [tool.flowc] gives the setting `{key}` twice, as `{key}` and as "
                f"`{alias}`; give it once"
            )
    for key in table:
        if key in KEYS or key in ALIASES:
            continue
        import difflib  # only for a misspelt key: not on every start-up

        close = difflib.get_close_matches(key, [*KEYS, *ALIASES], n=1)
        hint = f" (did you mean `{ALIASES.get(close[0], close[0])}`?)" if close else ""
        raise ConfigError(  # (the key escaped as a finding's text is: it may be anything)
            f"{where}: [tool.flowc] has no setting `{visible(key)}`{hint}; the settings "
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


def _codes(value: Any, where: str) -> tuple[str, ...]:
    """Codes or prefixes from a comma-separated string or a list; unknown ones are an error."""
    items: list[str] = []
    if isinstance(value, str):
        items = [x.strip() for x in value.split(",")]
    elif isinstance(value, list) and all(isinstance(x, str) for x in value):
        items = [x.strip() for x in value]
    else:
        raise UsageError(f'{where} takes codes or prefixes, e.g. "W2,I301"')
    out = tuple(x.upper() for x in items if x)
    for code in out:
        if not any(known.startswith(code) for known in CODES):
            raise UsageError(
                f"{where}: `{code}` is not a code or a prefix of one (see `flowc explain`)"
            )
    return out


#: the largest `max-states` a pyproject.toml may set (10x the default); --max-states,
#: given by whoever runs flowc, is not capped
MAX_STATES_CONFIG = 1_000_000


def options_from(args: argparse.Namespace, config: dict[str, Any], where: str) -> CheckOptions:
    """The check's options: the command line's (``args``: ``select``, ``ignore``,
    ``strict``, ``max_states``, ``target``) over ``[tool.flowc]``'s (``config``, read from
    ``where``) over the defaults."""
    from flowc.compiler.analysis.facts import DEFAULT_MAX_STATES, CheckOptions

    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    strict = False
    max_states = DEFAULT_MAX_STATES
    if "select" in config:
        select = _codes(config["select"], f"{where}: select")
    if "ignore" in config:
        ignore = _codes(config["ignore"], f"{where}: ignore")
    if "strict" in config:
        if not isinstance(config["strict"], bool):
            raise UsageError(f"{where}: strict must be true or false")
        strict = config["strict"]
    for key in ("max-states", "max_states"):
        if key in config:
            value = config[key]
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise UsageError(f"{where}: {key} must be an integer >= 1")
            if value > MAX_STATES_CONFIG:
                # a repository's own file must not make CI explore without end
                raise UsageError(
                    f"{where}: {key} is {value:,}; a pyproject.toml may set at "
                    f"most {MAX_STATES_CONFIG:,} (pass --max-states for more)"
                )
            max_states = value
    if args.select is not None:
        select = _codes(args.select, "--select")
    if args.ignore is not None:
        ignore = _codes(args.ignore, "--ignore")
    if args.strict:
        strict = True
    if args.max_states is not None:
        if args.max_states < 1:
            raise UsageError("--max-states must be >= 1")
        max_states = args.max_states
    return CheckOptions(
        max_states=max_states,
        select=select,
        ignore=ignore,
        strict=strict,
        target=getattr(args, "target", "flowc") or "flowc",
    )
