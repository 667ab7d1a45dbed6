"""Trust: which folders' configuration may make flowc import Python (``docs/trust.md``).

The rule, in this one place: the ``plugins`` that a ``pyproject.toml``'s ``[tool.flowc]``
table lists are imported only when the folder that holds that file is *trusted*; plugins
named on the command line (``--plugin``) and the agents module of ``--agents`` are the
user's own choice and always load. A folder is trusted when

* the command was given ``--trust`` (``flowc lsp --trust``: every folder it opens), or
* ``FLOWC_TRUST`` is ``1`` (also ``true``, ``yes``, ``on``): every folder, for a CI job or
  a container that only ever sees its own repository; ``0`` (``false``, ``no``, ``off``)
  trusts no folder, whatever the list says (only ``--trust`` does then); unset or empty,
  the list decides; any other value is an error, or
* it is, or is inside, a folder of the user's list: ``$XDG_CONFIG_HOME/flowc/trusted``
  (``~/.config/flowc/trusted`` when ``XDG_CONFIG_HOME`` is unset or not absolute), one
  absolute folder a line (``#`` begins a comment line), which ``flowc trust [FOLDER]``
  adds to, ``flowc trust --remove FOLDER`` takes from and ``flowc trust --list`` prints.

Why: checking, drawing or merely opening a file in an editor must not run a stranger's
code. A repository is downloaded, checked out for review, opened from a pull request;
its ``pyproject.toml`` is its author's, and importing a module it names runs whatever the
author wrote, as the user, with the user's files and credentials. VS Code's workspace
trust, direnv's ``allow`` and pre-commit's explicit ``install`` draw the same line: the
files of a folder may say what runs only once its user has said they trust it. The rule
holds for every command, those that run flows (``test``, ``run``, ``resume``, ``submit``,
``worker``) included: what they run by design is what their command line names
(``--agents``, ``--plugin``); a configuration file nobody has read is not part of that
choice, and ``flowc test`` is what one runs to see whether a cloned repository works. The
price is one ``flowc trust`` per checkout (or ``FLOWC_TRUST=1`` where every checkout is
the user's own), and a one-line notice, naming the folder and the command that trusts it,
whenever plugins were left out.

Untrusted, a command reads the flow as if no plugin were listed: custom conditions and
targets are declared but not implemented, which ``check``, ``compile``, ``render`` and
``diff`` accept; the commands that run a flow say which names lack an implementation.

>>> decide(Path("/src/app"), environ={"FLOWC_TRUST": "1"}).why
'FLOWC_TRUST=1 trusts every folder'
>>> decide(Path("/src/app"), environ={"FLOWC_TRUST": "0"}).trusted
False
>>> decide(Path("/src/app"), environ={"FLOWC_TRUST": "off"}).why
'FLOWC_TRUST=off trusts no folder'
>>> decide(Path("/src/app"), option=True, environ={"FLOWC_TRUST": "0"}).why
'--trust'
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path

import attrs

from flowc.project.errors import UsageError

__all__ = [
    "ENVIRONMENT",
    "OPTION",
    "Decision",
    "TrustError",
    "TrustList",
    "decide",
    "environment_setting",
    "read_trust_list",
    "real_path",
    "trust_file",
    "trust_list_stamp",
]

#: the environment variable that trusts every folder (``1``) or none (``0``)
ENVIRONMENT = "FLOWC_TRUST"
#: the option that trusts the configuration a command reads
OPTION = "--trust"
_YES = ("1", "true", "yes", "on")
_NO = ("0", "false", "no", "off")
#: the first lines of a list ``flowc trust`` creates (:mod:`flowc.commands.trust_list`)
TRUST_LIST_HEADER = (
    "# Folders whose pyproject.toml may make flowc import Python (the plugins under\n"
    "# [tool.flowc]): one absolute folder a line, its sub-folders included. `flowc trust\n"
    "# FOLDER` adds one, `flowc trust --remove FOLDER` takes one off.\n"
)


class TrustError(UsageError):
    """``FLOWC_TRUST`` or the list of trusted folders cannot be used (exit 2)."""


def trust_file(environ: Mapping[str, str] | None = None) -> Path:
    """The user's list of trusted folders: ``$XDG_CONFIG_HOME/flowc/trusted``, or
    ``~/.config/flowc/trusted`` (the XDG base directory rule: a value that is not an
    absolute path is ignored).

    >>> str(trust_file({"XDG_CONFIG_HOME": "/cfg"}))
    '/cfg/flowc/trusted'
    >>> str(trust_file({"XDG_CONFIG_HOME": "cfg", "HOME": "/home/u"}))
    '/home/u/.config/flowc/trusted'
    """
    env = os.environ if environ is None else environ
    base = env.get("XDG_CONFIG_HOME", "")
    if not base or not os.path.isabs(base):
        home = env.get("HOME") or str(Path.home())
        base = os.path.join(home, ".config")
    return Path(base) / "flowc" / "trusted"


def real_path(path: str | os.PathLike[str]) -> Path:
    """An absolute path with every symbolic link resolved (what the path reaches)."""
    return Path(os.path.realpath(os.path.abspath(path)))


@attrs.frozen
class TrustList:
    """The trusted folders of a list (as written, and as they resolve), and the lines
    it ignores (``(line number, text)``: not absolute paths)."""

    path: Path
    folders: tuple[Path, ...] = ()
    ignored: tuple[tuple[int, str], ...] = ()

    def covering(self, folder: Path) -> Path | None:
        """The listed folder that ``folder`` is (or is inside), if any.

        >>> TrustList(Path("t"), (Path("/src"),)).covering(Path("/src/app"))
        PosixPath('/src')
        >>> TrustList(Path("t"), (Path("/src"),)).covering(Path("/srcx")) is None
        True
        """
        real = real_path(folder)
        for listed in self.folders:
            resolved = real_path(listed)
            if real == resolved or resolved in real.parents:
                return listed
        return None


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_mtime_ns, info.st_size


def trust_list_stamp(environ: Mapping[str, str] | None = None) -> tuple[int, int] | None:
    """When the list of trusted folders last changed (None: there is none), for the
    language server, which reads it again after ``flowc trust``."""
    return _stamp(trust_file(environ))


def read_trust_list(path: Path) -> TrustList:
    """The list in ``path`` (an empty one when there is no such file). A list that
    cannot be read (not a regular file, over 16 MiB, not UTF-8) is a :class:`TrustError`."""
    from flowc.inputs import DataError, InputFileError, MissingInputError, read_text

    try:
        text = read_text(str(path))
    except MissingInputError:
        return TrustList(path)
    except (InputFileError, DataError) as err:
        raise TrustError(f"the list of trusted folders cannot be read: {path}: {err}") from None
    folders: list[Path] = []
    ignored: list[tuple[int, str]] = []
    for number, line in enumerate(text.splitlines(), 1):
        entry = line.strip()
        if not entry or entry.startswith("#"):
            continue
        if os.path.isabs(entry):
            folders.append(Path(entry))
        else:
            ignored.append((number, entry))
    return TrustList(path, tuple(folders), tuple(ignored))


@attrs.frozen
class Decision:
    """Whether a folder is trusted, and why (``--trust``, ``FLOWC_TRUST``, the list)."""

    folder: Path
    trusted: bool
    why: str
    #: ``FLOWC_TRUST=0`` said no: the list was not read
    refused: bool = False

    def notice(self, pyproject: Path, *, server: bool = False) -> str:
        """The one line that says ``pyproject``'s plugins were not imported, and how to
        trust its folder (the command line's ways; the language server's with
        ``server``)."""
        folder = shlex.quote(str(self.folder))
        if self.refused:
            reason = self.why  # FLOWC_TRUST as the user wrote it (`=0`, `=off`, ...)
            how = (
                f"unset {ENVIRONMENT} and run `flowc trust {folder}`"
                if server
                else f"give {OPTION}, or unset {ENVIRONMENT} and run `flowc trust {folder}`"
            )
        else:
            reason = f"{self.folder} is not a trusted folder"
            how = (
                f"run `flowc trust {folder}` (read again at the next check)"
                if server
                else f"run `flowc trust {folder}`, or give {OPTION} once (docs/trust.md)"
            )
        return (
            f"{pyproject}: {'' if server else 'note: '}its plugins were not imported: "
            f"{reason}, so custom conditions and targets have no implementation; {how}"
        )


def environment_setting(environ: Mapping[str, str] | None = None) -> bool | None:
    """What ``FLOWC_TRUST`` says: every folder (True), none (False), nothing (None: unset
    or empty). Any other value is a :class:`TrustError`.

    >>> environment_setting({"FLOWC_TRUST": "Yes"}), environment_setting({"FLOWC_TRUST": ""})
    (True, None)
    """
    env = os.environ if environ is None else environ
    value = env.get(ENVIRONMENT, "").strip()
    if not value:
        return None
    if value.lower() in _YES:
        return True
    if value.lower() in _NO:
        return False
    raise TrustError(
        f"{ENVIRONMENT}={value!r}: give 1 to trust every folder, 0 to trust none, or leave "
        "it unset for the list of trusted folders (`flowc trust --list`) to decide"
    )


def environment_written(environ: Mapping[str, str] | None = None) -> str:
    """``FLOWC_TRUST``'s value as the user wrote it (quoted for a shell when it needs
    to be), for the messages that name it: ``FLOWC_TRUST=off``, never a ``=0`` of ours.

    >>> environment_written({"FLOWC_TRUST": "off"}), environment_written({"FLOWC_TRUST": "Yes "})
    ('off', 'Yes')
    """
    env = os.environ if environ is None else environ
    return shlex.quote(env.get(ENVIRONMENT, "").strip())


def decide(
    folder: Path,
    *,
    option: bool = False,
    environ: Mapping[str, str] | None = None,
    trusted: TrustList | None = None,
) -> Decision:
    """Whether ``folder`` (the one holding a ``pyproject.toml``) is trusted: ``--trust``
    (``option``), else ``FLOWC_TRUST``, else the user's list (``trusted``, read from
    :func:`trust_file` when not given). Raises :class:`TrustError`."""
    folder = real_path(folder)
    if option:
        return Decision(folder, True, OPTION)
    setting = environment_setting(environ)
    if setting is not None:
        said = f"{ENVIRONMENT}={environment_written(environ)}"
        if setting:
            return Decision(folder, True, f"{said} trusts every folder")
        return Decision(folder, False, f"{said} trusts no folder", refused=True)
    listed = trusted if trusted is not None else read_trust_list(trust_file(environ))
    covering = listed.covering(folder)
    if covering is not None:
        return Decision(folder, True, f"{covering} is in {listed.path}")
    return Decision(folder, False, f"{folder} is not in {listed.path}")
