"""``relaygate rotate-secrets``: seal every upstream key under the current secret key.

``RELAYGATE_SECRET_KEY`` (or ``…_FILE``) is the key to seal with;
``RELAYGATE_SECRET_KEY_PREVIOUS`` (or ``…_PREVIOUS_FILE``) the one the keys are
sealed with now, if any. Plain keys (stored before sealing was set up) are sealed
too. See :mod:`gateway_core.store.sealing`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

from ..hookspecs import hookimpl
from .kit import EXIT_USAGE, CommandContext, CommandError, no_arguments

if TYPE_CHECKING:
    from ..admin import Admin


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register(
        "rotate-secrets", "seal every channel's upstream keys under RELAYGATE_SECRET_KEY (opening old ones with …_PREVIOUS)",
        no_arguments, _run_rotate,
    )  # fmt: skip


def _run_rotate(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import channels

    from ..store.sealing import SECRET_ENV, SealingError, sealing_enabled

    try:
        if not sealing_enabled():
            raise CommandError(f"set {SECRET_ENV} (or {SECRET_ENV}_FILE) to the secret key to seal the upstream keys with", EXIT_USAGE)
        async def reseal(admin: Admin) -> int:
            count = await channels.reseal_keys(admin)
            await cli.audit(admin, "channel.reseal", "channels", None, {"channels": count})  # which keys: never
            return count

        count = cli.run(reseal)
    except SealingError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None
    if cli.json:
        cli.print_record({"channels": count})
    else:
        print(f"sealed the upstream keys of {count} channel(s) under the current secret key")
    return 0
