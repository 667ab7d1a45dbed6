// The Flow extension: starts `flowc lsp` for .flow files (findings, hover, navigation,
// formatting come from the server) and shows the flow's diagram, which the server draws
// (its `flowc.diagram` command returns the SVG), in a panel beside the editor.
import * as path from "path";
import * as vscode from "vscode";
import {
  ExecuteCommandRequest,
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
} from "vscode-languageclient/node";

const DIAGRAM_COMMAND = "flowc.diagram";
let client: LanguageClient | undefined;
const previews = new Map<string, vscode.WebviewPanel>();

/** The `flowc` program: the `flowc.path` setting, a relative path taken from the first
 * workspace folder. */
export function serverProgram(setting: string | undefined, folder: string | undefined): string {
  const value = (setting ?? "").trim() || "flowc";
  if (isRelativePath(value) && folder !== undefined) {
    return path.join(folder, value);
  }
  return value;
}

/** A path with a folder in it that is not absolute (`.venv/bin/flowc`), not a bare name. */
function isRelativePath(value: string): boolean {
  return (value.includes("/") || value.includes("\\")) && !path.isAbsolute(value);
}

/** What `flowc.path` holds as far as an untrusted workspace may have it: the user's own
 * value or the default, never a workspace's or a workspace folder's (VS Code gives the
 * same through `restrictedConfigurations` in package.json; asked here again, so that no
 * version of VS Code lets a repository choose the program the extension runs). */
export function userSetting(
  inspected: { defaultValue?: string; globalValue?: string } | undefined,
): string | undefined {
  return inspected?.globalValue ?? inspected?.defaultValue;
}

export interface ServerCommand {
  command: string;
  args: string[];
  /** why the command is not the one the setting names (an untrusted workspace) */
  note?: string;
}

/** The language server's command line. In an untrusted workspace a relative `flowc.path`
 * would run a program of the workspace: `flowc` from `PATH` runs instead, with a note.
 * The arguments are `lsp` alone: the extension never passes `--trust`, so the server
 * imports a workspace's plugins only from a folder its user trusted (`flowc trust`). */
export function serverCommand(
  setting: string | undefined,
  folder: string | undefined,
  trusted: boolean,
): ServerCommand {
  const value = (setting ?? "").trim() || "flowc";
  if (!trusted && isRelativePath(value)) {
    return {
      command: "flowc",
      args: ["lsp"],
      note:
        `flowc.path (${value}) is a path in the workspace, which is not trusted: the ` +
        "language server is `flowc` from PATH until you trust the workspace.",
    };
  }
  return { command: serverProgram(value, folder), args: ["lsp"] };
}

function newClient(): { client: LanguageClient; command: string } {
  const trusted = vscode.workspace.isTrusted;
  const config = vscode.workspace.getConfiguration("flowc");
  const setting = trusted ? config.get<string>("path") : userSetting(config.inspect<string>("path"));
  const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
  const server = serverCommand(setting, folder, trusted);
  if (server.note !== undefined) {
    void vscode.window.showWarningMessage(server.note);
  }
  const serverOptions: ServerOptions = {
    command: server.command,
    args: server.args,
    options: { cwd: folder },
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "flow" },
      { scheme: "untitled", language: "flow" },
    ],
    outputChannelName: "Flow (flowc)",
  };
  return {
    client: new LanguageClient("flowc", "Flow (flowc)", serverOptions, clientOptions),
    command: server.command,
  };
}

async function startClient(): Promise<void> {
  const made = newClient();
  client = made.client;
  try {
    await client.start();
  } catch (err) {
    void vscode.window.showErrorMessage(
      `Could not start the flowc language server (\`${made.command} lsp\`): ${message(err)}. ` +
        "Install flowc (pip install flowc) or set flowc.path to the flowc program.",
    );
  }
}

