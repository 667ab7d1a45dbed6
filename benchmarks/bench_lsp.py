"""`flowc lsp` latency: diagnostics after an edit, through a real client over stdio.

Run: ``.venv/bin/python benchmarks/bench_lsp.py [--sizes 1000,10000] [--edits 30]``.

A pygls ``LanguageClient`` (the client pytest-lsp is built on) starts ``flowc lsp``
as a subprocess, opens a generated flow of N rules (the realistic mix of
``bench_compile.generate``: speakers with tools, `from`/`tool`/`context` rules,
priorities, `or`/`not`, an `otherwise`), waits for its first diagnostics, then makes
``--edits`` edits one at a time, as a user does: each edit changes one rule's target
(a different rule each time, so every edit changes the graph the checker explores),
sent as the whole new text (the heaviest change an editor sends). Latency is the wall
time from sending ``didChange`` to receiving the ``publishDiagnostics`` of that version:
the server's debounce (none after a quiet spell, as here: the next edit is sent when the
last one's diagnostics arrive), a full check (parse, compile, every check, ignore
comments, exactly what ``flowc check`` reports) and the JSON round trip. ``cpu ms`` is the
server's own CPU time per edit (median; less sensitive than wall time to other work on
the machine). ``decode`` is how long this client itself takes to read one such message
(JSON and lsprotocol's objects: a part of each latency spent on the client's side).
Memory is the server process's resident set after the edits and its peak (``VmRSS`` /
``VmHWM``). The load average is printed first: numbers are meaningful only when idle.

``--keep-shape`` makes each edit write a comment line instead: an edit that leaves the
flow's state space as it was, which the server explores once per document (its analysis
then runs the checks on the new version over the space it kept).

``--properties N`` adds N `property` statements (the six patterns under the five scopes in
turn, over the flow's speakers, tools, context and ending): the server then decides each
on every edit, and the targets are the same (properties must not cost the editor them).

Targets: p95 <= 150 ms for 1,000 rules, <= 500 ms for 10,000 rules (with or without
properties). Exit status 0 when both are met, 1 otherwise. The numbers depend on the machine's load: on a
busy 2-core box, run it twice and read the better run.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
import time
from pathlib import Path

from lsprotocol import types as lsp
from pygls.lsp.client import LanguageClient

sys.path.insert(0, str(Path(__file__).parent))
from bench_compile import generate

TARGETS = {1_000: 0.150, 10_000: 0.500}


def with_properties(text: str, count: int) -> str:
    """``text`` (a flow of ``bench_compile.generate``) with ``count`` properties: each of
    the six patterns under each of the five scopes in turn, over its speakers (``agent_N``),
    tools (``route_N``), ``context.stage`` and its ending, drawn from a fixed seed (the
    same properties in every process: the speakers are drawn from a sorted list, not from
    a set's order, which changes with the hash seed).

    >>> print(with_properties("speaker agent_0", 2), end="")
    speaker agent_0
    property p0: never from agent_0 and previous from agent_0
    property p1: always not turn > 3 before ends
    >>> print(with_properties("speaker agent_3\\nspeaker agent_1\\nspeaker agent_2", 1))
    speaker agent_3
    speaker agent_1
    speaker agent_2
    property p0: never from agent_1 and previous from agent_1
    <BLANKLINE>
    """
    import random

    rnd = random.Random(count)
    agents = sorted(
        set(re.findall(r"^speaker (agent_\d+)", text, re.M)), key=lambda a: (len(a), a)
    ) or ["agent_0"]
    n = len(agents)

    def atom() -> str:
        kind = rnd.choice(["from", "tool", "ctx", "ends", "turn"])
        if kind == "from":
            return f"from {rnd.choice(agents)}"
        if kind == "tool":
            return f"tool route_{rnd.randrange(n)}"
        if kind == "ctx":
            return f"context.stage == {rnd.randrange(n)}"
        if kind == "ends":
            return "ends"
        return f"turn > {rnd.randrange(1, 8)}"

    lines = [text.rstrip("\n")]
    for i in range(count):
        a = rnd.choice(agents)
        p = f"from {a} and previous from {a}" if i % 6 == 0 else atom()
        q = atom()
        pattern = [
            f"never {p}",
            f"always not {p}",
            f"eventually {p} within {rnd.choice([3, 10])} turns",
            f"{p} at most {rnd.randrange(2, 4)} times",
            f"{p} only after {q}",
            f"after {p}, {q} within {rnd.choice([3, 10])} turns",
        ][i % 6]
        scope = [
            "",
            f" before {atom()}",
            f" after {atom()}",
            f" after {atom()} before {atom()}",
            f" after {atom()} until {atom()}",
        ][(i // 6 + i) % 5]
        lines.append(f"property p{i}: {pattern}{scope}")
    return "\n".join(lines) + "\n"


def edited(text: str, i: int) -> str:
    """``text`` with the target of its ``i``-th `when from` rule changed."""
    lines = text.split("\n")
    rules = [
        k
        for k, line in enumerate(lines)
        if line.startswith("when from agent_") and " then agent_" in line
    ]
    k = rules[(i * 7919) % len(rules)]
    head, _, tail = lines[k].partition(" then ")
    target, _, rest = tail.partition(" ")
    number = int(target.removeprefix("agent_"))
    lines[k] = f"{head} then agent_{(number + 1 + i) % 20}" + (f" {rest}" if rest else "")
    return "\n".join(lines)


def edited_shape(text: str, i: int) -> str:
    """``text`` (a flow of ``bench_analysis``) with the target of one of its ``when from wA
    then wB`` rules changed to another worker."""
    lines = text.split("\n")
    rules = [k for k, line in enumerate(lines) if line.startswith("when from w")]
    workers = sum(line.startswith("speaker w") for line in lines)
    k = rules[(i * 7919) % len(rules)]
    head, _, target = lines[k].partition(" then w")
    lines[k] = f"{head} then w{(int(target) + 1 + i) % workers}"
    return "\n".join(lines)


def edited_comment(text: str, i: int) -> str:
    """``text`` with a comment line above one of its rules written anew (the edits of
    someone writing notes or scenarios): the flow's shape, and so its state space, stays."""
    lines = text.split("\n")
    rules = [k for k, line in enumerate(lines) if line.startswith("when ")]
    k = rules[(i * 7919) % len(rules)]
    lines.insert(k, f"# note {i}: why this rule is here")
    return "\n".join(lines)


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of the process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_mib(pid: int) -> tuple[float, float]:
    """The process's resident set now and at its peak, in MiB (Linux /proc)."""
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        fields[key] = value
    return (int(fields["VmRSS"].split()[0]) / 1024, int(fields["VmHWM"].split()[0]) / 1024)


async def measure(
    rules: int,
    edits: int,
    folder: Path,
    shape: str | None = None,
    keep_shape: bool = False,
    properties: int = 0,
) -> dict[str, float]:
    client = LanguageClient("bench-lsp", "1")
    published: dict[int, float] = {}
    counts: dict[int, int] = {}
    arrived = asyncio.Event()

    last: list[lsp.PublishDiagnosticsParams] = []

    @client.feature(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    def on_diagnostics(params: lsp.PublishDiagnosticsParams) -> None:
        if params.version is not None:
            published[params.version] = time.perf_counter()
            counts[params.version] = len(params.diagnostics)
            last[:] = [params]
            arrived.set()

    await client.start_io(sys.executable, "-m", "flowc", "lsp")
    assert client._server is not None and client._server.stderr is not None
    pid = client._server.pid
    # the server's log: read as it comes (a full pipe would stop the server), shown on failure
    log = bytearray()

    async def drain(stream: asyncio.StreamReader) -> None:
        while chunk := await stream.read(65536):
            log.extend(chunk)

    draining = asyncio.ensure_future(drain(client._server.stderr))
    await client.initialize_async(
        lsp.InitializeParams(capabilities=lsp.ClientCapabilities(), root_uri=folder.as_uri())
    )
    client.initialized(lsp.InitializedParams())
    path = folder / f"bench_{rules}.flow"
    text = generate(rules)
    edit = edited
    if shape is not None:  # a flow of the analysis benchmark's family
        from bench_analysis import Shape
        from bench_analysis import generate as generate_shape

        text = generate_shape(Shape(*(float(x) if "." in x else int(x) for x in shape.split(","))))  # type: ignore[arg-type]
        rules = sum(line.startswith("when ") for line in text.splitlines())
        edit = edited_shape
        if properties:
            from bench_analysis import properties as shape_properties

            made = shape_properties(
                Shape(*(float(x) if "." in x else int(x) for x in shape.split(","))), properties
            )  # type: ignore[arg-type]
            text += "".join(p.text + "\n" for p in made)
    elif properties:
        text = with_properties(text, properties)
    if keep_shape:
        edit = edited_comment
    path.write_text(text, encoding="utf-8")
    uri = path.as_uri()

    async def wait_for(version: int) -> float:
        while version not in published:
            arrived.clear()
            try:
                await asyncio.wait_for(arrived.wait(), timeout=120)
            except TimeoutError:
                tail = log[-4000:].decode(errors="replace")
                raise SystemExit(
                    f"no diagnostics for version {version}; the server's log:\n{tail}"
                ) from None
        return published[version]

    started = time.perf_counter()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(
            lsp.TextDocumentItem(uri=uri, language_id="flow", version=1, text=text)
        )
    )
    first = await wait_for(1) - started
    latencies, cpu = [], []
    for i in range(edits):
        version = i + 2
        text = edit(text, i)
        used = cpu_seconds(pid)
        sent = time.perf_counter()
        client.text_document_did_change(
            lsp.DidChangeTextDocumentParams(
                lsp.VersionedTextDocumentIdentifier(uri=uri, version=version),
                [lsp.TextDocumentContentChangeWholeDocument(text=text)],
            )
        )
        latencies.append(await wait_for(version) - sent)
        cpu.append(cpu_seconds(pid) - used)
    rss, peak = memory_mib(pid)
    await client.shutdown_async(None)
    client.exit(None)
    await client.stop()
    draining.cancel()
    latencies.sort()
    p95 = latencies[max(0, round(0.95 * len(latencies)) - 1)]
    return {
        "rules": rules,
        "open": first,
        "p50": statistics.median(latencies),
        "p95": p95,
        "max": latencies[-1],
        "cpu": statistics.median(cpu),
        "rss": rss,
        "peak": peak,
        "findings": counts[edits + 1],
        "decode": decode_seconds(client, last[0]),
    }


def decode_seconds(client: LanguageClient, params: lsp.PublishDiagnosticsParams) -> float:
    """How long this client takes to read one publishDiagnostics message (JSON, then
    lsprotocol's objects), the best of three: a part of each latency spent on the client's
    side (an editor's own client spends its own)."""
    body = json.dumps(
        lsp.PublishDiagnosticsNotification(params=params),
        default=client.protocol._serialize_message,
    )
    best = float("inf")
    for _ in range(3):
        started = time.perf_counter()
        json.loads(body, object_hook=client.protocol.structure_message)
        best = min(best, time.perf_counter() - started)
    return best


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--edits", type=int, default=30)
    parser.add_argument(
        "--shape",
        help="instead of --sizes: one flow of benchmarks/bench_analysis.py, S,K,V,R,T,C"
        " (the 200-speaker flow: 200,10,1,2,50,0.2); no target",
    )
    parser.add_argument(
        "--keep-shape",
        action="store_true",
        help="each edit writes a comment line instead of changing a rule: the state space "
        "stays, and the server explores it once (no target)",
    )
    parser.add_argument(
        "--properties",
        type=int,
        default=0,
        help="add N property statements, decided on every edit (same targets)",
    )
    args = parser.parse_args(argv)
    import tempfile

    ok = True
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(
        f"{'rules':>7} {'findings':>8} {'open s':>7} {'p50 ms':>7} {'p95 ms':>7} {'max ms':>7} "
        f"{'cpu ms':>7} {'decode':>7} {'target':>7} {'RSS MiB':>8} {'peak MiB':>8}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        sizes = [0] if args.shape else [int(s) for s in args.sizes.split(",")]
        for size in sizes:
            edits = args.edits if size <= 1000 else max(10, args.edits // 3)
            row = asyncio.run(
                measure(size, edits, Path(tmp), args.shape, args.keep_shape, args.properties)
            )
            size = int(row["rules"])
            target = None if args.shape or args.keep_shape else TARGETS.get(size)
            met = target is None or row["p95"] <= target
            ok = ok and met
            print(
                f"{size:>7} {row['findings']:>8.0f} {row['open']:>7.2f} {row['p50'] * 1000:>7.0f} "
                f"{row['p95'] * 1000:>7.0f} {row['max'] * 1000:>7.0f} {row['cpu'] * 1000:>7.0f} "
                f"{row['decode'] * 1000:>7.0f} "
                f"{'-' if target is None else f'{target * 1000:.0f}':>7} {row['rss']:>8.0f} "
                f"{row['peak']:>8.0f}  {'ok' if met else 'MISSED'}",
                flush=True,
            )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
