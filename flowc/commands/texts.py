"""What ``flowc --help`` says of each command (its line) and ``flowc COMMAND --help``
(its description): one table, that each command module's ``register`` reads through
:func:`add_command` (the order ``flowc --help`` lists them in is the order they register
in, :data:`flowc.cli.COMMAND_MODULES`)."""

from __future__ import annotations

import argparse

#: each command's help line and description (``None``: the command words its own,
#: computed when its parser is made)
TEXTS: dict[str, tuple[str, str | None]] = {
    "compile": (
        "compile a .flow file to AG2's TransitionGraph JSON",
        "Compile a .flow file to the knobs dict AG2's workflow channel loads "
        "(or, with --graph, the TransitionGraph dict alone), as canonical JSON.",
    ),
    "check": (
        "find what AG2 silently accepts: dead rules, loops, unreachable speakers",
        "Static analysis of .flow files, folders and JSON graphs: explores every run "
        "and reports dead rules, loops, unreachable speakers and endings, each with a "
        "code (`flowc explain CODE`), a shortest run that shows it and a fix. Settings "
        "also come from [tool.flowc] in pyproject.toml. Exit 1 on an error (or a "
        "warning under --strict).",
    ),
    "explain": (
        "print the page of a diagnostic code",
        "Print the page of a diagnostic code (what it reports, why it matters, an "
        "example and what to write instead); without a code, list every code.",
    ),
    "fmt": (
        "rewrite .flow files in the canonical layout",
        "Rewrite .flow files in the one canonical layout, keeping every comment; "
        "with --check or --diff write nothing and exit 1 if a file would change. Ends with a "
        'summary on stderr ("1 file would be reformatted, 2 files already formatted").',
    ),
    "decompile": (
        "turn a TransitionGraph dict (or knobs) into a .flow",
        "Turn a TransitionGraph dict or knobs dict (as AG2's to_dict() or "
        "`flowc compile` writes it) back into a formatted .flow file.",
    ),
    "render": (
        "draw a flow (or a compiled graph) as a diagram",
        "Draw a flow or a compiled graph: speakers, rules as labelled edges, endings. "
        "SVG, PNG, PDF and the HTML page need Graphviz; dot and Mermaid text do not. "
        "With --check the checker's findings are marked on the drawing.",
    ),
    "test": (
        "run the scenario blocks of .flow files",
        "Run the `scenario` blocks of .flow files on the hub runtime, no model "
        "needed: each scenario's turns are played and its `expect` lines checked. "
        "Exit 0 when every selected scenario passes (and coverage reaches "
        "--fail-under), 1 otherwise; 2 when the command could not run (a missing "
        "file, a bad option, -k patterns that select none of the scenarios).",
    ),
    "scenarios": (
        "generate scenarios that reach every live rule, ending and tool effect",
        "Generate shortest scenarios that together reach every live "
        "rule, ending and tool effect of a flow (found by exploring its "
        "state space; a target whose shortest runs break a property gets "
        "none), check that they pass, and print them (or append "
        "them with --write). Exit 0 when they were generated, also from "
        "an exploration stopped at its bound (I301), which the note on "
        "stderr then calls partial; 1 when the flow does not compile or "
        "its scenarios cannot be generated; 2 when the command could not "
        "run.",
    ),
    "run": (
        "run a flow on the hub runtime with scripted or real agents",
        "Run a flow on flowc's hub runtime: the speakers' turns come from a script "
        "(who says what, which tools are called), from real agents, or both; every "
        "turn is written to a write-ahead log (a SQLite file, or a PostgreSQL "
        "database). Exit 0 when the run closes, 1 when it stalls or the input "
        "has errors, 3 when a turn breaks one of the flow's properties.",
    ),
    "resume": (
        "continue a stalled or interrupted run from its WAL",
        "Continue a stalled or interrupted run from its WAL: the turns "
        "already in the WAL stay, and the speaker the run waits for takes "
        "the next turn. Give the script the run started with (each speaker's "
        "turns already taken are skipped), and/or agents for its speakers. "
        "Exit 0 when the run closes, 1 when it stalls again, 3 when it broke one of "
        "the flow's properties.",
    ),
    "fork": (
        "start a new run from turn N of a stored run, with another script",
        "Write a new run into the run database whose first turns are turns 1 to N of "
        "a stored run (its graph, properties and context as stored: the flow file is "
        "not needed), linked to it (`flowc log` says which run and turn it was forked "
        "from), then continue it as `flowc resume` does, with the script of the turns "
        "after N and/or agents. The stored run is only read. Exit 0 when the new run "
        "closes, 1 when it stalls, 2 when the run or turn N does not exist, 3 when it "
        "broke one of the flow's properties.",
    ),
    "log": (
        "list past runs, or print one run's transcript",
        "List the runs stored in the write-ahead log (newest last), or print one "
        "run's transcript: who spoke, which rule routed each turn, how it closed. With "
        "--why N, say why turn N went where it went; with --scenario-upto N, write the "
        "scenario block that replays the run's first N turns.",
    ),
    "replay": (
        "re-fold a stored run and check it reaches the same state",
        "Re-fold a stored run's turns through its stored graph and check that the "
        "routing, the close reason and the final state match what was recorded. "
        "Exit 0 when they match, 1 when they diverge (the first difference is shown).",
    ),
    "submit": (
        "open a run for `flowc worker` processes to run",
        "Open a run of FLOW in a shared run database and print its id: the "
        "run's opening and its script are written, and a `flowc worker` serving "
        "the database claims the run and runs it. The script is checked against "
        "the flow first (exit 1, nothing written).",
    ),
    "worker": (
        "run the open runs of a shared run database, with other workers",
        "Claim the open runs of a run database and run them, sharing the "
        "database with other `flowc worker` processes on this host or others: "
        "each run is held by one worker at a time (a lease, renewed while it "
        "runs); a run whose worker died is taken over from its write-ahead log. "
        "Stops on SIGTERM or Ctrl-C, giving its runs back.",
    ),
    "migrate": (
        "translate a classic AG2/AutoGen group chat (Python or AgentChat JSON) into .flow",
        "Translate a classic AG2/AutoGen group chat, swarm, group-API pattern or "
        "AgentChat team (Python, read without running it, or component JSON) into a "
        ".flow. Findings M001 (left out), M002 (lossy), M003 (dropped) go to stderr. "
        "Exit 0 translated, 1 something was left out, 2 not a recognised input.",
    ),
    "diff": (
        "what a change to a flow changes in its runs (structure and behaviour)",
        "Compare two versions of a flow: structural changes matched by meaning "
        "(speakers, tools, context, rules, default, cap, start) and behavioural "
        "changes found by exploring both, each with a shortest run after which "
        "OLD and NEW route differently. Either side may be a .flow file, a JSON "
        "graph, - (stdin) or a git revision REV:path. Exit status: 0 the behaviour "
        "is the same, 1 it changed, 2 flowc could not decide (the state bound was "
        "reached, only custom conditions or targets could make the versions "
        "differ, or a property of both was not decided in one) or could not run "
        "(an input is missing or has errors).",
    ),
    "lsp": (
        "language server for editors (stdio): diagnostics, hover, navigation, rename, "
        "completion, quick fixes, format",
        "Run the .flow language server on stdin/stdout, for an editor to start. It "
        "reports what `flowc check` reports (with the [tool.flowc] settings of the "
        "nearest pyproject.toml) as you type, and answers hover, go to definition, "
        "references, rename, completion, quick fixes, document symbols, semantic "
        "tokens, folding, formatting (as `flowc fmt`) and a diagram command. The "
        "plugins [tool.flowc] lists are imported only from trusted folders (`flowc "
        "trust`). See docs/editors.md.",
    ),
    "trust": ("trust a folder: the plugins its pyproject.toml lists may be imported", None),
    "view": (
        "watch runs in a local web page: the diagram, the transcript live, a timeline",
        "Start a local web server (127.0.0.1 only, a random token in its URL) "
        "that shows the runs of a run database: each run on its flow's diagram, with the "
        "transcript streaming as turns are committed and a timeline to go back to any turn. "
        "The database is opened read-only, but for a run's page's \"start a new run "
        'from here", which writes only the new run (as `flowc fork`). Needs the `view` extra '
        "(pip install '.[view]' in flowc's checkout).",
    ),
}


def add_command(
    sub: argparse._SubParsersAction[argparse.ArgumentParser],
    name: str,
    *,
    description: str | None = None,
) -> argparse.ArgumentParser:
    """The parser of the command ``name``, with its help line and description from
    :data:`TEXTS` (``description``: for a command whose description is computed)."""
    help_line, text = TEXTS[name]
    return sub.add_parser(name, help=help_line, description=description or text)