async function restartClient(): Promise<void> {
  const old = client;
  client = undefined;
  if (old !== undefined) {
    await old.stop().catch(() => undefined);
  }
  await startClient();
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function escapeHtml(text: string): string {
  return text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

/** The preview page: the SVG as an image (no script in it can run), or what went wrong. */
export function previewHtml(svg: string | undefined, problem?: string): string {
  const body = svg !== undefined
    ? `<img alt="flow diagram" src="data:image/svg+xml;base64,${Buffer.from(svg, "utf8").toString("base64")}">`
    : `<p class="problem">${escapeHtml(problem ?? "no diagram")}</p>`;
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="UTF-8">
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; img-src data:; style-src 'unsafe-inline';">
<style>
  body { margin: 0; padding: 12px; }
  img { max-width: 100%; background: white; padding: 8px; border-radius: 4px; }
  .problem { font-family: var(--vscode-editor-font-family); color: var(--vscode-errorForeground); white-space: pre-wrap; }
</style>
</head>
<body>${body}</body>
</html>`;
}

async function renderPreview(panel: vscode.WebviewPanel, uri: vscode.Uri): Promise<void> {
  if (client === undefined || !client.isRunning()) {
    panel.webview.html = previewHtml(undefined, "The flowc language server is not running.");
    return;
  }
  try {
    const result: unknown = await client.sendRequest(ExecuteCommandRequest.type, {
      command: DIAGRAM_COMMAND,
      arguments: [uri.toString()],
    });
    const svg = (result as { svg?: unknown } | null)?.svg;
    if (typeof svg !== "string") {
      throw new Error("the server sent no diagram");
    }
    panel.webview.html = previewHtml(svg);
  } catch (err) {
    panel.webview.html = previewHtml(undefined, `No diagram: ${message(err)}`);
  }
}

async function showDiagram(): Promise<void> {
  const editor = vscode.window.activeTextEditor;
  if (editor === undefined || editor.document.languageId !== "flow") {
    void vscode.window.showInformationMessage("Open a .flow file to see its diagram.");
    return;
  }
  const uri = editor.document.uri;
  const key = uri.toString();
  let panel = previews.get(key);
  if (panel === undefined) {
    panel = vscode.window.createWebviewPanel(
      "flowc.diagram",
      `Diagram: ${path.basename(uri.path)}`,
      { viewColumn: vscode.ViewColumn.Beside, preserveFocus: true },
      { enableScripts: false, localResourceRoots: [] },
    );
    previews.set(key, panel);
    panel.onDidDispose(() => previews.delete(key));
  } else {
    panel.reveal(vscode.ViewColumn.Beside, true);
  }
  await renderPreview(panel, uri);
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const timers = new Map<string, NodeJS.Timeout>();
  context.subscriptions.push(
    vscode.commands.registerCommand("flowc.showDiagram", showDiagram),
    vscode.commands.registerCommand("flowc.restartServer", restartClient),
    vscode.workspace.onDidChangeConfiguration((event) => {
      if (event.affectsConfiguration("flowc.path")) {
        void restartClient();
      }
    }),
    // once the workspace is trusted, its own flowc.path applies
    vscode.workspace.onDidGrantWorkspaceTrust(() => void restartClient()),
    // An open preview follows its document: redrawn on save, and shortly after an edit.
    vscode.workspace.onDidSaveTextDocument((doc) => {
      const panel = previews.get(doc.uri.toString());
      if (panel !== undefined) {
        void renderPreview(panel, doc.uri);
      }
    }),
    vscode.workspace.onDidChangeTextDocument((event) => {
      const key = event.document.uri.toString();
      const panel = previews.get(key);
      if (panel === undefined) {
        return;
      }
      clearTimeout(timers.get(key));
      timers.set(key, setTimeout(() => void renderPreview(panel, event.document.uri), 500));
    }),
    { dispose: () => timers.forEach((timer) => clearTimeout(timer)) },
  );
  await startClient();
}

export async function deactivate(): Promise<void> {
  if (client !== undefined) {
    await client.stop();
  }
}
