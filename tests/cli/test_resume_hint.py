"""The `flowc resume ...` line a stopped run prints (Ctrl-C, or its output closed): one
helper for both, naming a PostgreSQL URL without its password."""

from __future__ import annotations

import argparse
import shlex
from types import SimpleNamespace
from typing import Any

from flowc.commands.run import _resume_hint


def hint(
    db: str, script: str | None = None, agents: str | None = None, run_id: str | None = "r1"
) -> str | None:
    printer: Any = SimpleNamespace(run_id=run_id)
    return _resume_hint(printer, argparse.Namespace(db=db, script=script, agents=agents))


def test_the_hint_names_the_run_its_store_script_and_agents() -> None:
    assert hint("runs.db") == "flowc resume r1 --db runs.db"
    assert hint("runs.db", "s.json", "a.py") == (
        "flowc resume r1 --db runs.db --script s.json --agents a.py"
    )


def test_nothing_to_resume_without_a_stored_run() -> None:
    assert hint(":memory:") is None
    assert hint("runs.db", run_id=None) is None


def test_a_postgresql_password_is_not_printed() -> None:
    assert hint("postgresql://flowc:s3cret@db.example:5432/runs") == (
        "flowc resume r1 --db postgresql://flowc@db.example:5432/runs"
    )


def test_every_argument_is_quoted_for_the_shell() -> None:
    url = "postgresql://flowc:s3cret@db.example/runs?sslmode=require&application_name=x"
    assert hint(url) == (
        "flowc resume r1 --db "
        "'postgresql://flowc@db.example/runs?sslmode=require&application_name=x'"
    )
    assert hint("my runs.db", "it's.yaml", "$HOME/a.py") == (
        "flowc resume r1 --db 'my runs.db' --script 'it'\"'\"'s.yaml' --agents '$HOME/a.py'"
    )
    assert shlex.split(hint("a&b.db", "s c.json") or "") == [
        "flowc",
        "resume",
        "r1",
        "--db",
        "a&b.db",
        "--script",
        "s c.json",
    ]
