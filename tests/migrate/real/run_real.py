"""By hand, not in CI: run `flowc migrate` over the real public inputs of ``manifest.json``.

The inputs are read from repository snapshots under ``/work/.mirror/<owner>+<name>/repo``
(``git show COMMIT:PATH``); nothing fetched is committed. A notebook is read as its code cells
in order (shell and magic lines left out), a Markdown page as its ``python`` code blocks, a
Python or JSON file as it is. Prints one line per input and, per family, the counts of exit
0 / 1 / 2 and of the verdicts recorded in the manifest.

    .venv/bin/python tests/migrate/real/run_real.py [--mirror DIR] [--dump DIR] [--only TEXT]
    .venv/bin/python tests/migrate/real/run_real.py --termination
    .venv/bin/python tests/migrate/real/run_real.py --update

``--update`` writes each input's exit code and finding counts (and the summary) back into
the manifest; its verdicts are left as reviewed. :func:`table` prints the figures that
docs/migrate.md shows (tests/migrate/test_real_manifest.py checks the page against it).

``--termination`` measures instead the share of real ``is_termination_msg`` idioms that
migrate lowers: every ``is_termination_msg=`` argument (and ``"is_termination_msg"`` key of a
dict) whose value is a ``lambda`` or a name, with the ``def`` it names, grouped by its text.
"""

from __future__ import annotations

import argparse
import ast
import collections
import json
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

from flowc.migrate import migrate_source
from flowc.migrate.pyread import PyModule
from flowc.migrate.textpred import text_predicate
from flowc.source import SourceFile

HERE = Path(__file__).resolve().parent
FENCE = re.compile(r"^[ \t]*```(?:python|py)[^\n]*$(.*?)^[ \t]*```", re.S | re.M)


def extract(path: str, raw: str) -> tuple[str, str]:
    """The text migrate reads, and the name it gets (``.py`` or ``.json``)."""
    stem = path.rsplit("/", 1)[-1].rsplit(".", 1)[0]
    if path.endswith(".ipynb"):
        nb = json.loads(raw)
        cells = []
        for cell in nb.get("cells", []):
            if cell.get("cell_type") != "code":
                continue
            src = cell.get("source", "")
            text = "".join(src) if isinstance(src, list) else src
            lines = [ln for ln in text.splitlines() if not ln.lstrip().startswith(("!", "%"))]
            cells.append("\n".join(lines))
        return "\n\n".join(cells) + "\n", stem + ".py"
    if path.endswith((".md", ".mdx")):
        blocks = [textwrap.dedent(b).strip("\n") for b in FENCE.findall(raw)]
        return "\n\n".join(blocks) + "\n", stem + ".py"
    return raw, path.rsplit("/", 1)[-1]


