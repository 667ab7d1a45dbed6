"""Start-up of the `flowc` command: the compiled methods of flowc's attrs classes, kept
between runs as Python keeps a module's compiled code in ``__pycache__``.

attrs writes each class's ``__init__``, ``__eq__``, ``__repr__``, ... as Python source
and compiles it when the class is created: for the ~120 classes a command such as
``flowc run`` loads, that compiling is a good part of its start-up. The command line
installs :func:`install` before it imports anything else: each compiled piece of a
flowc class, and of the ~30 classes attrs makes for itself as it loads (its validators,
``Attribute``, ``Factory``...), is then looked up by its exact source text in a cache file under
``flowc/__pycache__`` (``marshal``, as ``.pyc`` files are, one file per Python
version), and compiled only when it is not there. :func:`save` writes what was
compiled anew, once, when the command ends. The code is the same either way; only
the compiling is skipped. A cache that cannot be read or written is ignored, as
Python ignores a ``__pycache__`` it cannot use (``PYTHONDONTWRITEBYTECODE`` is obeyed).
"""

from __future__ import annotations

import atexit
import gc
import marshal
import os
import sys
from collections.abc import Callable
from pathlib import Path
from types import CodeType
from typing import Any, NoReturn

__all__ = ["begin", "end", "install", "loaded", "save"]

#: source text of a class's generated methods -> their compiled code
_codes: dict[tuple[str, str], CodeType] = {}
_new = False
_path: Path | None = None
_GENERATED = "<attrs generated "
_METHODS = "<attrs generated methods "
_GETATTR = "<attrs generated getattr "  # the __getattr__ of a class with a cached_property
_HASH = "<attrs generated hash "
_TYPE_HASH = "__flowc_attrs_type_hash__"
#: whether :func:`begin` turned the cycle collector off (then :func:`loaded` turns it on)
_collector_held = False


def _cache_path() -> Path | None:
    # the key of an entry is the exact source it compiles, so an attrs that writes its
    # methods otherwise simply misses; the Python version decides the marshal format
    tag = sys.implementation.cache_tag
    if tag is None:
        return None
    return Path(__file__).resolve().parent / "__pycache__" / f"attrs-methods.{tag}.marshal"


def _read_cache() -> Path | None:
    """Load the cache file into :data:`_codes` (once); its path, or None without one."""
    global _path
    if _path is None:
        _path = _cache_path()
        if _path is None:
            return None
        try:
            loaded = marshal.loads(_path.read_bytes())
            if isinstance(loaded, dict):
                _codes.update(loaded)
        except (OSError, ValueError, EOFError, TypeError):
            pass  # no cache yet, or one this Python cannot read: compile as usual
    return _path


def _attrs_own_compile(real_compile: Callable[..., Any]) -> Callable[..., Any]:
    """``compile`` as attrs calls it while it loads (it builds its own classes, e.g. its
    validators, as it builds any), through the cache; any other call goes to
    ``real_compile`` unchanged.

    A generated ``__hash__`` holds its class's type hash as a number that changes with
    each process (str hashes are salted): the cached source computes it instead,
    ``hash("<attrs generated hash CLASS>")``, the same value attrs wrote."""

    def compile_cached(source: Any, filename: Any, mode: str, flags: int = 0,
                       dont_inherit: bool = False, optimize: int = -1, **kwargs: Any) -> Any:
        global _new
        parts = filename.split(" ", 3) if isinstance(filename, str) else ()
        if (mode != "exec" or flags or dont_inherit or optimize != -1 or kwargs
                or not isinstance(source, str) or len(parts) != 4
                or not filename.startswith(_GENERATED)
                or not parts[3].startswith(("attr.", "attrs."))):
            return real_compile(source, filename, mode, flags, dont_inherit, optimize, **kwargs)
        if "def __hash__" in source:
            name = f"{_GENERATED}hash {parts[3]}"
            literal = f" {hash(name)},\n"
            if literal not in source:  # written otherwise: compiled as usual
                return real_compile(source, filename, mode)
            source = source.replace(literal, f" hash({name!r}),\n")
        key = (filename, source)
        code = _codes.get(key)
        if code is None:
            code = _codes[key] = real_compile(source, filename, mode)
            _new = True
        return code

    return compile_cached


