"""`flowc run`, `flowc log`, `flowc replay`: the hub runtime from the shell (`flowc test`
is in :mod:`flowc.commands.testing`).

Exit codes: 0 ok (the run closed / every scenario passed / the replay matches),
1 input errors or a failed scenario / stalled run / diverging replay, 2 could not run,
3 the run (``run`` / ``resume``) broke one of the flow's properties.
"""

from __future__ import annotations

import argparse
import asyncio
import inspect
import json
import os
import shlex
import sys
import traceback
from collections.abc import Awaitable, Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from flowc.commands.config import setup_plugins
from flowc.commands.console import (
    EXIT_ERRORS,
    EXIT_OK,
    EXIT_USAGE,
    UsageError,
    is_json_input,
    print_diagnostics,
    read_source,
    report_unimplemented,
)
from flowc.commands.run_options import (
    DEFAULT_DB,
    STORES,
    agents_option,
    contracts_option,
    flow_argument,
    on_violation_option,
    script_option,
    store_options,
)
from flowc.commands.run_output import (
    RunPrinter,
    failure_line,
    format_turns,
    graph_refused,
    isatty,
    silent_json,
    silent_lines,
    speaker_column,
    terminal_asker,
    violations_line,
)
from flowc.commands.texts import add_command
from flowc.compiler.serde import canonical_json
from flowc.diagnostics import counted, has_errors
from flowc.dsl.names import format_name
from flowc.escaping import one_line, written_as
from flowc.inputs import DataError
from flowc.runtime.adapters.base import ChannelMetadata, ProtocolError
from flowc.runtime.clients import Turn
from flowc.runtime.envelope import (
    EV_CHANNEL_OPENED,
    EV_RUN_STALLED,
    EV_TURN_FAILED,
    Envelope,
)
from flowc.runtime.failures import PluginFailed, tracebacks_wanted
from flowc.runtime.fork import UNADDRESSABLE, unaddressable
from flowc.runtime.hub import Hub
from flowc.runtime.refold import stop_text
from flowc.runtime.script import Script, ScriptError, parse_script
from flowc.runtime.script_run import (
    AskHuman,
    WatchStopped,
    graph_refusals,
    resume_script,
    run_script,
)
from flowc.runtime.scripted_replies import check_script, refuse_bare_graph_keys
from flowc.runtime.stores import LAST, db_name, is_url, open_store
from flowc.runtime.target import RunTarget
from flowc.runtime.transcript import (
    DAMAGED_STATUS,
    PLUGIN_FAILED,
    PROPERTY_KEY,
    READ_ERRORS,
    RunResult,
    SilentRound,
    in_order,
    run_error_text,
    stored_run_status,
    transcript,
    transcript_folder,
    turn_json,
)
from flowc.runtime.wal import WalError, WalStore, describe_holder

#: the exit status of a run stopped by Ctrl-C (128 + SIGINT, as a shell reports it)
EXIT_INTERRUPTED = 130
#: the exit status of a run that broke one of its flow's properties (stopped for it
#: under ``--on-violation stop``, or let go on under ``warn``), whether it closed or not
EXIT_VIOLATED = 3


def run_status(result: RunResult) -> int:
    """A run's exit status: :data:`EXIT_VIOLATED` when it broke a property (what the
    user asked to be told comes first), else 0 when it closed and 1 when it stalled."""
    if result.property_violations:
        return EXIT_VIOLATED
    return EXIT_OK if result.close_reason is not None else EXIT_ERRORS


# ── loading ───────────────────────────────────────────────────────────────────


def load_target(path: str) -> tuple[RunTarget | None, bool]:
    """FLOW (a `.flow`, or JSON holding a graph or knobs dict) -> (target, is_flow)."""
    source, diags = read_source(path)
    if source is None:
        print_diagnostics(diags, {})
        return None, False
    if is_json_input(path, source.text):
        from flowc.compiler.pipeline import load_graph_json

        loaded, diags = load_graph_json(source)
        if loaded is None:
            print_diagnostics(diags, {source.name: source})
            return None, False
        from flowc.compiler.analysis import pattern_refusals

        prefix = "graph." if loaded.is_knobs else ""
        refused = pattern_refusals(loaded.graph, source.name, prefix)
        if refused:  # E114, as `flowc check` reports it (custom names: once plugins load)
            print_diagnostics(refused, {source.name: source})
            return None, False
        target = RunTarget.from_graph(
            loaded.graph, loaded.context_vars, label=path, json_prefix=prefix
        )
        return target, False
    from flowc.compiler.pipeline import compile_source

    compiled, diags = compile_source(source)
    if diags:
        print_diagnostics(diags, {source.name: source})
    if compiled is None or has_errors(diags) or report_unimplemented(compiled, source.name):
        return None, True
    return RunTarget.from_compiled(
        compiled, source_text=source.text, label=path, filename=source.name
    ), True


