"""Every way of installing flowc that the README names works: a wheel, the sdist, an
editable install, ``pip install --target`` into a folder nobody may write to, and a zip of
the package on ``sys.path`` (zipimport). On each, ``flowc check``, ``explain``, ``run`` and
``lsp`` (initialize, a document's diagnostics, shutdown, exit) run from the installed copy,
never from this checkout (each test asserts where ``flowc`` was imported from).

These are the slow packaging tests (``-m packaging`` picks them, ``-m 'not packaging'``
leaves them out); they run in the default suite. Everything is built and installed once
per module and without network:

- the sdist is built from a copy of the checkout's files with the build backend's own
  hook (setuptools' ``build_meta``, the ``[dev]`` extra installs the version
  ``[build-system]`` needs), and the wheel from the unpacked sdist, as ``python -m
  build`` does: so the wheel tests also show that the sdist holds everything;
- each form gets a fresh virtual environment made without pip (pip runs from this
  interpreter with ``--python``, ``--no-index --no-deps``);
- flowc's dependencies are not installed again: each environment sees a folder of links
  to the ones this interpreter has, and nothing of flowc, appended to its ``sys.path``
  by a ``.pth`` file (after its own site-packages, so the form under test comes first).

Read-only folder: the ``--target`` folder is ``chmod -R a-w``. Permissions do not stop
root (this suite often runs as root, in a container), so the test does not rely on them:
it records every path of the folder with its size and modification time right after the
install, runs the commands, and compares.
"""

from __future__ import annotations

import email.parser
import importlib.metadata
import json
import os
import queue
import shutil
import stat
import subprocess
import sys
import tarfile
import threading
import time
import tomllib
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

pytestmark = pytest.mark.packaging

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
EXAMPLE = ROOT / "examples" / "feedback_loop.flow"
SCRIPT = ROOT / "examples" / "scripts" / "feedback_loop.yaml"
#: warnings only (W204 among them): exit 0
REVIEW = ROOT / "demo" / "review.flow"
TIMEOUT = 120
FORMS = ["wheel", "sdist", "editable", "target", "zip"]
#: permissions do not stop root: a chmod'ed folder stays writable
ROOT_USER = hasattr(os, "geteuid") and os.geteuid() == 0


# ── building ────────────────────────────────────────────────────────────────────────


def clean_env(**extra: str) -> dict[str, str]:
    """This process's environment less what points Python elsewhere (PYTHONPATH, a
    bytecode prefix, the user's site folder, flowc's own settings)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTHON", "FLOWC_")) and k != "VIRTUAL_ENV"
    }
    env.update(PYTHONNOUSERSITE="1", NO_COLOR="1", **extra)
    return env


def checked(argv: list[str | Path], **kwargs: Any) -> subprocess.CompletedProcess[str]:
    proc = subprocess.run(
        [str(a) for a in argv],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        **kwargs,
    )
    assert proc.returncode == 0, (
        f"{argv}: exit {proc.returncode}\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
    )
    return proc


def source_files() -> list[str]:
    """The checkout's files as a release would take them: git's tracked and untracked but
    not ignored ones (a folder that is no git checkout: its files less caches)."""
    if shutil.which("git") is not None:
        proc = subprocess.run(
            [
                "git",
                "-C",
                str(ROOT),
                "ls-files",
                "-z",
                "--cached",
                "--others",
                "--exclude-standard",
            ],
            capture_output=True,
            timeout=TIMEOUT,
            check=False,
        )
        if proc.returncode == 0:
            names = [n for n in proc.stdout.decode().split("\0") if n]
            return [n for n in names if (ROOT / n).is_file()]
    skip = {".git", ".venv", "__pycache__", "build", "dist", "node_modules", ".cache", "out"}
    return [
        str(p.relative_to(ROOT))
        for p in ROOT.rglob("*")
        if p.is_file()
        and not skip & set(p.relative_to(ROOT).parts)
        and not any(part.endswith(".egg-info") for part in p.parts)
    ]


def build_backend_ready() -> None:
    """The build backend this interpreter has is one ``[build-system]`` accepts."""
    for line in PYPROJECT["build-system"]["requires"]:
        req = Requirement(line)
        try:
            version = importlib.metadata.version(req.name)
        except importlib.metadata.PackageNotFoundError:
            version = "none"
        if version == "none" or not req.specifier.contains(version, prereleases=True):
            pytest.fail(
                f"building flowc needs {line} (pyproject.toml's [build-system]), which the "
                f"[dev] extra installs; this interpreter has {req.name} {version}"
            )


def build(hook: str, source: Path, out: Path) -> Path:
    """Run the build backend's ``hook`` (``build_sdist``, ``build_wheel``) in ``source``."""
    backend = PYPROJECT["build-system"]["build-backend"]
    code = f"import sys, {backend} as b; print(b.{hook}(sys.argv[1]))"
    proc = checked([sys.executable, "-c", code, out], cwd=source, env=clean_env())
    return out / proc.stdout.strip().splitlines()[-1]


