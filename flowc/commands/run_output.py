"""What `flowc run`, `flowc resume` and `flowc log` print: the readable transcript (one
turn at a time, as the run accepts it), ``--json`` (one document at the end),
``--jsonl`` (one line per turn as it happens), a progress line on a terminal, and the
terminal a human answers at.

The terminal is read without blocking the event loop, so Ctrl-C at a ``user>`` prompt
stops the run at once (``asyncio.run`` turns it into a cancellation of the run). What a
human may type there (text, ``/set KEY = VALUE``, ...) is :mod:`flowc.commands.human_prompt`.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import os
import sys
import time
from collections.abc import Awaitable, Callable, Iterable, Iterator, Sequence
from typing import Any, TextIO

from flowc.commands.console import EXIT_ERRORS, isatty
from flowc.commands.human_prompt import HumanPrompt, PromptError, complete
from flowc.diagnostics import counted, display_width, pad_to, shown
from flowc.escaping import in_encoding, one_line, written_as
from flowc.runtime.adapters.workflow import WorkflowState
from flowc.runtime.clients import Turn
from flowc.runtime.envelope import FORKED_FROM, Envelope
from flowc.runtime.failures import tracebacks_wanted
from flowc.runtime.script import ScriptTurn
from flowc.runtime.target import RunTarget
from flowc.runtime.transcript import (
    PROPERTY_KEY,
    RunResult,
    SilentRound,
    TurnRecord,
    in_order,
    transcript_folder,
    turn_json,
)

__all__ = [
    "TEXT_MARK",
    "LineReader",
    "Progress",
    "RunPrinter",
    "TerminalLines",
    "continued",
    "failure_line",
    "format_turn",
    "format_turns",
    "isatty",
    "read_answer",
    "remembered",
    "silent_json",
    "silent_lines",
    "speaker_column",
    "terminal_asker",
    "turn_lines",
    "violation_text",
    "violations_line",
]


def _j(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _name(name: Any) -> str:
    """A name a run holds (a tool's, an argument's, a context key), on one line: a
    newline or a terminal control in it is escaped (``\\n``), so that what an agent
    names cannot forge a line of the transcript (a JSON value is escaped by JSON)."""
    return one_line(str(name))


def speaker_shown(name: str, encoding: str | None = None) -> str:
    r"""A speaker's name as the transcript's speaker column shows it: on one line
    (:func:`_name`), a tab as ``\t`` (a terminal moves it to its next stop), and each
    character the output's ``encoding`` lacks as the output writes it
    (:func:`~flowc.escaping.in_encoding`: ``ascii``, ``ascii:replace``; ``None``: every
    character can be written).

    >>> speaker_shown("用户", "ascii"), speaker_shown("用户", "ascii:replace")
    ('\\u7528\\u6237', '??')
    >>> speaker_shown("用户", "utf-8"), speaker_shown("a\tb")
    ('用户', 'a\\tb')
    """
    return in_encoding(_name(name).replace("\t", "\\t"), encoding)


def speaker_column(speakers: Iterable[str], encoding: str | None = None) -> int:
    """The width of the transcript's speaker column: its widest name as shown
    (:func:`speaker_shown`), in terminal columns (4 when there is no speaker)."""
    return max((display_width(speaker_shown(s, encoding)) for s in speakers), default=4)


@functools.lru_cache(maxsize=1024)
def _padded(name: str, width: int, encoding: str | None) -> str:
    """The name in the speaker column, padded to ``width`` columns (once per speaker:
    every turn of a run shows one of a few)."""
    return pad_to(speaker_shown(name, encoding), width)


def _short(value: Any, limit: int = 60) -> str:
    text = _j(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# ── the readable transcript ───────────────────────────────────────────────────


def format_turn(
    r: TurnRecord, describe: Callable[[Any], str], width: int, encoding: str | None = None
) -> Iterator[str]:
    """The readable lines of one turn: number, speaker, text; then its tool calls, its
    context writes and where it routed (``→ reviewer  (rule 3, line 14: ...)``).
    ``width``: the speaker column's (:func:`speaker_column`, for the same ``encoding``)."""
    yield from turn_lines(r, describe, width, encoding)