def load_script(path: str) -> Any:
    """A script file, JSON or YAML (by extension; otherwise JSON first, then YAML).

    Read within :mod:`flowc.inputs`' limits: a regular file of at most 16 MiB, UTF-8,
    nested at most 100 levels, aliases expanding it to at most 1 MiB (or its own size),
    no integer over 4,300 digits, finite numbers. Refusals raise :class:`DataError`.
    """
    from flowc.inputs import (
        SCRIPT_MAX_DEPTH,
        InputFileError,
        decode_utf8,
        load_json,
        load_yaml,
        read_bytes,
        text_position,
        yaml_position,
    )

    try:
        text = decode_utf8(read_bytes(path))
    except InputFileError as err:
        raise UsageError(str(err)) from None
    json_error: json.JSONDecodeError | None = None
    if not path.endswith((".yaml", ".yml")):
        try:
            return load_json(text, max_depth=SCRIPT_MAX_DEPTH)
        except json.JSONDecodeError as err:
            if path.endswith(".json"):  # (lines end as flowc ends them: a lone \r too)
                line, column = text_position(text, err.pos)
                raise DataError(
                    f"not valid JSON: {err.msg}", offset=err.pos, line=line, column=column
                ) from None
            json_error = err
    import yaml  # only for YAML: a JSON script does not pay for it

    try:
        return load_yaml(text)
    except yaml.YAMLError as err:
        kind = "YAML" if json_error is None else "JSON or YAML"
        # where and what, as PyYAML words it, not the quoted text (the file may be anything)
        mark = getattr(err, "problem_mark", None) or getattr(err, "context_mark", None)
        what = ", ".join(
            str(x) for x in (getattr(err, "context", None), getattr(err, "problem", None)) if x
        )
        at = yaml_position(text, mark) if mark is not None else None
        raise DataError(
            f"not valid {kind}: {what or type(err).__name__}",
            line=at[0] if at is not None else None,
            column=at[1] if at is not None else None,
        ) from None


def read_script(path: str) -> tuple[Any, Script] | None:
    """The script document at ``path`` and the script it holds; ``None`` once the reason
    it cannot be read has been printed, the same words for every command that takes
    ``--script``: ``PATH:LINE:COL: error: ...`` for text that is not JSON or YAML or that
    flowc refuses, ``PATH: error: script.a[0]: ...`` (the JSON path) for a script of the
    wrong shape. A missing or unreadable file is a usage error (exit 2), as for a flow."""
    try:
        doc = load_script(path)
        return doc, parse_script(doc)
    except ScriptError as err:
        print(f"{path}: error: {err}", file=sys.stderr)
    except DataError as err:
        where = f":{err.line}:{err.column}" if err.line is not None else ""
        at = f" (at {err.path})" if err.path else ""
        print(f"{path}{where}: error: {err.message}{at}", file=sys.stderr)
    return None


def _import_error(path: str, err: BaseException) -> str:
    """``path:LINE: cannot import it: Kind: message`` (the deepest line in ``path``)."""
    line = None
    if (
        isinstance(err, SyntaxError)
        and err.filename
        and Path(err.filename).resolve() == Path(path).resolve()
    ):
        line = err.lineno
    else:
        for frame in traceback.extract_tb(err.__traceback__):
            if Path(frame.filename).resolve() == Path(path).resolve():
                line = frame.lineno
    where = f"{path}:{line}" if line else path
    return f"{where}: cannot import it: {type(err).__name__}: {err}"


def _agent_fn(path: str, name: str, value: Any) -> Callable[[Turn], Awaitable[Any]]:
    """One ``AGENTS`` value -> the async callable the hub drives (``UsageError`` if unusable)."""
    where = f"{path}: AGENTS[{name!r}]"
    if "ag2" in sys.modules:  # the module built its agents with AG2, so AG2 is installed
        from flowc.ag2 import agent_callable, is_agent

        if is_agent(value):
            try:
                return agent_callable(value)
            except ValueError as err:
                raise UsageError(f"{where}: {err}") from None
    if not callable(value):
        raise UsageError(
            f"{where} is a {type(value).__name__}: give an async callable "
            "taking a Turn, or an AG2 Agent"
        )
    try:
        inspect.signature(value).bind(None)
    except TypeError:
        raise UsageError(
            f"{where}: {getattr(value, '__name__', type(value).__name__)} must "
            "take one argument, the Turn"
        ) from None
    except ValueError:  # no signature to inspect (some builtins): let the call decide
        pass
    if inspect.iscoroutinefunction(value):
        return value  # type: ignore[no-any-return]

    async def call(turn: Turn) -> Any:  # an object with ``__call__``, or a plain function
        result = value(turn)
        return await result if inspect.isawaitable(result) else result

    return call


def load_agents(path: str) -> dict[str, Callable[[Turn], Awaitable[Any]]]:
    """A Python file whose ``AGENTS`` (or ``agents``) maps speaker names to agents.

    A value is an async callable taking a :class:`~flowc.runtime.clients.Turn` (a plain
    function is called and its result awaited if need be), or an AG2 ``Agent``
    (bridged through :func:`flowc.ag2.agent_callable`). A file that is missing or
    fails to import, or a value that is neither, raises :class:`UsageError`. The
    file's folder is on ``sys.path`` while it is imported, as for ``python FILE``.

    >>> load_agents("no/such/agents.py")
    Traceback (most recent call last):
    ...
    flowc.project.errors.UsageError: no/such/agents.py: no such file
    """
    file = Path(path)
    if not file.is_file():
        raise UsageError(f"{path}: {'a folder, not a file' if file.is_dir() else 'no such file'}")
    module_name = "flowc_agents_" + "".join(c if c.isalnum() else "_" for c in file.stem)
    from flowc.runtime.plugins import NotAModule, import_file

    try:
        module = import_file(file, module_name)
    except NotAModule:
        raise UsageError(f"{path}: cannot load as a Python module") from None
    except (Exception, SystemExit) as err:  # (`sys.exit` while it loads ends no run)
        raise UsageError(_import_error(path, err)) from None
    mapping = getattr(module, "AGENTS", None)
    if mapping is None:
        mapping = getattr(module, "agents", None)
    if not isinstance(mapping, Mapping):
        raise UsageError(f"{path}: define AGENTS = {{speaker name: async callable or AG2 Agent}}")
    out: dict[str, Callable[[Turn], Awaitable[Any]]] = {}
    for name, agent in mapping.items():
        if not isinstance(name, str):
            raise UsageError(f"{path}: AGENTS keys are speaker names, got {name!r}")
        out[name] = _agent_fn(path, name, agent)
    return out


