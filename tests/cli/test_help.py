"""Every subcommand explains itself: ``flowc COMMAND --help`` has a description and help text
for every option and argument, and the README's command table lists every command."""

from __future__ import annotations

import argparse
import importlib
import re
from pathlib import Path

import pytest

from flowc import cli

README = Path(__file__).resolve().parents[2] / "README.md"


def subparsers() -> dict[str, argparse.ArgumentParser]:
    modules = [importlib.import_module(m) for m in dict.fromkeys(cli.COMMAND_MODULES.values())]
    parser = cli.build_parser(modules)
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def test_every_registered_subcommand_is_in_the_table() -> None:
    assert set(subparsers()) == set(cli.COMMAND_MODULES)


@pytest.mark.parametrize("name", sorted(cli.COMMAND_MODULES))
def test_subcommand_help_describes_the_command_and_every_option(name: str) -> None:
    parser = subparsers()[name]
    assert parser.description and len(parser.description.split()) >= 5, (
        f"`flowc {name} --help` has no description"
    )
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction):
            continue
        what = "/".join(action.option_strings) or action.dest
        assert action.help and action.help.strip() and action.help is not argparse.SUPPRESS, (
            f"`flowc {name}`: {what} has no help text"
        )


@pytest.mark.parametrize("name", sorted(cli.COMMAND_MODULES))
def test_the_readme_lists_every_command(name: str) -> None:
    table = README.read_text(encoding="utf-8").split("## Commands", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"^\| `flowc (\w+)", table, re.M) + re.findall(r"/ `flowc (\w+)", table)
    assert name in commands, f"the README's command table does not list `flowc {name}`"


@pytest.mark.parametrize("name", sorted(cli.COMMAND_MODULES))
def test_each_usage_line_asks_for_what_the_command_takes(name: str) -> None:
    # (`diff` takes two versions; argparse wrote its nargs="+" as "OLD NEW [OLD NEW ...]")
    usage = subparsers()[name].format_usage()
    assert usage.startswith(f"usage: flowc {name} "), usage
    assert "[OLD NEW ...]" not in usage, usage
    if name == "diff":
        assert usage.rstrip().endswith("OLD NEW"), usage
