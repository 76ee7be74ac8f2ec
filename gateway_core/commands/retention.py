"""``relaygate logs prune [--dry-run] [--days N]``: the usage log's retention now
(:mod:`gateway_core.admin.retention`; ``serve`` runs the same every
``[retention] interval_seconds``).

It rolls the log up into its hourly totals, then deletes, in batches of
``[retention] batch_rows``, the rows older than ``[retention] usage_days`` (or
``--days``) that are counted in them. ``--dry-run`` writes nothing and says how
many rows a prune would delete and over which span. Archive them first with
``relaygate logs export --until ...``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

import attrs

from ..hookspecs import hookimpl
from .kit import CommandContext, display

if TYPE_CHECKING:
    from ..admin import Admin
    from ..base.retention import PruneReport


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("logs prune", "delete usage rows older than the retention ([retention] usage_days), kept in hourly totals", _configure, _run)


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--dry-run", action="store_true", help="say how many rows a prune would delete, delete none")
    parser.add_argument("--days", type=_days, metavar="N", help="keep N days of rows instead of [retention] usage_days")


def _days(text: str) -> int:
    try:
        days = int(text)
    except ValueError:
        days = 0
    if days < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number of days, 1 or more, not {text!r}")
    return days


def _run(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import retention

    settings = cli.config.retention
    if args.days is not None:
        settings = attrs.evolve(settings, usage_days=args.days)

    async def prune(admin: Admin) -> PruneReport:
        report = await retention.prune(admin, settings, dry_run=args.dry_run)
        if report.pruned:  # rows of billing history gone: said in the audit log, which is never pruned
            after = {"pruned": report.pruned, "created_before": report.cutoff, "usage_days": settings.usage_days}
            await cli.audit(admin, "usage.prune", "usage log", None, after)
        return report

    report = cli.run(prune)
    cli.print_record({"dry_run": args.dry_run, "usage_days": settings.usage_days, **attrs.asdict(report)}, text=describe(report, args.dry_run))
    return 0


def describe(report: PruneReport, dry_run: bool) -> str:
    """The report in a few sentences."""
    if report.cutoff is None:
        return (f"Pruning is off ([retention] usage_days = 0: usage rows are kept for ever). "
                f"Hourly totals count every row up to id {report.rolled_id}.")  # fmt: skip
    before = display("cutoff_at", report.cutoff)
    found = report.found
    if dry_run and found is not None:
        span = f", created from {display('oldest_at', found.oldest)} to {display('newest_at', found.newest)}" if found.rows else ""
        text = f"A prune would delete {found.rows} usage row(s) created before {before}{span} (counted in the hourly totals)."
        if found.waiting:
            text += f" {found.waiting} older row(s) are not rolled up yet: a later prune deletes them."
        return text + " Nothing was deleted (--dry-run)."
    text = f"Deleted {report.pruned} usage row(s) created before {before}; hourly totals count every row up to id {report.rolled_id}."
    if report.busy:
        text += " Another gateway is pruning at the moment: it goes on with the rest."
    return text