def turn_lines(
    r: TurnRecord, describe: Callable[[Any], str], width: int, encoding: str | None = None
) -> list[str]:
    """:func:`format_turn` as a list (what a run prints for every turn it accepts)."""
    pad = " " * (6 + width)
    text = r.text
    if "\n" in text:
        text = continued(text, width)
    tag = ""
    routing = r.routing
    if routing and routing.get("kind") in ("handoff", "finish"):
        reason = routing.get("reason") or ""
        tag = f"[{_name(routing.get('tool'))}{': ' + _name(reason) if reason else ''}] "
    # (``%`` formatting: an f-string's format specs cost twice as much, every turn)
    who = _padded(r.speaker, width, encoding)
    lines = [("%3d  %s  %s%s" % (r.number, who, tag, text)).rstrip()]  # noqa: UP031
    if r.tool_calls:
        calls = []
        for call in r.tool_calls:
            args = call.get("args") or {}
            given = (
                ", ".join(f"{_name(k)}={_short(v)}" for k, v in args.items())
                if isinstance(args, dict)
                else _short(args)
            )
            calls.append(f"{_name(call.get('name'))}({given})")
        lines.append(f"{pad}calls: {', '.join(calls)}")
    _write_lines(lines, pad, r.context_set, r.context_delete, r.warnings)
    for broken in r.violated:  # one of the flow's properties (flowc.runtime.guard)
        lines.append(f"{pad}{violation_text(broken)}")
    if r.next_speaker is not None:
        lines.append(f"{pad}→ {r.next_speaker}  ({describe(r.decided_by)})")
    else:
        kind = "finish" if r.decided_by == "finish" else "terminate"
        reason = (routing or {}).get("reason") if kind == "finish" else None
        by = (
            f"by tool {_name((routing or {}).get('tool'))}"
            if kind == "finish"
            else describe(r.decided_by)
        )
        lines.append(f"{pad}■ {kind} {_j(reason or r.closes or '')}  ({by})")
    if r.closes == "max_turns" and r.next_speaker is not None:
        lines.append(f"{pad}■ max_turns reached")
    # (what an agent or a script said is shown, never acted on: ESC, CR, BEL escaped;
    # only the text spans lines, each line after the first one of its own)
    return [shown(lines[0])] + [_name(line) for line in lines[1:]]


#: what starts each line of a turn's text after its first, under the first line's text:
#: no line the transcript writes of its own (``calls:``, ``context:``, ``→ ...``, the
#: lines after the turns) starts so, so a text cannot pass for one of them
TEXT_MARK = "| "


def continued(text: str, width: int) -> str:
    """A turn's text of several lines as the transcript writes it: each line after the
    first marked with :data:`TEXT_MARK`, its text under the first line's (``width``: the
    speakers' column), an empty line as the mark alone.

    >>> print("  1  user  " + continued("hi\\ncalls: publish()\\n\\nbye", 4))
      1  user  hi
             | calls: publish()
             |
             | bye
    """
    mark = " " * (5 + width) + TEXT_MARK
    bare = mark.rstrip()
    return "\n".join(
        [text[: text.index("\n")]]
        + [mark + line if line else bare for line in text.split("\n")[1:]]
    )


def _write_lines(
    lines: list[str],
    pad: str,
    sets: dict[str, Any],
    deletes: Sequence[str],
    warnings: Sequence[dict[str, Any]],
) -> None:
    """The ``context:`` line of a turn's (or a silent round's) writes, and a ``warning:``
    line for each declaration they broke, let through under ``--contracts warn``."""
    if sets or deletes:
        changes = [f"{_name(k)} = {_j(v)}" for k, v in sets.items()]
        changes += [f"{_name(k)} cleared" for k in deletes if k not in sets]
        if changes:
            lines.append(f"{pad}context: {', '.join(changes)}")
    for warning in warnings:
        lines.append(f"{pad}warning: {warning.get('message')}")


#: how a transcript names a silent round, in place of a turn's text
SILENT = "(silent round: no text and no routing, so no turn; its context writes are kept)"