# ── printing ──────────────────────────────────────────────────────────────────


def _j(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _mode(args: argparse.Namespace) -> str:
    return "jsonl" if getattr(args, "jsonl", False) else "json" if args.json else "text"


def _asker(args: argparse.Namespace, printer: RunPrinter) -> AskHuman | None:
    """How a human with no scripted turn left answers: at the terminal. With ``--script``
    only when stdin is a terminal (otherwise the run stalls on that human, so a scripted
    run never waits for input nobody will type); with ``--agents`` alone, from stdin
    whatever it is (a terminal or a pipe)."""
    if args.script is not None and not isatty(sys.stdin):
        return None
    echo = printer.mode != "text" or not isatty(sys.stdout)
    return terminal_asker(printer, echo=echo)


def _resume_hint(printer: RunPrinter, args: argparse.Namespace) -> str | None:
    """The command that continues the stopped run, or ``None`` when nothing stored it
    (no run yet, or ``--db :memory:``); a PostgreSQL URL is named without its password.
    Each argument is quoted for a POSIX shell, so the line can be pasted as it is (a URL
    holding ``&``, a path holding a space)."""
    run_id = printer.run_id
    if run_id is None or args.db == ":memory:":
        return None
    argv = ["flowc", "resume", run_id, "--db", db_name(args.db)]
    if args.script:
        argv += ["--script", args.script]
    if args.agents:
        argv += ["--agents", args.agents]
    return shlex.join(argv)


def _refused_hint(printer: RunPrinter, args: argparse.Namespace, result: RunResult) -> None:
    """A turn the flow's declarations refused stopped the run: it stays open; say how to
    continue it (``--contracts warn`` lets such a turn through)."""
    if not result.refused:
        return
    hint = _resume_hint(printer, args)
    if hint is None:
        return
    if "--contracts" not in hint:
        hint += " --contracts warn"
    print(
        f"run {printer.run_id} is open; continue it with `{hint}` to let such turns "
        "through with a warning",
        file=sys.stderr,
    )


def _interrupted(printer: RunPrinter, args: argparse.Namespace) -> int:
    """Ctrl-C: the turns so far are printed; say which run stays open and how to go on."""
    printer.interrupted(_resume_hint(printer, args), stored=args.db != ":memory:")
    return EXIT_INTERRUPTED


def _output_closed(printer: RunPrinter, args: argparse.Namespace) -> int:
    """stdout was closed mid-run (``flowc run ... | head -1``): the run stopped between
    two turns and stays open; say how to continue it on stderr, then end as a command
    whose output pipe broke (:data:`flowc.commands.console.EXIT_PIPE`)."""
    hint = _resume_hint(printer, args)
    if hint is not None:
        print(
            f"run {printer.run_id} stopped: its output was closed; continue it with `{hint}`",
            file=sys.stderr,
        )
    raise BrokenPipeError


def _watch_stopped(command: str, stop: WatchStopped, args: argparse.Namespace) -> int:
    """The transcript failed mid-run: the run went on to its end in the database, but the
    output is missing turns. A turn the output cannot take (a character the terminal's
    encoding lacks, a write that failed): say so, why, and how the run ended, on stderr,
    and exit 2 (the command could not do what it was asked). Anything else is a bug in
    the printer: raised, an internal error (exit 2 too)."""
    if not isinstance(stop.error, (OSError, UnicodeError)):
        raise stop.error
    result = stop.result
    if result.close_reason is not None:
        ended = f"closed {json.dumps(result.close_reason)}"
    elif result.stalled_on is not None:
        ended = f"stalled on {one_line(result.stalled_on)}"
    else:
        ended = "stopped open"
    shown = f"`flowc log {result.channel_id} --db {db_name(args.db)}` shows it"
    if args.db == ":memory:":
        shown = "it was kept in memory only"
    print(
        one_line(
            f"flowc {command}: the transcript stopped after {counted(stop.shown, 'turn')}: "
            f"{type(stop.error).__name__}: {stop.error}; the run itself is unaffected: run "
            f"{result.channel_id} {ended} after {counted(result.turn_count, 'turn')} ({shown})"
        ),
        file=sys.stderr,
    )
    return EXIT_USAGE


def cmd_run(args: argparse.Namespace) -> int:
    if args.script is None and args.agents is None:
        raise UsageError("give --script SCRIPT, --agents MODULE.py, or both")
    setup_plugins(args, [args.flow])
    target, _ = load_target(args.flow)
    if target is None:
        return EXIT_ERRORS
    if args.script:
        loaded = read_script(args.script)
        if loaded is None:
            return EXIT_ERRORS
        script = loaded[1]
    else:
        script = parse_script({})
    try:  # (first: the AGENTS check below sees the script's speakers)
        refuse_bare_graph_keys(target, script)
        # the script as `run_script` checks it, before the database is opened (or created)
        check_script(target.with_script_facts(script), script)
    except ScriptError as err:
        print(f"{args.script}: error: {err}", file=sys.stderr)
        return EXIT_ERRORS
    agents = load_agents(args.agents) if args.agents else None
    if agents:
        speakers = target.with_script_facts(script).speakers
        unknown = sorted(set(agents) - set(speakers))
        if unknown:
            raise UsageError(
                f"{args.agents}: AGENTS names no speaker of {args.flow}: "
                f"{', '.join(unknown)} (its speakers: {', '.join(speakers)})"
            )
    target = target.with_script_facts(script)
    refused = graph_refusals(target)  # (before the database is opened, or created)
    if refused:
        return graph_refused(args.flow, target, refused)
    try:
        store: WalStore = open_store(args.db)
    except WalError as err:
        raise UsageError(str(err)) from None
    printer = RunPrinter(target, _mode(args))
    try:
        result = asyncio.run(
            run_script(
                target,
                script,
                store=store,
                agents=agents,
                ask_human=_asker(args, printer),
                labels={"script": args.script or ""},
                watch=printer,
                contracts=args.contracts,
                on_violation=args.on_violation,
            )
        )
    except KeyboardInterrupt:
        if printer.run_id is not None:
            printer.catch_up(list(store.read(printer.run_id)))
        store.close()
        return _interrupted(printer, args)
    except asyncio.CancelledError:
        store.close()
        if not printer.broken:
            raise
        return _output_closed(printer, args)
    except WatchStopped as stop:
        store.close()
        return _watch_stopped("run", stop, args)
    except ScriptError as err:
        store.close()
        print(f"{args.script or args.agents}: error: {err}", file=sys.stderr)
        return EXIT_ERRORS
    except WalError as err:  # the database failed (full disk, damaged, read-only)
        store.close()
        raise UsageError(str(err)) from None
    except ProtocolError as err:  # the graph was refused when the channel opened
        store.close()
        return graph_refused(args.flow, target, getattr(err, "problems", None) or [err])
    except Exception:  # a bug in flowc: the command line reports it (exit 2)
        store.close()
        raise
    store.close()
    printer.finish(result)
    _refused_hint(printer, args, result)
    if printer.broken:
        raise BrokenPipeError  # the run ended, but its output could not all be written
    return run_status(result)


# ── flowc log / replay ────────────────────────────────────────────────────────


def _open_db(path: str, *, readonly: bool = False) -> WalStore:
    if not is_url(path) and not os.path.lexists(path):  # a link is the store's to refuse
        raise UsageError(f"{path}: no run database (flowc run writes one)")
    try:
        return open_store(path, readonly=readonly)
    except WalError as err:
        raise UsageError(str(err)) from None


def find_run(store: WalStore, run: str, db: str | None = None) -> str:
    """The full id of the stored run ``run`` names: an id, a unique prefix of one, or
    ``last`` (the newest); a usage error otherwise (naming ``db`` when given)."""
    try:
        ids = store.channel_ids()
    except WalError as err:
        raise UsageError(str(err)) from None
    if run == LAST and ids:  # (the newest, always: no run is given that id)
        return ids[-1]
    if run in ids:
        return run
    matches = [c for c in ids if c.startswith(run)]
    if len(matches) == 1:
        return matches[0]
    if not matches:
        where = f" in {db}" if db is not None else ""
        raise UsageError(f"no run {run!r}{where} (flowc log lists them)")
    raise UsageError(f"{run!r} matches several runs: {', '.join(matches)}")


def _opening(envs: list[Envelope]) -> ChannelMetadata:
    """The metadata of a stored run's opening (its first record); a run that does not
    start with one is damaged (:class:`ProtocolError`), for ``log`` and ``log RUN`` alike."""
    if not envs or envs[0].event_type != EV_CHANNEL_OPENED:
        raise ProtocolError("the WAL of this run does not start with its opening")
    return ChannelMetadata.from_dict(envs[0].event_data.get("metadata"))


def _refuse_broken(store: WalStore, cid: str, envs: list[Envelope], upto: int = 0) -> None:
    """Raise :class:`ProtocolError` when the run's records (up to turn ``upto``) are none a
    hub could have written, as ``replay`` finds it (with no opening: damaged, as anywhere)."""
    from flowc.runtime.fork import records_upto, refuse_broken

    _opening(envs)
    refuse_broken(store, cid, records_upto(envs, upto) if upto else envs)


def _run_summary(store: WalStore, cid: str) -> dict[str, Any] | None:
    """One stored run as ``flowc log`` lists it (``None`` for a channel that is no run;
    raises one of :data:`READ_ERRORS` if it is damaged)."""
    envs = list(store.read(cid))
    if not envs:
        return None
    md = _opening(envs)
    RunTarget.from_metadata(md)  # (a run `log RUN` cannot read is listed as damaged too)
    records, close, _ = transcript(envs)
    _refuse_broken(store, cid, envs)
    # a worker giving a stalled run back records why (open, but taken up only by resume)
    stall = envs[-1].event_data if envs[-1].event_type == EV_RUN_STALLED else None
    status, lease = stored_run_status(store, cid, close, stall is not None)
    summary = {
        "run_id": cid,
        "created_at": md.created_at,
        "flow": md.labels.get("flow") or md.type,
        "turns": len(records),
        "status": status,
        "close_reason": close,
        "holder": describe_holder(lease.holder) if lease is not None else None,
    }
    if status == "stalled" and stall is not None:
        summary["stalled_on"] = stall.get("agent_id")
    broken = [v.get("property") for r in records for v in r.violated]
    if broken:  # the properties the run broke, by name (`flowc log RUN` says how)
        summary[PROPERTY_KEY] = broken
    from flowc.runtime.fork import FORKED_FROM, forked_from

    fork = forked_from(envs[0])
    if fork is not None:
        summary[FORKED_FROM] = fork.to_json()
        _mark_cut_short(summary, envs)
    return summary


#: in `flowc log`'s JSON, a fork whose copy stopped short: how many turns it holds
CUT_SHORT = "fork_copied_turns"


def _mark_cut_short(out: dict[str, Any], envs: list[Envelope]) -> str | None:
    """For a fork whose copy stopped short, record in ``out`` how many of its turns were
    copied, and return the line `flowc log` prints about it."""
    from flowc.runtime.fork import cut_short

    short = cut_short(envs)
    if short is None:
        return None
    fork, turns = short
    out[CUT_SHORT] = turns
    return (
        f"cut short: {counted(turns, 'turn')} copied of the {fork.turn} forked (the fork stopped "
        "before its copy ended, unless it is copying now): not the state forked; "
        "`flowc resume` refuses it, fork the run again"
    )


def _summary_line(r: dict[str, Any]) -> str:
    status = (
        _j(r["close_reason"])
        if r["status"] == "closed"
        else f"running ({r['holder']})"
        if r["status"] == "running"
        else f"stalled (waits for {format_name(str(r['stalled_on']))})"
        if r["status"] == "stalled"
        else "open"
    )
    broken = r.get(PROPERTY_KEY)
    violated = f"  violated: {', '.join(map(str, broken))}" if broken else ""
    if r.get(CUT_SHORT) is not None:
        copied = counted(r[CUT_SHORT], "turn")
        status += f" (a fork cut short: {copied} copied of {r['forked_from']['turn']})"
    return (
        f"{r['run_id']}  {r['created_at'][:19]}  {r['flow']}  {counted(r['turns'], 'turn')}  "
        f"{status}{violated}"
    )


def _damaged(db: str, cid: str, err: BaseException) -> str:
    return run_error_text(cid, err, db)


def _unread(db: str, cid: str, err: BaseException) -> dict[str, Any]:
    """The line of `flowc log`'s list for a run it cannot read, the error said on stderr:
    ``damaged`` (one of :data:`READ_ERRORS`), or ``plugin-failed`` (intact records that
    a plugin's condition or target fails on now, :class:`PluginFailed`)."""
    said = _damaged(db, cid, err)
    print(f"flowc log: error: {said}", file=sys.stderr)
    status = PLUGIN_FAILED if isinstance(err, PluginFailed) else DAMAGED_STATUS
    return {"run_id": cid, "status": status, "error": run_error_text(cid, err)}


def cmd_log(args: argparse.Namespace) -> int:
    _log_options(args)
    setup_plugins(args, [args.db])
    store = _open_db(args.db, readonly=True)
    try:
        return _log(args, store)
    except WalError as err:  # the database itself cannot be read
        print(f"flowc log: error: {err}", file=sys.stderr)
        return EXIT_ERRORS
    finally:
        store.close()


def _turn_number(option: str, value: str | None) -> int | None:
    """``--why N`` / ``--scenario-upto N``: a turn number from 1 (``UsageError`` if not)."""
    if value is None:
        return None
    text = value.strip()
    if not text.isascii() or not text.isdigit() or int(text) < 1:
        raise UsageError(f"{option} takes a turn number (1 or more), not {value!r}")
    return int(text)


def _log_options(args: argparse.Namespace) -> None:
    """Check ``--why`` / ``--scenario-upto`` / ``--name`` together, before the store opens;
    the turn numbers are put back as ints."""
    args.why = _turn_number("--why", args.why)
    args.scenario_upto = _turn_number("--scenario-upto", args.scenario_upto)
    if args.name is not None and args.scenario_upto is None:
        raise UsageError("--name titles the scenario of --scenario-upto N: give both")
    for option, value in (("--why", args.why), ("--scenario-upto", args.scenario_upto)):
        if value is not None and args.run is None:
            raise UsageError(f"{option} N explains one run: give its id (or `last`)")
    if args.scenario_upto is not None and (args.json or args.jsonl):
        raise UsageError("--scenario-upto prints a scenario block, as text: drop --json/--jsonl")


def _no_turn(cid: str, err: Any) -> str:
    """``run ID has 7 turns: no turn 9`` (a ``TurnOutOfRange``)."""
    return f"run {cid} has {counted(err.turns, 'turn')}: no turn {err.turn}"


def _log_why(store: WalStore, cid: str, n: int, mode: str) -> int:
    """``flowc log RUN --why N``: why turn N went where it went."""
    from flowc.runtime.why import TurnOutOfRange, WhyError, explain_turn

    try:
        envs = list(store.read(cid))
        why = explain_turn(envs, n)
        _refuse_broken(store, cid, envs, n)
    except TurnOutOfRange as err:
        raise UsageError(_no_turn(cid, err)) from None
    except WhyError as err:  # not a workflow run, or a damaged one: said as one of READ_ERRORS
        raise ProtocolError(str(err)) from None
    if mode == "json":
        sys.stdout.write(canonical_json(why.to_json()))
    elif mode == "jsonl":
        print(_j(why.to_json()))
    else:
        print(why.text())
    return EXIT_OK


def _log_scenario(store: WalStore, cid: str, n: int, name: str | None) -> int:
    """``flowc log RUN --scenario-upto N [--name NAME]``: the scenario of turns 1 to N."""
    from flowc.runtime.fork import ForkError, scenario_upto
    from flowc.runtime.why import TurnOutOfRange, WhyError

    try:
        envs = list(store.read(cid))
        text = scenario_upto(envs, n, name)
        _refuse_broken(store, cid, envs, n)
    except TurnOutOfRange as err:
        raise UsageError(_no_turn(cid, err)) from None
    except ForkError as err:
        print(f"flowc log: error: run {cid}: {err}", file=sys.stderr)
        return EXIT_ERRORS
    except WhyError as err:  # not a workflow run, or a damaged one: said as one of READ_ERRORS
        raise ProtocolError(str(err)) from None
    sys.stdout.write(text)
    return EXIT_OK


def _log(args: argparse.Namespace, store: WalStore) -> int:
    mode = _mode(args)
    if args.run is None:
        unread = 0
        runs: list[dict[str, Any]] = []
        for cid in store.channel_ids():
            try:
                found = _run_summary(store, cid)
            except (*READ_ERRORS, PluginFailed) as err:  # the other runs are still listed
                unread += 1
                found = _unread(db_name(args.db), cid, err)
            if found is None:
                continue
            runs.append(found)
            if mode == "jsonl":
                print(_j(found))
            elif mode == "text":
                print(f"{cid}  {found['status']}" if "error" in found else _summary_line(found))
        if mode == "json":
            sys.stdout.write(canonical_json(runs))
        return EXIT_ERRORS if unread else EXIT_OK
    cid = find_run(store, args.run)
    try:
        if args.why is not None:
            return _log_why(store, cid, args.why, mode)
        if args.scenario_upto is not None:
            return _log_scenario(store, cid, args.scenario_upto, args.name)
        return _log_run(store, cid, mode)
    except (*READ_ERRORS, PluginFailed) as err:  # (a plugin failing now: said as its own)
        print(f"flowc log: error: {_damaged(db_name(args.db), cid, err)}", file=sys.stderr)
        return EXIT_ERRORS


def _failures(envs: list[Any], target: RunTarget) -> list[dict[str, Any]]:
    """The turns of a stored run that failed (an agent or a plugin raised), as ``log``
    shows them: the turn, the speaker, the error with the team's file and line (and the
    traceback when asked for)."""
    out = []
    wanted = tracebacks_wanted()
    for env in envs:
        if env.event_type != EV_TURN_FAILED:
            continue
        data = env.event_data
        who = data.get("agent_id")
        item = {
            "turn": data.get("turn"),
            "speaker": target.names.get(who, who),
            "error": data.get("error"),
            "where": data.get("where"),
        }
        if wanted and data.get("traceback"):
            item["traceback"] = data["traceback"]
        out.append(item)
    return out


def _log_run(store: WalStore, cid: str, mode: str) -> int:
    from flowc.runtime.fork import FORKED_FROM, forked_from

    envs = list(store.read(cid))
    md = _opening(envs)
    target = RunTarget.from_metadata(md)
    folder = transcript_folder(envs)  # (first: a graph no plugin reads is said so)
    _refuse_broken(store, cid, envs)
    records, close, state, rounds = folder.records, folder.close, folder.state, folder.rounds()
    nxt = state.expected_next_speaker if state is not None and close is None else None
    describe = target.describe_decision
    failures = _failures(envs, target)
    fork = forked_from(envs[0])
    short: dict[str, Any] = {}
    cut = _mark_cut_short(short, envs) if fork is not None else None
    broken = [v for r in records for v in r.violated]
    if mode == "text":
        print(f"run {cid}  {md.labels.get('flow', '')}  {md.created_at}")
        if fork is not None:
            print(fork.text())
        if cut is not None:
            print(cut)
        encoding = written_as(sys.stdout)
        width = speaker_column(target.speakers, encoding)
        pending = list(failures)
        for item in in_order(records, rounds):
            if isinstance(item, SilentRound):
                print("\n".join(silent_lines(item, width, encoding)))
                continue
            while pending and (pending[0]["turn"] or 0) <= item.number:
                _print_failure(pending.pop(0))
            for line in format_turns([item], describe, width, encoding=encoding):
                print(line)
        for failure in pending:
            _print_failure(failure)
        # the end as `flowc run` printed it: properties broken, how the run stands, context
        if broken:
            print(violations_line(broken))
        if close is not None:
            print(f"closed: {_j(close)} after {counted(len(records), 'turn')}")
        else:
            print(
                f"open: {counted(len(records), 'turn')} so far, "
                f"{one_line(str(target.names.get(nxt or '', nxt)))} to speak next"
            )
        if state is not None and state.context_vars:
            print(f"context: {_j(state.context_vars)}")
        return EXIT_OK
    end: dict[str, Any] = {
        "run_id": cid,
        "flow": md.labels.get("flow", ""),
        "created_at": md.created_at,
        "close_reason": close,
        "context_vars": dict(state.context_vars) if state is not None else {},
        "turn_count": state.turn_count if state is not None else 0,
        "next_speaker": target.names.get(nxt, nxt) if nxt is not None else None,
    }
    if fork is not None:
        end[FORKED_FROM] = fork.to_json()
        end.update(short)
    if failures:
        end["failures"] = failures
    if broken:
        end[PROPERTY_KEY] = broken
    if mode == "json":
        if rounds:
            end["silent_rounds"] = [r.to_json() for r in rounds]
        sys.stdout.write(
            canonical_json({**end, "turns": [turn_json(r, describe) for r in records]})
        )
    else:
        start = {"event": "start", "run_id": cid, "flow": end["flow"]}
        if fork is not None:
            start[FORKED_FROM] = fork.to_json()
        print(_j(start))
        for item in in_order(records, rounds):
            if isinstance(item, SilentRound):
                print(_j(silent_json(item)))
            else:
                print(_j({"event": "turn", **turn_json(item, describe)}))
        print(_j({"event": "end", **end}))
    return EXIT_OK


def _print_failure(failure: dict[str, Any]) -> None:
    print(failure_line(failure["turn"], failure["speaker"], failure["error"]))
    if failure.get("traceback"):
        print("    " + failure["traceback"].rstrip("\n").replace("\n", "\n    "))


def cmd_replay(args: argparse.Namespace) -> int:
    setup_plugins(args, [args.db])
    store = _open_db(args.db, readonly=True)
    cid = args.run
    try:
        cid = find_run(store, args.run)
        hub = Hub(store)
        result = hub.replay(cid)
    except READ_ERRORS as err:
        print(f"flowc replay: error: {_damaged(db_name(args.db), cid, err)}", file=sys.stderr)
        return EXIT_ERRORS
    finally:
        store.close()
    state = result.state
    count = getattr(state, "turn_count", None)
    turns = counted(count, "turn") if isinstance(count, int) else "? turns"
    stopped = stop_text(cid, result.broken, result.failed)  # (as resume and fork word it)
    if stopped is not None:
        print(stopped)
        print(f"  re-folded {turns} before it")
        return EXIT_ERRORS
    if result.recorded_close_reason is None:
        nxt = getattr(state, "expected_next_speaker", None)
        print(
            f"{cid}: open; re-folded {counted(result.envelopes, 'envelope')} to {turns}, "
            f"{one_line(str(nxt))} to speak next"
        )
        return EXIT_OK
    if result.matches:
        print(
            f"{cid}: re-folded {counted(result.envelopes, 'envelope')}: same close reason "
            f"{_j(result.close_reason)}, same state ({turns}, context "
            f"{_j(getattr(state, 'context_vars', {}))})"
        )
        return EXIT_OK
    print(f"{cid}: the re-fold diverges from the recorded run")
    if result.close_reason != result.recorded_close_reason:
        print(
            f"  close reason: recorded {_j(result.recorded_close_reason)}, "
            f"re-fold {_j(result.close_reason)}"
        )
    if result.recorded_state != result.replayed_state:
        print(f"  state: recorded {_j(result.recorded_state)}")
        print(f"         re-fold  {_j(result.replayed_state)}")
    return EXIT_ERRORS


# ── flowc resume ──────────────────────────────────────────────────────────────


def _stored_target(records: Iterable[Envelope]) -> RunTarget:
    """The target of the run whose records (``store.read``) are ``records``, as its
    opening stored it (raises one of :data:`READ_ERRORS`)."""
    opened = next(iter(records))
    if opened.event_type != EV_CHANNEL_OPENED:
        raise ProtocolError("its WAL does not start with the channel's opening")
    return RunTarget.from_metadata(ChannelMetadata.from_dict(opened.event_data["metadata"]))


def cmd_resume(args: argparse.Namespace) -> int:
    setup_plugins(args, [args.db])
    store = _open_db(args.db)
    try:
        cid = find_run(store, args.run)
        try:
            target = _stored_target(store.read(cid))
        except READ_ERRORS as err:
            print(f"flowc resume: error: {_damaged(db_name(args.db), cid, err)}", file=sys.stderr)
            return EXIT_ERRORS
        script = None
        if args.script:
            loaded = read_script(args.script)
            if loaded is None:
                return EXIT_ERRORS
            script = loaded[1]
        return _go_on(args, store, cid, target, script)
    finally:
        store.close()


def _go_on(
    args: argparse.Namespace, store: WalStore, cid: str, target: RunTarget, script: Script | None
) -> int:
    """Continue the stored run ``cid`` (``flowc resume``, and ``flowc fork`` once it has
    written the new run), printing its turns, with the options of ``resume``."""
    agents = load_agents(args.agents) if args.agents else None
    printer = RunPrinter(target, _mode(args))
    try:
        result = asyncio.run(
            resume_script(
                store,
                cid,
                script,
                agents=agents,
                ask_human=_asker(args, printer),
                watch=printer,
                contracts=args.contracts,
                on_violation=args.on_violation,
            )
        )
    except KeyboardInterrupt:
        printer.catch_up(list(store.read(cid)))
        return _interrupted(printer, args)
    except asyncio.CancelledError:
        if not printer.broken:
            raise
        return _output_closed(printer, args)
    except WatchStopped as stop:
        return _watch_stopped(getattr(args, "command", "resume"), stop, args)
    except ScriptError as err:
        print(f"{args.script or args.agents or cid}: error: {err}", file=sys.stderr)
        return EXIT_ERRORS
    except ProtocolError as err:
        print(f"{cid}: error: {err}", file=sys.stderr)
        return EXIT_ERRORS
    except WalError as err:  # another hub holds the run, or the database failed
        raise UsageError(str(err)) from None
    printer.finish(result)
    _refused_hint(printer, args, result)
    if printer.broken:
        raise BrokenPipeError
    return run_status(result)


# ── flowc fork ────────────────────────────────────────────────────────────────


def _fork_turn(value: str) -> int:
    """``flowc fork RUN N``'s N: a turn number from 0 (``UsageError`` if not)."""
    text = value.strip()
    if not text.isascii() or not text.isdigit():
        raise UsageError(f"N is the run's last turn to keep (0 or more), not {value!r}")
    return int(text)


def _new_run_id(value: str | None) -> str | None:
    """``--run-id``: a new run's id, printable, no space nor ``/``, not ``.``, ``..``, ``last``."""
    if value is None:
        return None
    if not value or len(value) > 200 or not value.isprintable() or any(c.isspace() for c in value):
        raise UsageError(
            f"--run-id takes a run id (1 to 200 printable characters, no spaces), not {value!r}"
        )
    if value == LAST:
        raise UsageError(
            f"--run-id: {LAST!r} names the newest run wherever a run is named "
            "(`flowc log last`), so it is no run's id: give the new run another"
        )
    if unaddressable(value):
        raise UsageError(f"--run-id {value!r}: {UNADDRESSABLE}")
    return value


def cmd_fork(args: argparse.Namespace) -> int:
    """``flowc fork RUN N``: a new run in the same database whose first turns are the
    run's turns 1 to N, linked to it, continued as ``flowc resume`` continues a run."""
    from flowc.runtime.fork import ForkedFrom, ForkError, check_fork_script, check_turn, fork_run
    from flowc.runtime.why import TurnOutOfRange

    n = _fork_turn(args.turn)
    new_id = _new_run_id(args.run_id)
    setup_plugins(args, [args.db])
    store = _open_db(args.db)
    try:
        parent = find_run(store, args.run, db_name(args.db))
        if new_id is not None and new_id in store.channel_ids():
            raise UsageError(f"--run-id: {db_name(args.db)} already has a run {new_id!r}")
        try:
            records = list(store.read(parent))  # (read once: its target, turn N, the copy)
            target = _stored_target(records)
        except READ_ERRORS as err:
            print(f"flowc fork: error: {_damaged(db_name(args.db), parent, err)}", file=sys.stderr)
            return EXIT_ERRORS
        script = None
        try:
            if args.script:  # checked before anything is written, once the run has turn N
                check_turn(records, n)
                loaded = read_script(args.script)
                if loaded is None:
                    return EXIT_ERRORS
                _, script = loaded
                check_fork_script(target, script, n)
            cid = fork_run(
                store,
                parent,
                n,
                run_id=new_id,
                labels={"script": args.script or ""},
                records=records,
            )
        except ScriptError as err:
            print(f"{args.script}: error: {err}", file=sys.stderr)
            return EXIT_ERRORS
        except TurnOutOfRange as err:
            raise UsageError(_no_turn(parent, err)) from None
        except (ForkError, *READ_ERRORS) as err:
            print(f"flowc fork: error: {_damaged(db_name(args.db), parent, err)}", file=sys.stderr)
            return EXIT_ERRORS
        print(f"flowc fork: run {cid}: {ForkedFrom(parent, n).text()}", file=sys.stderr)
        return _go_on(args, store, cid, target, script)
    finally:
        store.close()


# ── registration ──────────────────────────────────────────────────────────────


def register(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = add_command(sub, "run")
    flow_argument(p)
    script_option(
        p,
        "who says what (JSON or YAML); a human with no scripted turn left is "
        "asked at the terminal when stdin is one, otherwise the run stalls on "
        "them (stalled_on)",
    )
    agents_option(p, "without --script, humans answer on stdin")
    contracts_option(p)
    on_violation_option(p)
    _output_options(p)
    store_options(
        p,
        f"the WAL: a SQLite file (default {DEFAULT_DB}), a PostgreSQL database "
        "(postgresql://...), or :memory: for none",
    )

    p = add_command(sub, "resume")
    p.add_argument("run", help="a run id (or a unique prefix, or `last`)")
    script_option(
        p,
        "the run's script (JSON or YAML); turns already taken are skipped; "
        "humans with no scripted turn left as for `flowc run`",
    )
    agents_option(p)
    contracts_option(p)
    on_violation_option(p)
    _output_options(p)
    store_options(p, f"the WAL holding the run: {STORES}")

    p = add_command(sub, "fork")
    p.add_argument("run", help="the run to fork: a run id (or a unique prefix, or `last`)")
    p.add_argument(
        "turn",
        metavar="N",
        help="the run's last turn the new run keeps (0: only its opening, so the "
        "script's kickoff starts the new run)",
    )
    p.add_argument(
        "--run-id", help="the new run's id (default: a new random one, printed on stderr)"
    )
    script_option(
        p,
        "the turns after turn N (JSON or YAML; no kickoff unless N is 0); humans with no "
        "scripted turn left as for `flowc run`",
    )
    agents_option(p)
    contracts_option(p)
    on_violation_option(p)
    _output_options(p)
    store_options(p, f"the WAL holding the run; the new run is written there: {STORES}")

    p = add_command(sub, "log")
    p.add_argument("run", nargs="?", help="a run id (or a unique prefix, or `last`)")
    what = p.add_mutually_exclusive_group()
    what.add_argument(
        "--why",
        metavar="N",
        help="why turn N went where it went: the rule that fired, each higher-priority "
        "rule of the speaker that did not and which part of its condition was false "
        "with the values it read, what the default would have done, or the hand-off, "
        "finish or max_turns that decided instead",
    )
    what.add_argument(
        "--scenario-upto",
        metavar="N",
        help="print the `scenario` block that replays turns 1 to N of the run (each "
        "followed by an `expect` line for where it went), to paste into the flow "
        "for `flowc test`",
    )
    p.add_argument(
        "--name",
        help="the title of the --scenario-upto block (default: `run RUN up to turn N`)",
    )
    how = p.add_mutually_exclusive_group()
    how.add_argument(
        "--json",
        action="store_true",
        help="one JSON document: the runs, the run with every turn whole, or the --why explanation",
    )
    how.add_argument(
        "--jsonl",
        action="store_true",
        help="one JSON object per line: per run, or the run's start, each turn "
        "and its end (as `flowc run --jsonl`), or the --why explanation on one line",
    )
    store_options(p, f"the WAL to read: {STORES}")

    p = add_command(sub, "replay")
    p.add_argument("run", help="a run id (or a unique prefix, or `last`)")
    store_options(p, f"the WAL to read: {STORES}")


def _output_options(p: argparse.ArgumentParser) -> None:
    how = p.add_mutually_exclusive_group()
    how.add_argument(
        "--json",
        action="store_true",
        help="print the run as one JSON object when it ends (every turn whole: "
        "text, tool calls, routing, the rule that chose the next speaker)",
    )
    how.add_argument(
        "--jsonl",
        action="store_true",
        help="print one JSON object per line as the run goes: its start, each "
        "turn as it is accepted, its end",
    )


HANDLERS: dict[str, Callable[[argparse.Namespace], int]] = {
    "run": cmd_run,
    "resume": cmd_resume,
    "fork": cmd_fork,
    "log": cmd_log,
    "replay": cmd_replay,
}
