// Tokenizes flow texts with the extension's TextMate grammar, through the engine VS Code
// uses (vscode-textmate + the Oniguruma regex library compiled to WebAssembly).
// stdin: {"texts": ["..."]}; stdout: for each text, its lines' tokens
// [[{"line": 0, "start": 0, "end": 4, "text": "flow", "scopes": ["source.flow", ...]}, ...], ...]
"use strict";
const fs = require("fs");
const path = require("path");
const vsctm = require("vscode-textmate");
const oniguruma = require("vscode-oniguruma");

const GRAMMAR = path.join(__dirname, "..", "syntaxes", "flow.tmLanguage.json");

async function main() {
  const input = JSON.parse(fs.readFileSync(0, "utf8"));
  const wasm = fs.readFileSync(require.resolve("vscode-oniguruma/release/onig.wasm"));
  await oniguruma.loadWASM(wasm.buffer.slice(wasm.byteOffset, wasm.byteOffset + wasm.byteLength));
  const registry = new vsctm.Registry({
    onigLib: Promise.resolve({
      createOnigScanner: (sources) => new oniguruma.OnigScanner(sources),
      createOnigString: (s) => new oniguruma.OnigString(s),
    }),
    loadGrammar: async (scopeName) => scopeName === "source.flow"
      ? vsctm.parseRawGrammar(fs.readFileSync(GRAMMAR, "utf8"), GRAMMAR)
      : null,
  });
  const grammar = await registry.loadGrammar("source.flow");
  const out = input.texts.map((text) => {
    const tokens = [];
    let stack = vsctm.INITIAL;
    text.split(/\r?\n/).forEach((line, lineNo) => {
      const result = grammar.tokenizeLine(line, stack);
      for (const t of result.tokens) {
        const end = Math.min(t.endIndex, line.length);
        if (end > t.startIndex) {
          tokens.push({ line: lineNo, start: t.startIndex, end, text: line.slice(t.startIndex, end), scopes: t.scopes });
        }
      }
      stack = result.ruleStack;
    });
    return tokens;
  });
  process.stdout.write(JSON.stringify(out));
}

main().catch((err) => {
  process.stderr.write(String(err && err.stack || err) + "\n");
  process.exit(1);
});