def silent_lines(r: SilentRound, width: int, encoding: str | None = None) -> list[str]:
    """The readable lines of a silent round (:class:`~flowc.runtime.transcript.SilentRound`),
    shown after the turn it followed: no number (it is no turn), the speaker, then the
    context it wrote."""
    pad = " " * (6 + width)
    lines = ["     %s  %s" % (_padded(r.speaker, width, encoding), SILENT)]  # noqa: UP031
    _write_lines(lines, pad, r.context_set, r.context_delete, r.warnings)
    return [_name(line) for line in lines]


def silent_json(r: SilentRound) -> dict[str, Any]:
    """A silent round as a ``--jsonl`` line has it (``{"event": "silent", ...}``)."""
    return {"event": "silent", **r.to_json()}


def remembered(describe: Callable[[Any], str]) -> Callable[[Any], str]:
    """``describe`` answering each value once: a run's turns repeat a few decisions
    (``decided_by``: a rule index, ``"default"``, ``"handoff"``, ...), and their text
    depends on the run's target only."""
    known: dict[Any, str] = {}

    def describe_once(by: Any) -> str:
        text = known.get(by)
        if text is None:
            text = known[by] = describe(by)
        return text

    return describe_once


def format_turns(
    records: Sequence[TurnRecord],
    describe: Callable[[Any], str],
    width: int | None = None,
    rounds: Sequence[SilentRound] = (),
    encoding: str | None = None,
) -> Iterator[str]:
    """The readable transcript lines of a run, its silent ``rounds`` where they happened,
    for an output in ``encoding`` (:func:`speaker_shown`)."""
    if width is None:
        width = speaker_column((r.speaker for r in records), encoding)
    for r in in_order(records, rounds):
        if isinstance(r, SilentRound):
            yield from silent_lines(r, width, encoding)
        else:
            yield from format_turn(r, describe, width, encoding)


def violation_text(broken: dict[str, Any]) -> str:
    """How a transcript shows a property a turn broke (as the WAL stores it).

    >>> violation_text({"property": "quiet", "claim": "never from bot",
    ...                 "why": "turn 2 has `from bot`"})
    'violated: property quiet (`never from bot`): turn 2 has `from bot`'
    """
    claim = broken.get("claim")
    quoted = f" (`{claim}`)" if claim else ""
    return f"violated: property {broken.get('property')}{quoted}: {broken.get('why')}"


def failure_line(turn: int | None, speaker: str | None, error: str | None) -> str:
    """How a transcript (``flowc run``'s, ``flowc log``'s) shows a turn that failed: on
    one line, the speaker's name and the error's words escaped (:func:`_name`), so that
    neither can pass for another line."""
    return f"  turn {turn} failed ({_name(speaker)}): {_name(error)}"


def violations_line(broken: Sequence[dict[str, Any]]) -> str:
    """The line after a run's turns that names the properties it broke, each once.

    >>> violations_line([{"property": "one_draft", "turn": 4}])
    'property violated: one_draft (turn 4)'
    """
    names = ", ".join(f"{v.get('property')} (turn {v.get('turn')})" for v in broken)
    if len(broken) == 1:
        return f"property violated: {names}"
    return f"{counted(len(broken), 'property', 'properties')} violated: {names}"


def trailer(result: RunResult) -> Iterator[tuple[str, bool]]:
    """The lines after the turns, each with whether it goes to stderr: each one line on
    stdout (a speaker's name or an error's words in it escaped, newlines included, so that
    none passes for another line); the traceback, on stderr, escaped line by line."""
    for line, err in _trailer(result):
        yield (shown(line) if err else _name(line)), err


