"""`flowc trust [FOLDER]`, `--list`, `--remove FOLDER`: the user's list of trusted folders.

The rule it serves, and why, is :mod:`flowc.project.trust`'s: the plugins a
``pyproject.toml`` lists are imported only when its folder is in this list (or inside a
folder that is), or the command was given ``--trust``, or ``FLOWC_TRUST=1``. This command
is the only one that writes the list; every other command reads it.
"""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from flowc.commands.console import EXIT_OK, UsageError
from flowc.commands.texts import add_command
from flowc.project.config import find_pyproject
from flowc.project.trust import (
    ENVIRONMENT,
    OPTION,
    TRUST_LIST_HEADER,
    environment_setting,
    read_trust_list,
    real_path,
    trust_file,
)


def _write(path: Path, lines: Sequence[str]) -> None:
    """Replace the list at ``path`` with ``lines`` (its folder made, mode 0700, when
    missing); the file is replaced whole, so a reader never sees half of it. A list that
    is a symbolic link (kept with the user's other settings elsewhere) is written where it
    points, and stays a link."""
    path = real_path(path)
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        temporary.write_text("".join(lines), encoding="utf-8")
        os.replace(temporary, path)
    except OSError as err:
        raise UsageError(f"{path}: cannot write ({err.strerror or err})") from None


def _lines(path: Path) -> list[str]:
    read_trust_list(path)  # a list that cannot be read is not rewritten
    try:
        return path.read_text(encoding="utf-8").splitlines(keepends=True)
    except FileNotFoundError:
        return []


def _folder_argument(given: str | None) -> Path:
    """The folder ``flowc trust`` is about: ``given``, or the one holding the nearest
    ``pyproject.toml`` at or above the current folder."""
    if given is None:
        found = find_pyproject(Path.cwd())
        if found is None:
            raise UsageError(
                "no pyproject.toml in the current folder or above it: give the folder to "
                "trust (flowc trust FOLDER)"
            )
        return found.parent
    folder = real_path(given)
    if not folder.is_dir():
        raise UsageError(f"{given}: no such folder")
    return folder


def _trust(args: argparse.Namespace, path: Path) -> int:
    folder = _folder_argument(args.folder)
    if any(c in str(folder) for c in "\n\r"):
        # the list holds a folder a line: such a name would be read back as other folders
        # (a checkout's folder `a<newline>/tmp` would trust /tmp)
        raise UsageError(
            f"{str(folder)!r}: a folder whose path holds a line break cannot be trusted "
            "(the trust list holds one folder a line); rename it, or give --trust to the "
            "commands run there"
        )
    listed = read_trust_list(path)
    covering = listed.covering(folder)
    if covering is not None:
        by = "" if real_path(covering) == folder else f" (inside {covering})"
        print(f"{folder} is already trusted{by}: {path}", file=sys.stderr)
        return EXIT_OK
    lines = _lines(path) or [TRUST_LIST_HEADER]
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    _write(path, [*lines, f"{folder}\n"])
    print(
        f"trusted {folder} and its sub-folders: flowc imports the plugins their "
        f"pyproject.toml lists (the list: {path})",
        file=sys.stderr,
    )
    _environment_note()
    return EXIT_OK


def _remove(args: argparse.Namespace, path: Path) -> int:
    folder = real_path(args.remove)
    listed = read_trust_list(path)
    kept: list[str] = []
    removed = 0
    for line in _lines(path):
        entry = line.strip()
        if (
            entry
            and not entry.startswith("#")
            and os.path.isabs(entry)
            and real_path(entry) == folder
        ):
            removed += 1
            continue
        kept.append(line)
    if not removed:
        covering = listed.covering(folder)
        if covering is not None:
            raise UsageError(
                f"{folder} is trusted because {covering} is: remove that one "
                f"(flowc trust --remove {shlex.quote(str(covering))})"
            )
        raise UsageError(f"{folder} is not in the list of trusted folders ({path})")
    _write(path, kept)
    print(f"{folder} is no longer trusted (the list: {path})", file=sys.stderr)
    _environment_note()
    return EXIT_OK


def _list(path: Path) -> int:
    listed = read_trust_list(path)
    for folder in listed.folders:
        print(folder)
    for number, entry in listed.ignored:
        print(f"{path}:{number}: ignored: not an absolute folder: {entry}", file=sys.stderr)
    if not listed.folders:
        print(f"no trusted folders ({path})", file=sys.stderr)
    _environment_note()
    return EXIT_OK


def _environment_note() -> None:
    """What ``FLOWC_TRUST`` does to the list, when it is set."""
    setting = environment_setting()
    if setting is not None:
        says = "every folder is trusted" if setting else "no folder is trusted"
        print(f"note: {ENVIRONMENT} is set: {says}, whatever the list says", file=sys.stderr)


def cmd_trust(args: argparse.Namespace) -> int:
    path = trust_file()
    if args.list:
        if args.folder is not None or args.remove is not None:
            raise UsageError("--list takes no folder")
        return _list(path)
    if args.remove is not None:
        if args.folder is not None:
            raise UsageError("give the folder once: flowc trust --remove FOLDER")
        return _remove(args, path)
    return _trust(args, path)


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(
        sub,
        "trust",
        description="Add a folder to your list of trusted folders "
        f"({trust_file()}): flowc imports the plugins that [tool.flowc] in a "
        "pyproject.toml lists only when the file is in a trusted folder or below one, "
        "so that checking, drawing or opening a stranger's flow runs none of its "
        f"Python. {OPTION} trusts one command's configuration, {ENVIRONMENT}=1 every "
        "folder (docs/trust.md).",
    )
    p.add_argument(
        "folder",
        nargs="?",
        metavar="FOLDER",
        help="the folder to trust, with its sub-folders (default: the one holding the "
        "nearest pyproject.toml at or above the current folder)",
    )
    p.add_argument("--list", action="store_true", help="print the trusted folders")
    p.add_argument("--remove", metavar="FOLDER", help="take FOLDER off the list")


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {"trust": cmd_trust}