def read(mirror: Path, entry: dict[str, Any]) -> str:
    repo = mirror / entry["repository"].replace("/", "+") / "repo"
    out = subprocess.run(
        ["git", "-C", str(repo), "show", f"{entry['commit']}:{entry['path']}"],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout


def outcome(mirror: Path, entry: dict[str, Any]) -> tuple[int, dict[str, int]]:
    """Migrate one input again: its exit code and the count of each finding code."""
    text, name = extract(entry["path"], read(mirror, entry))
    result = migrate_source(SourceFile(name, text))
    code = 2 if result.text is None else (1 if result.left_out else 0)
    return code, dict(sorted(collections.Counter(d.code.id for d in result.findings).items()))


FAMILY_NAMES = {
    "classic": "classic `GroupChat`",
    "group": "AG2 group API",
    "swarm": "legacy swarm",
    "agentchat": "AgentChat Python",
    "agentchat-json": "AgentChat JSON",
    "studio": "AutoGen Studio",
}


def table(entries: list[dict[str, Any]]) -> str:
    """The corpus's figures per family, as a Markdown table: inputs; translated (a `.flow`
    written); exact (written with no M001 and no M002); how many inputs carry each finding
    code, and how many findings; reviewed side by side, and of them wrong with no finding."""
    rows = []
    order = list(FAMILY_NAMES)
    fams = sorted({e["family"] for e in entries}, key=order.index)

    def line(label: str, group: list[dict[str, Any]]) -> str:
        n = len(group)
        written = [e for e in group if e["exit"] in (0, 1)]
        exact = [e for e in written if not {"M001", "M002"} & set(e["findings"])]
        cells = [label, str(n), f"{len(written)} ({len(written) / n:.0%})"]
        cells.append(f"{len(exact)} ({len(exact) / n:.0%})")
        for code in ("M001", "M002", "M003"):
            having = [e for e in group if e["findings"].get(code)]
            total = sum(e["findings"].get(code, 0) for e in group)
            cells.append(f"{len(having)} / {total}")
        reviewed = [e for e in group if e["verdict"] != "not reviewed"]
        wrong = sum(e["verdict"] == "wrong" for e in reviewed)
        cells.append(f"{len(reviewed)} / {wrong}")
        return "| " + " | ".join(cells) + " |"

    rows.append(
        "| family | inputs | translated | exact | M001 (inputs / findings) | "
        "M002 (inputs / findings) | M003 (inputs / findings) | reviewed / wrong without finding |"
    )
    rows.append("|---|--:|--:|--:|--:|--:|--:|--:|")
    for fam in fams:
        rows.append(line(FAMILY_NAMES[fam], [e for e in entries if e["family"] == fam]))
    rows.append(line("**all**", entries))
    return "\n".join(rows) + "\n"


def termination_idioms(name: str, text: str) -> list[tuple[str, bool]]:
    """Each ``is_termination_msg`` value of a Python input: (its text, recognised?)."""
    try:
        mod = PyModule.parse(name, text)
    except SyntaxError:
        return []
    values: list[ast.expr] = []
    for node in ast.walk(mod.tree):
        if isinstance(node, ast.Call):
            values += [kw.value for kw in node.keywords if kw.arg == "is_termination_msg"]
        elif isinstance(node, ast.Dict):
            values += [
                v
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and k.value == "is_termination_msg"
            ]
    out = []
    for v in values:
        if isinstance(v, ast.Constant) and v.value is None:
            continue
        target = mod.deref(v)
        fn = mod.function_of(v) if isinstance(v, ast.Name) else None
        shown = ast.unparse(fn) if fn is not None else ast.unparse(target)
        # one idiom per text, whatever the parameter is called
        param = (
            fn.args.args[0].arg
            if fn is not None and fn.args.args
            else target.args.args[0].arg
            if isinstance(target, ast.Lambda) and target.args.args
            else None
        )
        if param:
            shown = re.sub(rf"\b{re.escape(param)}\b", "msg", shown)
        if fn is not None:
            shown = re.sub(r"^(async )?def \w+", "def f", shown)
        out.append((" ".join(shown.split()), text_predicate(target, mod.function_of) is not None))
    return out


def measure_termination(mirror: Path, entries: list[dict[str, Any]]) -> None:
    uses: collections.Counter[tuple[str, bool]] = collections.Counter()
    for e in entries:
        if e["path"].endswith(".json"):
            continue
        text, name = extract(e["path"], read(mirror, e))
        uses.update(termination_idioms(name, text))
    for (idiom, ok), count in sorted(uses.items(), key=lambda x: (x[0][1], -x[1])):
        print(f"{'yes' if ok else 'NO ':3} {count:3}  {idiom[:150]}")
    distinct = len(uses)
    lowered = sum(1 for _, ok in uses if ok)
    total = sum(uses.values())
    covered = sum(c for (_, ok), c in uses.items() if ok)
    print(
        f"\nis_termination_msg idioms lowered: {lowered}/{distinct} distinct, {covered}/{total} uses"
    )


def update(path: Path, manifest: dict[str, Any], mirror: Path) -> None:
    """Record each input's exit code and finding counts, and the summary, in the manifest."""
    exits: dict[str, dict[str, int]] = {}
    verdicts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    for e in manifest["inputs"]:
        e["exit"], e["findings"] = outcome(mirror, e)
        row = exits.setdefault(e["family"], {"0": 0, "1": 0, "2": 0})
        row[str(e["exit"])] += 1
        verdicts[e["family"]][e["verdict"]] += 1
    manifest["summary"] = {
        "exits": dict(sorted(exits.items())),
        "verdicts": {f: dict(sorted(c.items())) for f, c in sorted(verdicts.items())},
    }
    path.write_text(json.dumps(manifest, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mirror", type=Path, default=Path("/work/.mirror"))
    ap.add_argument("--dump", type=Path, help="write each extracted input and its .flow here")
    ap.add_argument("--only", help="only inputs whose path contains this text")
    ap.add_argument("--manifest", type=Path, default=HERE / "manifest.json")
    ap.add_argument(
        "--update",
        action="store_true",
        help="write each input's exit code and finding counts back into the manifest",
    )
    ap.add_argument(
        "--termination",
        action="store_true",
        help="measure the share of is_termination_msg idioms lowered",
    )
    args = ap.parse_args(argv)
    manifest = json.loads(args.manifest.read_text(encoding="utf-8"))
    entries = manifest["inputs"]
    if args.termination:
        measure_termination(args.mirror, entries)
        return 0
    if args.update:
        update(args.manifest, manifest, args.mirror)
        print(table(entries), end="")
        return 0
    exits: dict[str, collections.Counter[int]] = collections.defaultdict(collections.Counter)
    verdicts: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    mismatched = 0
    for e in entries:
        if args.only and args.only not in e["path"]:
            continue
        try:
            text, name = extract(e["path"], read(args.mirror, e))
        except (subprocess.CalledProcessError, json.JSONDecodeError) as err:
            print(f"?  {e['repository']}:{e['path']}: cannot read ({err})")
            continue
        result = migrate_source(SourceFile(name, text))
        code = 2 if result.text is None else (1 if result.left_out else 0)
        exits[e["family"]][code] += 1
        if e.get("verdict"):
            verdicts[e["family"]][e["verdict"]] += 1
        flag = "" if e.get("exit") in (None, code) else f"  (manifest says exit {e['exit']})"
        mismatched += bool(flag)
        codes = collections.Counter(d.code.id for d in result.findings)
        print(
            f"{code}  {e['family']:<10} {e['repository']}:{e['path']}  "
            f"{dict(sorted(codes.items()))}{flag}"
        )
        if args.dump:
            args.dump.mkdir(parents=True, exist_ok=True)
            base = args.dump / (
                e["repository"].replace("/", "+") + "+" + e["path"].replace("/", "+")
            )
            base.with_suffix(Path(name).suffix).write_text(text, encoding="utf-8")
            findings = "\n".join(
                f"# {d.code.id} {d.span.line if d.span else ''} {d.message}"
                for d in result.findings
            )
            base.with_suffix(".flow").write_text(
                (result.text or "") + "\n" + findings + "\n", encoding="utf-8"
            )
    print()
    print(f"{'family':<10} {'exit 0':>6} {'exit 1':>6} {'exit 2':>6}   verdicts")
    for fam in sorted(exits):
        c = exits[fam]
        print(f"{fam:<10} {c[0]:>6} {c[1]:>6} {c[2]:>6}   {dict(sorted(verdicts[fam].items()))}")
    return 1 if mismatched else 0


if __name__ == "__main__":
    sys.exit(main())