def _trailer(result: RunResult) -> Iterator[tuple[str, bool]]:
    for v in result.violations:
        yield (
            (
                f"warning: {v.get('agent_id')} did not take its turn within {v.get('seconds')}s "
                f"({v.get('on_violation')})"
            ),
            False,
        )
    broken = result.property_violations
    if broken:  # each is on the turn that broke it; the trailer names them all once
        yield violations_line(broken), False
    failure = result.failure
    if result.close_reason is not None:
        yield f"closed: {_j(result.close_reason)} after {counted(result.turn_count, 'turn')}", False
    elif result.refused:  # the flow's declarations refused the turn (--contracts enforce)
        yield (
            (
                f"stalled: {result.stalled_on}'s turn was refused after "
                f"{counted(result.turn_count, 'turn')}: it breaks the flow's declarations"
            ),
            False,
        )
    elif failure is not None:  # an agent or a plugin raised: said in the transcript
        yield failure_line(result.turn_count + 1, result.stalled_on, failure.error), False
        yield (
            (
                f"stalled: {result.stalled_on}'s turn failed after "
                f"{counted(result.turn_count, 'turn')}"
            ),
            False,
        )
        if tracebacks_wanted():
            yield failure.traceback.rstrip("\n"), True
    elif result.error:  # stopped by the error printed below, not for want of a turn
        yield (
            (
                f"stalled: {result.stalled_on}'s turn failed after "
                f"{counted(result.turn_count, 'turn')}"
            ),
            False,
        )
    elif result.silent:  # an answer with no text and no routing: AG2 stops there too
        yield (
            (
                f"stalled after {counted(result.turn_count, 'turn')}: {_name(result.stalled_on)}'s "
                "turn says nothing and routes nothing (as in AG2, such a round posts no "
                "message and stops the run; the context it wrote is kept, as AG2 keeps it): "
                "give the turn a text"
            ),
            False,
        )
    elif result.turn_count == 0 and result.stalled_on is not None:
        # nothing took the first turn: with a script, it has no kickoff
        yield (
            (
                f"stalled before the first turn: nothing gave {_name(result.stalled_on)}, the start "
                f"speaker, a first turn (the script has no `kickoff` and no turn under "
                f"`script.{_name(result.stalled_on)}`)"
            ),
            False,
        )
    else:
        yield (
            (
                f"stalled: {_name(result.stalled_on)} has no turn to take after "
                f"{counted(result.turn_count, 'turn')}"
            ),
            False,
        )
    if result.error and failure is None:
        yield f"error: {result.error}", True
    if result.context_vars:
        yield f"context: {_j(result.context_vars)}", False


# ── progress ──────────────────────────────────────────────────────────────────


def _turn_rate(turns: int, seconds: float) -> str:
    """Turns per second as the status lines show it: to one decimal below 10 (a slow run,
    e.g. one a human types in, is not "0 turns/s"), a whole number, grouped, from 10.

    >>> _turn_rate(3, 21.4), _turn_rate(99, 10.0), _turn_rate(8123, 1.0)
    ('0.1', '9.9', '8,123')
    >>> _turn_rate(1996, 200.0)  # (9.98 rounds to 10.0: shown as 10)
    '10'
    """
    rate = turns / seconds
    return f"{rate:.1f}" if round(rate, 1) < 10 else f"{rate:,.0f}"


class Progress:
    """``  2,400 turns · 8,123 turns/s`` on a terminal's stderr while a run goes on.

    Shown once the run has lasted ``after`` seconds, redrawn at most ten times a
    second and kept as the last line below the streamed turns; nothing at all when
    stderr is not a terminal (piped or redirected).
    """

    def __init__(self, stream: TextIO, *, enabled: bool, after: float = 0.5) -> None:
        self.stream = stream
        self.enabled = enabled
        self.after = after
        self.started = time.monotonic()
        self.turns = 0
        self.shown = False
        self.ever_shown = False
        self._text = ""
        self._drawn_at = 0.0

    def tick(self, turns: int) -> None:
        self.turns = turns
        if not self.enabled:
            return
        now = time.monotonic()
        elapsed = now - self.started
        if elapsed < self.after:
            return
        if now - self._drawn_at >= 0.1 or not self._text:
            self._drawn_at = now
            self._text = (
                f"  {counted(turns, 'turn', grouped=True)} · {_turn_rate(turns, elapsed)} turns/s"
            )
        self.draw()

    def draw(self) -> None:
        if self.enabled and self._text:
            self.stream.write("\r\x1b[K" + self._text)
            self.stream.flush()
            self.shown = self.ever_shown = True

    def clear(self) -> None:
        if self.shown:
            self.stream.write("\r\x1b[K")
            self.stream.flush()
            self.shown = False

    def summary(self) -> str | None:
        """One closing line for a run long enough to have shown progress."""
        if not self.ever_shown:
            return None
        elapsed = time.monotonic() - self.started
        return (
            f"{counted(self.turns, 'turn', grouped=True)} in {elapsed:.1f}s "
            f"({_turn_rate(self.turns, elapsed)} turns/s)"
        )


