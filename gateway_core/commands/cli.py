"""The ``relaygate`` program: builds the parser from the registered commands and runs one.

Sub-commands come from the ``register_commands`` hook (the core's own from the
modules of :mod:`gateway_core.commands`), so plugins can add more. A name may
have several words (``"key create"``): each word but the last becomes a command
group. ``--db``, ``--plugins`` and ``--json`` are accepted by every command.

Every failure ends as one line on stderr and a non-zero status, never a
traceback (set ``RELAYGATE_DEBUG=1`` to see one).
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable, Collection, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from ..admin.errors import AdminError, Invalid, StoreFailure
from .kit import EXIT_ERROR, EXIT_USAGE, PROG, ArgumentParser, CommandContext, CommandError
from ..config import ConfigError, load_config

if TYPE_CHECKING:
    from ..runtime.registry import Registry


# --- parsing --------------------------------------------------------------------

Command = tuple[str, str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace, CommandContext], int]]


def build_parser(commands: Iterable[Command], version: str | None = None, line: Collection[str] | None = None) -> ArgumentParser:
    """The parser with a (nested) sub-command per registered command; ``version``:
    what ``--version`` prints.

    With ``line`` (the words of the command line), a command whose first word is
    not among them gets only its top-level entry, its name and help (what ``--help``
    shows and an unknown command is refused with): a run parses one command, and
    building every command's arguments took a good part of each start-up."""
    parser = ArgumentParser(prog=PROG, description="Relaygate: an HTTP gateway in front of AI model providers.")
    add_common_options(parser, default=None)
    if version is not None:
        parser.add_argument("--version", action=_PrintVersion, version=version, help="print the versions of the gateway and its plugins")
    parser.set_defaults(_help_parser=parser)
    groups: dict[tuple[str, ...], argparse._SubParsersAction] = {(): _subparsers(parser, ())}
    parsers: dict[tuple[str, ...], argparse.ArgumentParser] = {}
    commands_seen: set[tuple[str, ...]] = set()
    for name, help, configure, run in commands:
        words = tuple(name.split())
        if not words:
            raise ConfigError("a command was registered with an empty name")
        if words in commands_seen:
            raise ConfigError(f"command {name!r} registered twice")
        commands_seen.add(words)
        if line is not None and words[0] not in line:
            if words[:1] not in parsers:  # the command's own help, else its group's, as below
                parsers[words[:1]] = groups[()].add_parser(words[0], help=help if len(words) == 1 else f"{words[0]} commands")
            continue
        for depth in range(1, len(words)):
            path = words[:depth]
            if path not in groups:
                if path in parsers:  # a command with sub-commands of its own (``logs``, ``logs export``)
                    groups[path] = _subparsers(parsers[path], path)
                    continue
                group = groups[path[:-1]].add_parser(path[-1], help=f"{' '.join(path)} commands")
                group.set_defaults(_help_parser=group)
                add_common_options(group, default=argparse.SUPPRESS)
                parsers[path] = group
                groups[path] = _subparsers(group, path)
        sub = parsers.get(words)
        if sub is None:
            sub = groups[words[:-1]].add_parser(words[-1], help=help, description=help)
            add_common_options(sub, default=argparse.SUPPRESS)
            parsers[words] = sub
        else:  # registered as a group first: the group's parser becomes the command
            sub.description = help
        configure(sub)
        sub.set_defaults(_command=(name, run), _field_names=_field_names(sub))
    return parser


def _field_names(parser: argparse.ArgumentParser) -> dict[str, str]:
    """How a command's arguments are written (``{"base_url": "--base-url", "name": "NAME"}``),
    to name the one an admin-layer :class:`Invalid` blames."""
    names = {}
    for action in parser._actions:
        if action.option_strings:
            names[action.dest] = max(action.option_strings, key=len)
        elif isinstance(action.metavar, str):
            names[action.dest] = action.metavar
    return names


def add_common_options(parser: argparse.ArgumentParser, *, default: Any) -> None:
    parser.add_argument("--db", metavar="PATH", default=default, help="the database: a SQLite file or a postgresql:// URL (default: $RELAYGATE_DB, else relaygate.db in $RELAYGATE_HOME or the user's data folder)")
    parser.add_argument("--plugins", metavar="FILE", default=default, help="plugins file (default: $RELAYGATE_PLUGINS or ./plugins.toml)")
    parser.add_argument("--json", action="store_true", default=default if default is argparse.SUPPRESS else False, help="print records as JSON")


