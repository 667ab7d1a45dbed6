"""The VS Code extension (``editors/vscode``): its TypeScript type-checks, ``@vscode/vsce``
packages it into a ``.vsix`` holding exactly what VS Code loads, the bundled client loads in
Node with nothing but ``vscode`` from outside, and the language configuration indents and
comments as a ``.flow`` file needs."""

from __future__ import annotations

import json
import shutil
import zipfile
from pathlib import Path
from typing import Any

import pytest

from tests.editors.conftest import VSCODE, run_node_tool

#: what the package must hold, and nothing else (besides the two files of the vsix format)
PACKAGED = {
    "extension/package.json",
    "extension/readme.md",
    "extension/language-configuration.json",
    "extension/syntaxes/flow.tmLanguage.json",
    "extension/dist/extension.js",
}


@pytest.fixture(scope="module")
def vsix(npm_tools: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The extension packaged from a copy of its folder: packaging builds ``dist/`` in the
    folder it runs in, and another test job may be packaging the checkout's at the same time."""
    folder = tmp_path_factory.mktemp("vsix")
    source = folder / "vscode"
    shutil.copytree(VSCODE, source, ignore=shutil.ignore_patterns("node_modules", "dist"))
    (source / "node_modules").symlink_to(VSCODE / "node_modules", target_is_directory=True)
    out = folder / "flowc.vsix"
    proc = run_node_tool(
        [
            str(npm_tools / "vsce"),
            "package",
            "--no-dependencies",
            "--skip-license",
            "--allow-missing-repository",
            "--out",
            str(out),
        ],
        cwd=source,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def node_json(script: str, *args: str) -> Any:
    proc = run_node_tool(["node", "-e", script, "--", *args])
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def test_the_typescript_type_checks(npm_tools: Path) -> None:
    proc = run_node_tool([str(npm_tools / "tsc"), "--noEmit", "-p", "."], timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_the_package_holds_what_vscode_loads_and_nothing_more(vsix: Path) -> None:
    with zipfile.ZipFile(vsix) as z:
        names = set(z.namelist())
        manifest = json.loads(z.read("extension/package.json"))
        sizes = {i.filename: i.file_size for i in z.infolist()}
    assert names - {"extension.vsixmanifest", "[Content_Types].xml"} == PACKAGED
    assert not [n for n in names if "node_modules" in n or n.endswith(".map") or "/src/" in n]
    assert sum(sizes.values()) < 1_000_000
    # every file the manifest points at is in the package
    contributes = manifest["contributes"]
    assert f"extension/{manifest['main'].removeprefix('./')}" in names
    (language,) = contributes["languages"]
    assert language["id"] == "flow" and language["extensions"] == [".flow"]
    assert f"extension/{language['configuration'].removeprefix('./')}" in names
    (grammar,) = contributes["grammars"]
    assert grammar["scopeName"] == "source.flow" and grammar["language"] == "flow"
    assert f"extension/{grammar['path'].removeprefix('./')}" in names
    assert {c["command"] for c in contributes["commands"]} == {
        "flowc.showDiagram",
        "flowc.restartServer",
    }
    assert contributes["configuration"]["properties"]["flowc.path"]["default"] == "flowc"
    assert "onLanguage:flow" in manifest["activationEvents"]


def test_the_bundle_needs_only_vscode_and_node(vsix: Path, tmp_path: Path) -> None:
    """esbuild put vscode-languageclient inside: loading the bundle asks Node for nothing but
    its own modules and ``vscode`` (which VS Code provides; here a stand-in whose every
    member is an empty class, enough for the bundle's top level to run)."""
    with zipfile.ZipFile(vsix) as z:
        bundle = tmp_path / "extension.js"
        bundle.write_bytes(z.read("extension/dist/extension.js"))
    script = r"""
const Module = require("module");
const standIn = () => new Proxy(function () {}, {
  get: (target, key) => (key === "prototype" ? {} : standIn()),
  construct: () => standIn(),
  apply: () => standIn(),
});
const asked = new Set();
const load = Module._load;
Module._load = function (request, ...rest) {
  asked.add(request);
  if (request === "vscode") return standIn();
  return load.call(this, request, ...rest);
};
const ext = require(process.argv[1]);
const own = new Set(Module.builtinModules.flatMap((m) => [m, "node:" + m]));
console.log(JSON.stringify({
  outside: [...asked].filter((r) => r !== process.argv[1] && !own.has(r)),
  exports: Object.keys(ext).sort(),
  page: ext.previewHtml('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>'),
  problem: ext.previewHtml(undefined, 'a <b> & "c"'),
  programs: [ext.serverProgram(undefined, "/w"), ext.serverProgram(" .venv/bin/flowc ", "/w"),
             ext.serverProgram("/opt/flowc", "/w"), ext.serverProgram("flowc-dev", "/w")],
}));
"""
    out = node_json(script, str(bundle))
    assert out["outside"] == ["vscode"]
    assert {"activate", "deactivate"} <= set(out["exports"])
    # the diagram is an image (no script in it runs) under a policy that allows no script
    assert "<script" not in out["page"] and 'src="data:image/svg+xml;base64,' in out["page"]
    assert "default-src 'none'" in out["page"] and "script-src" not in out["page"]
    assert "a &lt;b&gt; &amp; &quot;c&quot;" in out["problem"]
    assert out["programs"] == ["flowc", "/w/.venv/bin/flowc", "/opt/flowc", "flowc-dev"]


def test_the_language_configuration(npm_tools: Path) -> None:
    """The indentation rules, run as VS Code runs them (JavaScript regular expressions)."""
    lines = {
        "speaker triage {": True,
        "context {   # the initial values": True,
        "when is_urgent(": True,
        "  tags = [": True,
        'when from a then terminate "{"': False,
        "# a comment with {": False,
        'speaker a   # "{"': False,
        "when from a then b": False,
    }
    script = r"""
const conf = require(process.argv[1]);
const inc = new RegExp(conf.indentationRules.increaseIndentPattern);
const dec = new RegExp(conf.indentationRules.decreaseIndentPattern);
const word = new RegExp("^(?:" + conf.wordPattern + ")");
const lines = JSON.parse(process.argv[2]);
console.log(JSON.stringify({
  increase: Object.fromEntries(lines.map((l) => [l, inc.test(l)])),
  decrease: ["}", "  ]", ")", "  } # end", "speaker a"].map((l) => dec.test(l)),
  words: ["next-step", "a->b", "`support desk`", "-1.5e3"].map((w) => (w.match(word) || [""])[0]),
  conf,
}));
"""
    out = node_json(script, str(VSCODE / "language-configuration.json"), json.dumps(list(lines)))
    assert out["increase"] == lines
    assert out["decrease"] == [True, True, True, True, False]
    assert out["words"] == ["next-step", "a", "`support desk`", "-1.5e3"]
    conf = out["conf"]
    assert conf["comments"] == {"lineComment": "#"}
    assert sorted(map(tuple, conf["brackets"])) == [("(", ")"), ("[", "]"), ("{", "}")]
    assert {p["open"] for p in conf["autoClosingPairs"]} == {"{", "[", "(", '"', "`"}


def test_untrusted_workspaces_are_declared(vsix: Path) -> None:
    """The extension supports untrusted workspaces in a limited way, says how, and every
    setting that chooses what program runs is one VS Code takes from the user's settings
    only there (``restrictedConfigurations``)."""
    with zipfile.ZipFile(vsix) as z:
        manifest = json.loads(z.read("extension/package.json"))
    untrusted = manifest["capabilities"]["untrustedWorkspaces"]
    assert untrusted["supported"] == "limited"
    assert "flowc.path" in untrusted["description"] and "flowc trust" in untrusted["description"]
    settings = manifest["contributes"]["configuration"]["properties"]
    programs = {name for name in settings if name.endswith(("path", "args", "command", "env"))}
    assert programs == {"flowc.path"}
    assert set(untrusted["restrictedConfigurations"]) == programs


#: activates the bundled extension against a stand-in of VS Code's API (every name
#: @types/vscode exports; the workspace's trust and the `flowc.path` setting as the test
#: gives them) and records what the language client spawns and what it warns about
ACTIVATE = r"""
const fs = require("fs");
const Module = require("module");
const [bundle, types, given] = process.argv.slice(1);
const { trusted, user, workspace } = JSON.parse(given);
const standIn = () => new Proxy(function () {}, {
  get: (target, key) => (key === "prototype" ? {} : key === "then" ? undefined : standIn()),
  construct: () => standIn(),
  apply: () => standIn(),
});
const spawned = [];
const warnings = [];
const inspected = { defaultValue: "flowc", globalValue: user ?? undefined,
                    workspaceValue: workspace ?? undefined };
// what a VS Code that did not restrict flowc.path would answer: the workspace's value first
const effective = inspected.workspaceValue ?? inspected.globalValue ?? inspected.defaultValue;
const workspaceApi = new Proxy({}, { get: (_, k) => {
  if (k === "isTrusted") return trusted;
  if (k === "workspaceFolders") return [{ uri: { fsPath: "/w" } }];
  if (k === "getConfiguration") return () => ({
    get: (name) => (name === "path" ? effective : undefined),
    inspect: (name) => (name === "path" ? inspected : undefined),
  });
  return standIn();
}});
const windowApi = new Proxy({}, { get: (_, k) => {
  if (k === "showWarningMessage") return (m) => { warnings.push(m); return Promise.resolve(); };
  return standIn();
}});
const vscode = {};
const api = fs.readFileSync(types, "utf8");
for (const m of api.matchAll(/^\s*export (?:class|namespace|enum|const|function) (\w+)/gm)) {
  const name = m[1];
  const value = name === "workspace" ? workspaceApi : name === "window" ? windowApi
    : name === "version" ? "1.82.0" : standIn();
  Object.defineProperty(vscode, name, { enumerable: true, configurable: true, value });
}
const childProcess = require("child_process");
const fake = { ...childProcess, spawn: (command, args, options) => {
  spawned.push({ command, args, cwd: options && options.cwd });
  throw new Error("no server in this test");
} };
const load = Module._load;
Module._load = function (request, ...rest) {
  if (request === "vscode") return vscode;
  if (request === "child_process" || request === "node:child_process") return fake;
  return load.call(this, request, ...rest);
};
const done = () => { console.log(JSON.stringify({ spawned, warnings })); process.exit(0); };
require(bundle).activate({ subscriptions: [] }).then(done, done);
setTimeout(done, 20000);
"""


@pytest.mark.parametrize(
    ("trusted", "user", "workspace", "command", "warned"),
    [
        # a workspace's flowc.path never runs in an untrusted workspace ...
        (False, None, "evil/flowc", "flowc", False),
        (False, None, "/tmp/evil", "flowc", False),
        (False, "/opt/flowc/bin/flowc", "evil/flowc", "/opt/flowc/bin/flowc", False),
        # ... nor a relative path of the user's, which would be the workspace's program
        (False, ".venv/bin/flowc", None, "flowc", True),
        # trusted, the workspace's setting applies, a relative path from its folder
        (True, None, "evil/flowc", "/w/evil/flowc", False),
        (True, ".venv/bin/flowc", None, "/w/.venv/bin/flowc", False),
    ],
)
def test_the_server_the_extension_starts(
    vsix: Path,
    tmp_path: Path,
    trusted: bool,
    user: str | None,
    workspace: str | None,
    command: str,
    warned: bool,
) -> None:
    """What the activated extension spawns: never with ``--trust``; in an untrusted
    workspace only a program the user's own settings name (or ``flowc``), even from a VS
    Code that would hand the extension the workspace's value."""
    with zipfile.ZipFile(vsix) as z:
        bundle = tmp_path / "extension.js"
        bundle.write_bytes(z.read("extension/dist/extension.js"))
    types = VSCODE / "node_modules" / "@types" / "vscode" / "index.d.ts"
    given = json.dumps({"trusted": trusted, "user": user, "workspace": workspace})
    out = node_json(ACTIVATE, str(bundle), str(types), given)
    assert out["spawned"] == [{"command": command, "args": ["lsp"], "cwd": "/w"}]
    if warned:
        (warning,) = out["warnings"]
        assert f"flowc.path ({user}) is a path in the workspace, which is not trusted" in warning
    else:
        assert out["warnings"] == []