# ── printing a run as it goes ─────────────────────────────────────────────────


class RunPrinter:
    """Watches a run (``opened`` / ``turn``) and prints it in one of three forms.

    ``text``: each turn as it is accepted, then the close (or stall) line; ``json``:
    one document at the end; ``jsonl``: ``{"event": "start"}``, one ``{"event":
    "turn"}`` line per turn as it happens, and ``{"event": "end"}``. Output is flushed
    per turn so a pipe sees each turn when it happens.
    """

    def __init__(
        self,
        target: RunTarget,
        mode: str = "text",
        *,
        out: TextIO | None = None,
        err: TextIO | None = None,
        progress: bool | None = None,
    ) -> None:
        self.target = target
        #: the run's parent, for a fork (``{"run_id", "turn"}``, read off its opening):
        #: its JSON carries it as ``flowc log``'s does, in ``--json``'s document and
        #: ``--jsonl``'s start and end lines
        self.forked_from: dict[str, Any] | None = None
        self.mode = mode
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        #: the speaker column: names as this output can write them, in terminal columns
        self.encoding = written_as(self.out)
        self.width = speaker_column(target.speakers, self.encoding)
        if progress is None:
            progress = isatty(self.err)
        self.progress = Progress(self.err, enabled=progress)
        self.run_id: str | None = None
        #: ``target.describe_decision``, each decision described once
        self.describe = remembered(target.describe_decision)
        self.records: list[TurnRecord] = []
        #: the silent rounds shown so far (or, after :meth:`catch_up`, read)
        self.rounds: list[SilentRound] = []
        self.state: WorkflowState | None = None
        self.broken = False
        #: the task running the run, cancelled when stdout is closed (``| head -1``)
        self._run_task: asyncio.Task[Any] | None = None
        #: ``--json`` away from a terminal needs no turn until the end: none is folded
        self.wants_turns = mode != "json" or self.progress.enabled

    def catch_up(self, envelopes: Sequence[Envelope]) -> None:
        """Take the run's turns from its WAL (after an interrupt, when none were watched)."""
        if self.wants_turns:
            return
        folder = transcript_folder(envelopes)
        self.records, self.state = folder.records, folder.state
        self.rounds = list(folder.rounds())

    # the watcher protocol (``flowc.runtime.script_run.RunWatcher``)

    def opening(self, envelope: Envelope) -> None:
        """The run's opening record (:data:`~flowc.runtime.watch.OPENING_HOOK`): whether
        it is a fork, and of which run."""
        from flowc.runtime.fork import forked_from

        fork = forked_from(envelope)
        self.forked_from = fork.to_json() if fork is not None else None

    def opened(self, run_id: str) -> None:
        self.run_id = run_id
        try:
            self._run_task = asyncio.current_task()
        except RuntimeError:  # not watched from inside an event loop
            self._run_task = None
        if self.mode == "jsonl":
            start = {"event": "start", "run_id": run_id, "flow": self.target.label}
            self._write(_j(self._forked(start)) + "\n")

    def silent(self, found: SilentRound) -> None:
        """A silent round, shown where it happened (before the turn that follows it)."""
        self.rounds.append(found)
        if self.mode == "text":
            self._write("\n".join(silent_lines(found, self.width, self.encoding)) + "\n")
        elif self.mode == "jsonl":
            self._write(_j(silent_json(found)) + "\n")

    def turn(self, record: TurnRecord, state: WorkflowState | None = None) -> None:
        self.records.append(record)
        self.state = state
        if self.mode == "text":
            self._write(
                "\n".join(turn_lines(record, self.describe, self.width, self.encoding)) + "\n"
            )
        elif self.mode == "jsonl":
            line = {"event": "turn", **turn_json(record, self.describe)}
            self._write(_j(line) + "\n")
        self.progress.tick(len(self.records))

    # the end of the run

    def finish(self, result: RunResult) -> None:
        if self.mode != "json":  # the rounds the run stopped after: shown before its end
            for found in result.silent_rounds[len(self.rounds) :]:
                self.silent(found)
        self._done()
        describe = self.describe
        if self.mode == "json":
            self._write(_canonical(self._forked(result.to_json(describe))))
        elif self.mode == "jsonl":
            end = self._forked(result.to_json(describe))
            del end["turns"]
            end.pop("silent_rounds", None)  # (each had its line where it happened)
            self._write(_j({"event": "end", **end}) + "\n")
        else:
            for line, to_err in trailer(result):
                if to_err:
                    self.err.write(line + "\n")
                else:
                    self._write(line + "\n")

    def interrupted(self, resume_hint: str | None, *, stored: bool = True) -> None:
        """The run was interrupted: its turns so far (already printed, unless ``--json``),
        its id and how to continue it (``stored=False``: it was in memory only)."""
        self._done()
        state = self.state
        nxt = state.expected_next_speaker if state is not None else None
        names = self.target.names
        doc: dict[str, Any] = {
            "run_id": self.run_id,
            "interrupted": True,
            "close_reason": None,
            "context_vars": dict(state.context_vars) if state is not None else {},
            "turn_count": state.turn_count if state is not None else 0,
            "next_speaker": names.get(nxt, nxt) if nxt is not None else None,
        }
        self._forked(doc)
        # the properties the turns so far broke, the run's whole list (as at its end)
        broken = [dict(v) for r in self.records for v in r.violated]
        if broken:
            doc[PROPERTY_KEY] = broken
        describe = self.describe
        if self.mode == "json":
            doc["turns"] = [turn_json(r, describe) for r in self.records]
            if self.rounds:
                doc["silent_rounds"] = [r.to_json() for r in self.rounds]
            self._write(_canonical(doc))
        elif self.mode == "jsonl":
            self._write(_j({"event": "end", **doc}) + "\n")
        else:
            nxt = doc["next_speaker"]
            who = f", {_name(nxt)} to speak next" if nxt else ""
            said = f"{_name(violations_line(broken))}\n" if broken else ""
            self._write(f"{said}interrupted: after {counted(doc['turn_count'], 'turn')}{who}\n")
        if self.run_id is None:
            self.err.write("interrupted before the run started\n")
        elif not stored:
            self.err.write(
                f"run {self.run_id} was kept in memory only (--db :memory:): nothing to resume\n"
            )
        else:
            hint = f"; continue it with `{resume_hint}`" if resume_hint else ""
            self.err.write(f"run {self.run_id} is open{hint}\n")
        self.err.flush()

    def _forked(self, doc: dict[str, Any]) -> dict[str, Any]:
        """``doc`` with the run's parent in it, for a fork (as ``flowc log`` has it)."""
        if self.forked_from is not None:
            doc[FORKED_FROM] = dict(self.forked_from)
        return doc

    def before_prompt(self) -> None:
        """A human is about to be asked: take the progress line away."""
        self.progress.clear()

    def _done(self) -> None:
        self.progress.clear()
        summary = self.progress.summary()
        if summary is not None:
            self.err.write(summary + "\n")
            self.err.flush()

    def _write(self, text: str) -> None:
        if self.broken:
            return
        shown = self.progress.shown
        if shown:
            self.progress.clear()
        try:
            self.out.write(text)
            self.out.flush()
        except BrokenPipeError:
            # the reader went away (``flowc run ... | head -1``): nobody will see the
            # rest, so the run stops between two turns, as on Ctrl-C, and stays open
            self.broken = True
            if self._run_task is not None:
                self._run_task.cancel()
            return
        if shown:
            self.progress.draw()