@dataclass(frozen=True)
class Dists:
    source: Path  # the copy of the checkout they were built from
    sdist: Path
    wheel: Path


@pytest.fixture(scope="module")
def dists(tmp_path_factory: pytest.TempPathFactory) -> Dists:
    build_backend_ready()
    base = tmp_path_factory.mktemp("dists")
    source = base / "source"
    for name in source_files():
        (source / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, source / name)
    out = base / "dist"
    sdist = build("build_sdist", source, out)
    with tarfile.open(sdist) as tar:
        if hasattr(tarfile, "data_filter"):
            tar.extractall(base / "unpacked", filter="data")
        else:  # pragma: no cover - a Python older than the tar filters
            tar.extractall(base / "unpacked")
    (unpacked,) = (base / "unpacked").iterdir()
    wheel = build("build_wheel", unpacked, out)
    return Dists(source, sdist, wheel)


def requirements_of(wheel: Path) -> list[str]:
    """The wheel's ``Requires-Dist`` lines (its metadata, not this checkout's)."""
    with zipfile.ZipFile(wheel) as z:
        (name,) = [n for n in z.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = email.parser.BytesParser().parsebytes(z.read(name))
    return metadata.get_all("Requires-Dist") or []


def link_distributions(requirements: list[str], folder: Path) -> Path:
    """Link into ``folder`` what this interpreter has installed of ``requirements`` and
    of theirs in turn (each top-level module, package and ``.dist-info`` folder)."""
    folder.mkdir(parents=True, exist_ok=True)
    todo, seen = list(requirements), set()
    while todo:
        req = Requirement(todo.pop())
        if req.marker is not None and not req.marker.evaluate({"extra": ""}):
            continue
        dist = importlib.metadata.distribution(req.name)
        if canonicalize_name(dist.metadata["Name"]) in seen:
            continue
        seen.add(canonicalize_name(dist.metadata["Name"]))
        assert canonicalize_name(req.name) != "flowc"
        todo.extend(dist.requires or [])
        assert dist.files is not None, f"{req.name}: installed without a RECORD, cannot link it"
        for top in {f.parts[0] for f in dist.files} - {"..", "__pycache__"}:
            link = folder / top
            if not link.exists():
                link.symlink_to(Path(str(dist.locate_file(top))))
    return folder


def bare_venv(where: Path, deps: Path) -> Path:
    """A virtual environment without pip that also sees the modules in ``deps``; its python."""
    checked([sys.executable, "-m", "venv", "--without-pip", where], env=clean_env())
    python = where / "bin" / "python"
    purelib = checked(
        [python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], env=clean_env()
    ).stdout.strip()
    Path(purelib, "_flowc_test_deps.pth").write_text(f"{deps}\n", encoding="utf-8")
    return python


def pip(python: Path | None, *args: str | Path, env: dict[str, str] | None = None) -> None:
    """This interpreter's pip, run for ``python``'s environment (``--python``) or for
    this one (``--target``); no index, no dependencies."""
    into = ["--python", str(python)] if python is not None else []
    command = args[0]
    checked(
        [
            sys.executable,
            "-m",
            "pip",
            "--disable-pip-version-check",
            *into,
            command,
            "--quiet",
            *(["--no-index", "--no-deps"] if command == "install" else []),
            *args[1:],
        ],
        env=env or clean_env(),
    )


@pytest.fixture(scope="module")
def deps(dists: Dists, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """flowc's dependencies (as the wheel declares them), linked into one folder."""
    return link_distributions(requirements_of(dists.wheel), tmp_path_factory.mktemp("deps"))


@pytest.fixture(scope="module")
def backend(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The build backend, linked into a folder of its own: pip builds the sdist and the
    editable install with it (``--no-build-isolation``: no index to fetch it from)."""
    return link_distributions(
        PYPROJECT["build-system"]["requires"], tmp_path_factory.mktemp("backend")
    )


# ── the forms ───────────────────────────────────────────────────────────────────────


@dataclass(frozen=True)
class Install:
    form: str
    python: Path
    flowc: list[str]  # the command that starts flowc
    home: Path  # where `flowc` must be imported from
    env: dict[str, str]

    def run(
        self, *args: str | Path, code: int = 0, work: Path, stdin: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        proc = subprocess.run(
            [*self.flowc, *map(str, args)],
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            check=False,
            cwd=work,
            env=self.env,
            input=stdin,
        )
        assert proc.returncode == code, (
            f"{self.form}: flowc {args}: exit {proc.returncode}\n"
            f"{proc.stdout[-3000:]}{proc.stderr[-3000:]}"
        )
        return proc


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``folder`` with its size and modification time (nanoseconds)."""
    out = {}
    for path in [folder, *folder.rglob("*")]:
        st = path.lstat()
        out[str(path.relative_to(folder))] = (
            st.st_size if not path.is_dir() else 0,
            st.st_mtime_ns,
        )
    return out


def changes(before: dict[str, tuple[int, int]], after: dict[str, tuple[int, int]]) -> list[str]:
    return sorted(
        [f"added {p}" for p in after.keys() - before.keys()]
        + [f"removed {p}" for p in before.keys() - after.keys()]
        + [f"changed {p}" for p in before.keys() & after.keys() if before[p] != after[p]]
    )


@dataclass(frozen=True)
class ReadOnly:
    folder: Path
    before: dict[str, tuple[int, int]]


def make_wheel(dists: Dists, deps: Path, backend: Path, where: Path) -> Install:
    python = bare_venv(where / "venv", deps)
    pip(python, "install", dists.wheel)
    return Install(
        "wheel", python, [str(where / "venv" / "bin" / "flowc")], where / "venv", clean_env()
    )


def make_sdist(dists: Dists, deps: Path, backend: Path, where: Path) -> Install:
    python = bare_venv(where / "venv", deps)
    pip(
        python,
        "install",
        "--no-build-isolation",
        dists.sdist,
        env=clean_env(PYTHONPATH=str(backend)),
    )
    return Install(
        "sdist", python, [str(where / "venv" / "bin" / "flowc")], where / "venv", clean_env()
    )


def make_editable(dists: Dists, deps: Path, backend: Path, where: Path) -> Install:
    python = bare_venv(where / "venv", deps)
    tree = where / "tree"
    shutil.copytree(dists.source, tree)
    pip(
        python,
        "install",
        "--no-build-isolation",
        "-e",
        tree,
        env=clean_env(PYTHONPATH=str(backend)),
    )
    return Install(
        "editable", python, [str(where / "venv" / "bin" / "flowc")], tree / "flowc", clean_env()
    )


def make_target(dists: Dists, deps: Path, backend: Path, where: Path) -> Install:
    python = bare_venv(where / "venv", deps)
    target = where / "target"
    pip(None, "install", "--target", target, dists.wheel)
    for path in [target, *target.rglob("*")]:
        if not path.is_symlink():
            path.chmod(path.stat().st_mode & ~(stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH))
    return Install(
        "target",
        python,
        [str(python), "-m", "flowc"],
        target / "flowc",
        clean_env(PYTHONPATH=str(target)),
    )


def make_zip(dists: Dists, deps: Path, backend: Path, where: Path) -> Install:
    python = bare_venv(where / "venv", deps)
    archive = where / "flowc.zip"
    with zipfile.ZipFile(dists.wheel) as wheel, zipfile.ZipFile(archive, "w") as z:
        for name in wheel.namelist():
            if name.startswith("flowc/"):
                z.writestr(name, wheel.read(name))
    return Install(
        "zip",
        python,
        [str(python), "-m", "flowc"],
        archive / "flowc",
        clean_env(PYTHONPATH=str(archive)),
    )


MAKERS: dict[str, Callable[[Dists, Path, Path, Path], Install]] = {
    "wheel": make_wheel,
    "sdist": make_sdist,
    "editable": make_editable,
    "target": make_target,
    "zip": make_zip,
}


@pytest.fixture(scope="module")
def read_only(
    tmp_path_factory: pytest.TempPathFactory, dists: Dists, deps: Path, backend: Path
) -> Iterator[tuple[Install, ReadOnly]]:
    """The ``--target`` install, read-only, with its paths as they were after the install."""
    where = tmp_path_factory.mktemp("target")
    install = make_target(dists, deps, backend, where)
    folder = where / "target"
    yield install, ReadOnly(folder, snapshot(folder))
    for path in [folder, *folder.rglob("*")]:  # let pytest remove it again
        if not path.is_symlink():
            path.chmod(path.stat().st_mode | stat.S_IWUSR)


@pytest.fixture(scope="module", params=FORMS)
def install(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    dists: Dists,
    deps: Path,
    backend: Path,
) -> Install:
    if request.param == "target":
        installed: Install = request.getfixturevalue("read_only")[0]
        return installed
    return MAKERS[request.param](dists, deps, backend, tmp_path_factory.mktemp(request.param))


@pytest.fixture
def work(tmp_path: Path) -> Path:
    """The commands' working folder: not the checkout, whose flowc would import first."""
    return tmp_path


# ── the package's contents ──────────────────────────────────────────────────────────


def promised_data(source: Path) -> set[str]:
    """The files ``[tool.setuptools.package-data]`` promises, as paths in a wheel."""
    out = set()
    for package, patterns in PYPROJECT["tool"]["setuptools"]["package-data"].items():
        folder = source / package.replace(".", "/")
        for pattern in patterns:
            out |= {str(p.relative_to(source)) for p in folder.glob(pattern) if p.is_file()}
    return out


def test_the_wheel_holds_the_package_and_its_data_and_nothing_of_the_tests(dists: Dists) -> None:
    with zipfile.ZipFile(dists.wheel) as z:
        names = set(z.namelist())
    data = promised_data(dists.source)
    assert {"flowc/py.typed", "flowc/grammar/flow.lark", "flowc/docs/W204.md"} <= data
    assert not data - names, sorted(data - names)
    modules = {str(p.relative_to(dists.source)) for p in (dists.source / "flowc").rglob("*.py")}
    assert not modules - names, sorted(modules - names)
    (metadata,) = [n for n in names if n.endswith(".dist-info/METADATA")]
    assert {n.split("/", 1)[0] for n in names} == {"flowc", metadata.split("/", 1)[0]}
    strays = [
        n
        for n in names
        if "/tests/" in f"/{n}"
        or "__pycache__" in n
        or n.endswith(".pyc")
        or PurePosixPath(n).name.startswith(("test_", "conftest"))
    ]
    assert not strays, strays


def test_the_sdist_holds_the_grammar_the_docs_pages_and_py_typed(dists: Dists) -> None:
    with tarfile.open(dists.sdist) as tar:
        names = {name.split("/", 1)[1] for name in tar.getnames() if "/" in name}
    data = promised_data(dists.source)
    assert not data - names, sorted(data - names)
    assert {"pyproject.toml", "README.md", "flowc/__init__.py"} <= names


# ── each form runs ──────────────────────────────────────────────────────────────────


def test_flowc_is_imported_from_the_installed_form(install: Install, work: Path) -> None:
    proc = checked(
        [install.python, "-c", "import flowc; print(flowc.__file__)"], cwd=work, env=install.env
    )
    imported = Path(proc.stdout.strip())
    assert imported.is_relative_to(install.home), (install.form, imported)
    assert not imported.is_relative_to(ROOT)


def test_check(install: Install, work: Path) -> None:
    assert "no findings in 1 file" in install.run("check", EXAMPLE, work=work).stdout
    # a file with a syntax error goes to the LALR parser, which reads the grammar itself
    bad = work / "bad.flow"
    bad.write_text("speaker a\nwhen from a then\n", encoding="utf-8")
    out = install.run("check", REVIEW, bad, code=1, work=work).stdout
    assert "warning[W204]" in out and "error[E001]" in out


def test_explain_reads_the_docs_pages(install: Install, work: Path) -> None:
    page = (ROOT / "flowc" / "docs" / "W204.md").read_text(encoding="utf-8")
    assert install.run("explain", "W204", work=work).stdout == page
    listed = install.run("explain", work=work).stdout.splitlines()
    assert len(listed) == len(list((ROOT / "flowc" / "docs").glob("*.md")))


def test_run(install: Install, work: Path) -> None:
    out = install.run("run", EXAMPLE, "--script", SCRIPT, "--db", ":memory:", work=work).stdout
    assert 'closed: "approved" after 5 turns' in out


class LspClient:
    """Just enough of an LSP client: JSON-RPC frames over the server's stdin and stdout."""

    def __init__(self, install: Install, work: Path) -> None:
        self.stderr = (work / "lsp.stderr").open("w+b")
        self.proc = subprocess.Popen(
            [*install.flowc, "lsp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self.stderr,
            cwd=work,
            env=install.env,
        )
        self.messages: queue.Queue[dict[str, Any] | None] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        assert out is not None
        while True:
            length = 0
            while line := out.readline().strip():
                name, _, value = line.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            if not length:
                self.messages.put(None)  # end of output
                return
            self.messages.put(json.loads(out.read(length)))

    def send(self, method: str, params: Any, id: int | None = None) -> None:
        message = {"jsonrpc": "2.0", "method": method, "params": params}
        if id is not None:
            message["id"] = id
        body = json.dumps(message).encode("utf-8")
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        self.proc.stdin.flush()

    def wait(self, wanted: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                message = self.messages.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                raise AssertionError(
                    f"no answer from `flowc lsp`; its stderr:\n{self.errors()}"
                ) from None
            assert message is not None, (
                f"`flowc lsp` closed its output; its stderr:\n{self.errors()}"
            )
            if wanted(message):
                return message

    def errors(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode("utf-8", "replace")[-3000:]

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(timeout=TIMEOUT)
        for stream in (self.proc.stdin, self.proc.stdout, self.stderr):
            if stream is not None:
                stream.close()


def lsp_session(install: Install, work: Path) -> None:
    """Initialize, open a document and wait for its diagnostics (W204 among them), shut
    down and exit: the server ends with status 0."""
    client = LspClient(install, work)
    try:
        client.send(
            "initialize",
            {"processId": os.getpid(), "rootUri": work.as_uri(), "capabilities": {}},
            id=1,
        )
        answer = client.wait(lambda m: m.get("id") == 1)
        assert answer["result"]["capabilities"]["hoverProvider"], answer
        client.send("initialized", {})
        doc = work / "review.flow"
        shutil.copy(REVIEW, doc)
        client.send(
            "textDocument/didOpen",
            {
                "textDocument": {
                    "uri": doc.as_uri(),
                    "languageId": "flow",
                    "version": 1,
                    "text": doc.read_text(encoding="utf-8"),
                }
            },
        )
        published = client.wait(
            lambda m: (
                m.get("method") == "textDocument/publishDiagnostics"
                and m["params"]["uri"] == doc.as_uri()
            )
        )
        assert "W204" in {d.get("code") for d in published["params"]["diagnostics"]}, published
        client.send("shutdown", None, id=2)
        assert client.wait(lambda m: m.get("id") == 2)["result"] is None
        client.send("exit", None)
        assert client.proc.wait(timeout=TIMEOUT) == 0, client.errors()
    finally:
        client.close()


def test_lsp_initializes_reports_and_exits(install: Install, work: Path) -> None:
    lsp_session(install, work)


# ── read-only, and uninstalling ─────────────────────────────────────────────────────


@pytest.fixture(scope="module")
def written(
    read_only: tuple[Install, ReadOnly], tmp_path_factory: pytest.TempPathFactory
) -> list[str]:
    """What changed in the read-only ``--target`` folder since its install, once every
    command ran from it (here, and in the tests of the ``target`` form)."""
    install, folder = read_only
    work = tmp_path_factory.mktemp("read-only-work")
    install.run("check", EXAMPLE, work=work)
    install.run("explain", "W204", work=work)
    install.run("run", EXAMPLE, "--script", SCRIPT, "--db", ":memory:", work=work)
    lsp_session(install, work)
    return changes(folder.before, snapshot(folder.folder))


def test_nothing_is_written_into_a_read_only_install(written: list[str]) -> None:
    """As root the folder's permissions stop nothing: the snapshot shows what was written."""
    assert not written, written


@pytest.fixture(scope="module")
def uninstalled(
    tmp_path_factory: pytest.TempPathFactory, dists: Dists, deps: Path, backend: Path
) -> Install:
    """A wheel install that ran a command (as its user would), then ``pip uninstall``."""
    where = tmp_path_factory.mktemp("uninstall")
    install = make_wheel(dists, deps, backend, where)
    install.run("check", EXAMPLE, work=where)
    pip(install.python, "uninstall", "--yes", "flowc")
    return install


def test_pip_uninstall_removes_the_files_it_installed(uninstalled: Install) -> None:
    assert not Path(uninstalled.flowc[0]).exists()
    purelib = checked(
        [uninstalled.python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        env=uninstalled.env,
    ).stdout.strip()
    left = sorted(
        str(p.relative_to(purelib))
        for p in Path(purelib).rglob("*")
        if p.name.startswith("flowc") or "flowc" in p.relative_to(purelib).parts[:1]
    )
    assert not left, left


def test_after_pip_uninstall_flowc_is_not_importable(uninstalled: Install, tmp_path: Path) -> None:
    proc = subprocess.run(
        [str(uninstalled.python), "-c", "import flowc; print(flowc.__path__)"],
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=False,
        cwd=tmp_path,
        env=uninstalled.env,
    )
    assert proc.returncode == 1, proc.stdout
    assert "ModuleNotFoundError: No module named 'flowc'" in proc.stderr