def install() -> None:
    """Compile flowc's attrs classes through the cache, and attrs' own when attrs is not
    loaded yet (a no-op when attrs is not the version this knows, or is already
    patched)."""
    if "attr" not in sys.modules and _read_cache() is not None:
        import builtins

        real_compile = builtins.compile
        builtins.compile = _attrs_own_compile(real_compile)
        try:
            import attr  # noqa: F401  (its own classes are made now)
        except ImportError:  # pragma: no cover - attrs is a dependency
            return
        finally:
            builtins.compile = real_compile
    try:
        from attr import _make
    except ImportError:  # pragma: no cover - attrs is a dependency
        return
    compile_and_eval = getattr(_make, "_compile_and_eval", None)
    if compile_and_eval is None or getattr(compile_and_eval, "_flowc_cached", False):
        return
    if _read_cache() is None:
        return

    def cached_compile_and_eval(script: str, globs: dict[str, Any] | None,
                                locs: Any = None, filename: str = "") -> None:
        global _new
        if globs is None or not filename.startswith((_METHODS, _GETATTR)) or " flowc." not in filename:
            compile_and_eval(script, globs, locs, filename)  # only flowc's own classes
            return
        if "def __hash__" in script:
            # the class's type hash is written into __hash__ as a number that changes
            # with each process (str hashes are salted): read it from a global instead
            type_hash = hash(filename.replace(_METHODS, _HASH, 1))
            literal = f" {type_hash},\n"
            if literal not in script:  # an attrs that writes it otherwise: no caching
                compile_and_eval(script, globs, locs, filename)
                return
            script = script.replace(literal, f" {_TYPE_HASH},\n")
            globs[_TYPE_HASH] = type_hash
        key = (filename, script)
        code = _codes.get(key)
        if code is None:
            code = _codes[key] = compile(script, filename, "exec")
            _new = True
        eval(code, globs, locs)

    cached_compile_and_eval._flowc_cached = True  # type: ignore[attr-defined]
    _make._compile_and_eval = cached_compile_and_eval


def begin() -> None:
    """Start-up of a command: the cycle collector is off while the command's modules load.

    Loading makes objects that live as long as the process (modules, classes,
    functions, code) and no garbage worth a pass: each pass of the collector during
    the imports walks all of them again, and the later ones each walk everything
    loaded before. :func:`loaded` turns the collector back on when the command starts
    its work. (Off only when it was on: a caller that runs with it off keeps it so.)"""
    global _collector_held
    if gc.isenabled():
        gc.disable()
        _collector_held = True


def loaded() -> None:
    """The command's modules are loaded and it starts its work: what the start-up made
    is moved out of the collector's sight (``gc.freeze``: modules, classes and code live
    as long as the process; the few cycles that building slotted classes leaves behind
    stay too, a bounded one-off amount) and the collector runs again as usual for what
    the command makes. A no-op unless
    :func:`begin` turned it off (``flowc.cli.main`` called in a process of its own)."""
    global _collector_held
    if _collector_held:
        _collector_held = False
        gc.freeze()
        gc.enable()


def save() -> None:
    """Write the cache if this run compiled something new (atomically: a concurrent
    run reads the old file or the new one, never half of one)."""
    global _new
    if not _new or _path is None or sys.dont_write_bytecode:
        return
    _new = False
    try:
        _path.parent.mkdir(exist_ok=True)
        tmp = _path.with_name(f"{_path.name}.{os.getpid()}.tmp")
        tmp.write_bytes(marshal.dumps(dict(_codes)))
        os.replace(tmp, _path)
    except OSError:
        pass  # a read-only install: compile again next time


def end(code: int) -> NoReturn:
    """End the process with ``code`` as :func:`sys.exit` does, less the interpreter's
    tear-down.

    The functions registered with :mod:`atexit` run and stdout and stderr are flushed,
    as at any exit; then the process ends without freeing, module by module, every
    object the command made (7-9 ms of CPU after a scripted 2,400-turn ``flowc run``,
    measured on a loaded machine; mypy ends its runs the same way). Python does not
    promise to finalize objects still alive at exit, and flowc's commands close what
    they open (the WAL store included) before they return. The usual exit is taken
    when another thread still runs (it waits for non-daemon threads), under a profiler
    or a tracer (``python -m cProfile``, coverage, a debugger: they write their results
    once the program returns), when this Python cannot run the exit functions itself,
    or when a flush fails (its error is then reported as usual)."""
    threading = sys.modules.get("threading")
    run_exit_functions = getattr(atexit, "_run_exitfuncs", None)
    if (not callable(run_exit_functions) or sys.getprofile() is not None
            or sys.gettrace() is not None
            or (threading is not None and threading.active_count() > 1)):
        sys.exit(code)
    run_exit_functions()  # each runs once: the list is emptied
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError, AttributeError):
        sys.exit(code)
    os._exit(code)