def _subparsers(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> argparse._SubParsersAction:
    return parser.add_subparsers(title="commands", dest="_group_" + "_".join(path), metavar="COMMAND")


class _PrintVersion(argparse.Action):
    """``--version``: the text as it is (argparse's own action would wrap its lines), then exit 0."""

    def __init__(self, option_strings: Sequence[str], version: str, dest: str = argparse.SUPPRESS, help: str | None = None) -> None:
        super().__init__(option_strings, dest, nargs=0, default=argparse.SUPPRESS, help=help)
        self.version = version

    def __call__(self, parser: argparse.ArgumentParser, *_: Any) -> None:
        print(self.version)
        parser.exit(0)


def version_text(registry: Registry) -> str:
    """``relaygate 0.1.0``, then one line per other distribution that plugins were loaded from."""
    core = next((plugin.version for plugin in registry.plugins if plugin.distribution == "relaygate"), None)
    lines = [f"{PROG} {core or 'unknown'}"]
    by_distribution: dict[tuple[str, str | None], list[str]] = {}
    for plugin in registry.plugins:
        if plugin.distribution != "relaygate":
            by_distribution.setdefault((plugin.distribution or plugin.module, plugin.version), []).append(plugin.name)
    for (distribution, version), names in sorted(by_distribution.items()):
        lines.append(f"{distribution} {version or 'unknown'} (plugins: {', '.join(names)})")
    return "\n".join(lines)


def _preparse(argv: Sequence[str]) -> argparse.Namespace:
    """``--db`` and ``--plugins`` wherever they are: needed before the full parser
    exists, since the plugins they select register the commands."""
    pre = ArgumentParser(prog=PROG, add_help=False, allow_abbrev=False)
    pre.add_argument("--db")
    pre.add_argument("--plugins")
    known, _ = pre.parse_known_args(argv)
    return known


# --- running ----------------------------------------------------------------------


def main(argv: Sequence[str] | None = None, extra_plugins: Iterable[Any] = ()) -> int:
    """Run ``relaygate`` with ``argv``; return the exit status.

    ``extra_plugins`` are registered as plugins besides the installed ones (tests).
    """
    from ..runtime.plugins import collect

    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        options = _preparse(argv)
        config = load_config(options.db, options.plugins)
        registry = collect(config, extra_plugins, when_read=True)
        parser = build_parser(registry.commands, version_text(registry), line=set(argv))
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help
        return exc.code if isinstance(exc.code, int) else 0
    except CommandError as exc:
        return _fail(str(exc), exc.status)
    except ConfigError as exc:
        return _fail(f"{PROG}: {exc}", EXIT_USAGE)
    command = getattr(args, "_command", None)
    if command is None:  # a group without its sub-command: show what it offers
        getattr(args, "_help_parser", parser).print_help()
        return EXIT_USAGE
    name, run = command
    cli = CommandContext(args, config, registry)
    try:
        return int(run(args, cli) or 0)
    except CommandError as exc:
        return _fail(f"{PROG} {name}: {exc}", exc.status)
    except ConfigError as exc:
        return _fail(f"{PROG} {name}: {exc}", EXIT_USAGE)
    except Invalid as exc:  # a field's value: named as its option or argument
        written = getattr(args, "_field_names", {})
        problem = f"{written.get(exc.field, '--' + exc.field.replace('_', '-'))} {exc.detail}" if exc.field else exc.detail
        return _fail(f"{PROG} {name}: {problem}", EXIT_USAGE)
    except ValueError as exc:
        return _fail(f"{PROG} {name}: {exc}", EXIT_USAGE)
    except LookupError as exc:  # NotFound too
        return _fail(f"{PROG} {name}: {exc.args[0] if exc.args else exc}", EXIT_ERROR)
    except StoreFailure as exc:
        return _fail(f"{PROG} {name}: {exc} ({cli.config.db_path})", EXIT_ERROR)
    except AdminError as exc:  # Conflict
        return _fail(f"{PROG} {name}: {exc}", EXIT_ERROR)
    except OSError as exc:
        return _fail(f"{PROG} {name}: {exc}", EXIT_ERROR)
    except KeyboardInterrupt:
        return _fail(f"{PROG} {name}: interrupted", 130)
    except Exception as exc:  # a bug: still one line, with the traceback on demand
        if os.environ.get("RELAYGATE_DEBUG"):
            traceback.print_exc()
        return _fail(f"{PROG} {name}: internal error: {type(exc).__name__}: {exc}", EXIT_ERROR)


def _fail(message: str, status: int) -> int:
    print(message, file=sys.stderr)
    return status