def _canonical(data: Any) -> str:
    from flowc.compiler.serde import canonical_json

    return canonical_json(data)


# ── the terminal a human answers at ───────────────────────────────────────────


class LineReader:
    """Lines from a file descriptor, read without blocking the event loop.

    A terminal or a pipe is watched with ``loop.add_reader``, so awaiting a line can be
    cancelled at any moment (Ctrl-C cancels the run, and the prompt with it); a
    regular file, which never blocks, is read directly.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        try:
            self.fd: int | None = stream.fileno()
        except (AttributeError, OSError, ValueError):  # an in-memory stream (io.StringIO)
            self.fd = None
        self.buffer = b""
        self.eof = False

    async def readline(self) -> str | None:
        """The next line without its newline; ``None`` at end of input."""
        if self.fd is None:  # no descriptor to watch: an in-memory stream never blocks
            text = self.stream.readline()
            return text.removesuffix("\n").removesuffix("\r") if text else None
        if b"\n" not in self.buffer and not self.eof:
            # a long line comes in many reads: each read is searched for the newline, and
            # the pieces are joined once it is there (searching and growing the whole
            # line at every read took time as the square of its length)
            pieces = [self.buffer]
            while not self.eof:
                await self._wait_readable()
                data = os.read(self.fd, 65536)
                if not data:
                    self.eof = True
                pieces.append(data)
                if b"\n" in data:
                    break
            self.buffer = b"".join(pieces)
        if not self.buffer:
            return None
        line, _, rest = self.buffer.partition(b"\n")
        self.buffer = rest
        # bytes that are not UTF-8 come through as lone surrogates, as a terminal's
        # `input()` gives them, so that the prompt refuses the line instead of posting a
        # text the human did not type (``errors="replace"`` would)
        return line.decode("utf-8", errors="surrogateescape").removesuffix("\r")

    async def _wait_readable(self) -> None:
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()

        def wake() -> None:
            if not ready.done():
                ready.set_result(None)

        assert self.fd is not None
        try:
            loop.add_reader(self.fd, wake)
        except (OSError, ValueError, NotImplementedError):
            return  # a regular file (the selector refuses it): a read never blocks
        try:
            await ready
        finally:
            loop.remove_reader(self.fd)


class TerminalLines:
    """Lines typed at a terminal (stdin and stdout both one), read with the standard
    library's ``readline``: line editing, the run's earlier answers with the arrow keys,
    and Tab completing the prompt's commands and the human's declared keys
    (:func:`~flowc.commands.human_prompt.complete`).

    ``input()`` blocks, so each line is read in a thread of its own while the event
    loop goes on (the run's lease is renewed, Ctrl-C cancels the run at once). An
    interrupted read is abandoned, its terminal settings put back as they were."""

    def __init__(self) -> None:
        import readline

        self.readline = readline
        self.keys: Sequence[str] | None = None
        readline.set_completer(self.completer)
        readline.set_completer_delims(" \t\n=")
        if "libedit" in (readline.__doc__ or ""):  # macOS's readline
            readline.parse_and_bind("bind ^I rl_complete")
        else:
            readline.parse_and_bind("tab: complete")

    def completer(self, text: str, state: int) -> str | None:
        """readline's completer: the ``state``-th completion of the word ``text``."""
        try:
            before = self.readline.get_line_buffer()[: self.readline.get_endidx()]
            options = [o for o in complete(before, self.keys) if o.startswith(text)]
        except Exception:  # never let completion break the prompt
            return None
        return options[state] if state < len(options) else None

    async def readline_async(self, prompt: str, keys: Sequence[str] | None) -> str | None:
        """The next line typed at ``prompt``; ``None`` at end of input (Ctrl-D)."""
        import termios
        import threading

        self.keys = keys
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[str | None] = loop.create_future()

        def settle(line: str | None) -> None:
            if not answer.done():
                answer.set_result(line)

        def read() -> None:
            try:
                line: str | None = input(prompt)
            except UnicodeDecodeError as err:  # (stdin's errors are "strict": most locales)
                # the bytes typed, as a terminal in the C locale gives them (lone
                # surrogates), for the prompt to refuse with where: never the end of input
                line = bytes(err.object).decode(err.encoding, "surrogateescape").rstrip("\n")
            except (EOFError, OSError, ValueError, KeyboardInterrupt):
                line = None
            with contextlib.suppress(RuntimeError):  # (the loop is gone: the run ended)
                loop.call_soon_threadsafe(settle, line)

        try:
            saved: Any = termios.tcgetattr(sys.stdin.fileno())
        except (termios.error, OSError, ValueError):
            saved = None
        threading.Thread(target=read, name="flowc-prompt", daemon=True).start()
        try:
            return await answer
        except asyncio.CancelledError:
            if saved is not None:  # readline had the terminal: give it back as it was
                with contextlib.suppress(termios.error, OSError, ValueError):
                    termios.tcsetattr(sys.stdin.fileno(), termios.TCSADRAIN, saved)
                sys.stdout.write("\n")
                sys.stdout.flush()
            raise


_reader: LineReader | None = None
_terminal: TerminalLines | None = None


def _on_terminal() -> TerminalLines | None:
    """The readline prompt when stdin and stdout are a terminal (and readline exists)."""
    global _terminal
    if _terminal is None and isatty(sys.stdin) and isatty(sys.stdout):
        try:
            _terminal = TerminalLines()
        except ImportError:  # a Python built without readline
            return None
    return _terminal


async def read_answer(prompt: str, keys: Sequence[str] | None) -> str | None:
    """One line a human types at ``prompt``: with readline on a terminal, else from stdin
    as it comes (the prompt on stderr); ``None`` at end of input."""
    global _reader
    terminal = _on_terminal()
    if terminal is not None:
        return await terminal.readline_async(prompt, keys)
    if _reader is None or _reader.stream is not sys.stdin:
        _reader = LineReader(sys.stdin)
    sys.stderr.write(prompt)
    sys.stderr.flush()
    return await _reader.readline()


def terminal_asker(
    printer: RunPrinter | None, *, echo: bool, target: RunTarget | None = None
) -> Callable[[str, Turn | None], Awaitable[ScriptTurn | None]]:
    """``ask_human(name, turn)`` for a run: a ``name> `` prompt (on stderr, so stdout
    stays the transcript), the answer read from stdin. ``echo`` shows the turn the human
    answers first (useful when the transcript does not go to the same terminal).

    The human posts a line of text, and may first write the context keys its
    ``speaker NAME: human { sets ... }`` block declares (``target``'s, by default the
    printer's): ``/set KEY = VALUE``, ``/clear KEY``, ``/help`` (see
    :mod:`flowc.commands.human_prompt`); a line the prompt refuses is explained on
    stderr and the human is asked again."""
    declared = target if target is not None else printer.target if printer is not None else None

    async def ask(name: str, turn: Turn | None) -> ScriptTurn | None:
        if printer is not None:
            printer.before_prompt()
        if echo and turn is not None and turn.text:
            sys.stderr.write(f"  [{turn.name_of(turn.envelope.sender_id)}] {turn.text}\n")
        writes = declared.human_writes if declared is not None else None
        keys = None if writes is None else sorted(writes.get(name, ()))
        context = (
            turn.context
            if turn is not None
            else declared.context_vars
            if declared is not None
            else {}
        )
        prompt = HumanPrompt(name, keys, context)
        while True:
            line = await read_answer(prompt.prompt(), keys)
            if line is None:
                return None
            try:
                got = prompt.feed(line)
            except PromptError as err:
                got = f"{err}"
            if isinstance(got, ScriptTurn):
                return got
            if got:
                sys.stderr.write("".join(f"  {row}\n" for row in got.splitlines()))
                sys.stderr.flush()

    return ask


def graph_refused(flow: str, target: RunTarget, problems: Sequence[Any]) -> int:
    """Say why the run's channel refused the graph: each problem at its JSON path from
    the file's top, as `check` says them."""
    for p in problems:
        where = target.json_prefix if getattr(p, "path", "") else ""
        print(f"{flow}: error: {where}{p}", file=sys.stderr)
    return EXIT_ERRORS
