"""``relaygate serve`` and ``relaygate init``."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

import attrs

from ..config import SERVERS, redis_url
from ..hookspecs import hookimpl
from .kit import EXIT_ERROR, EXIT_USAGE, CommandContext, CommandError, run_async

if TYPE_CHECKING:
    from ..admin import Admin


@hookimpl
def register_commands(register: Callable[..., None]) -> None:
    register("serve", "run the gateway", _configure_serve, _run_serve)
    register("init", "create the database, an admin, a demo channel and key (idempotent)", _configure_init, _run_init)


def _configure_serve(parser: argparse.ArgumentParser) -> None:
    _address_options(parser)
    parser.add_argument("--workers", type=int, default=os.environ.get("RELAYGATE_WORKERS", "1"), metavar="N", help="worker processes (default: $RELAYGATE_WORKERS, else 1)")
    parser.add_argument(
        "--grace", type=float, metavar="SECONDS",
        help="on SIGTERM or SIGINT, how long in-flight requests and streams may take to finish (default: [gateway] shutdown_grace_seconds, 30)",
    )  # fmt: skip
    parser.add_argument(
        "--server", choices=SERVERS, help="the HTTP server: hypercorn (h11) or uvicorn (httptools, a fifth of the server's CPU "
        "per request) (default: [gateway] server, hypercorn)",
    )  # fmt: skip
    parser.add_argument(
        "--pin-workers", action=argparse.BooleanOptionalAction, default=None,
        help="pin each worker process to a CPU of its own (Linux; default: [gateway] pin_workers, off)",
    )  # fmt: skip
    parser.add_argument(
        "--redis", metavar="URL", help="Redis for the state shared by workers and replicas: limits, channel caps, breakers, invalidations "
        "(default: RELAYGATE_REDIS, [gateway] redis)"
    )


def _run_serve(args: argparse.Namespace, cli: CommandContext) -> int:
    if args.workers < 1:
        raise ValueError("--workers must be at least 1")
    if args.grace is not None and not args.grace >= 0:
        raise ValueError("--grace must be a number of seconds, 0 or more")
    server = args.server or cli.config.server
    pin = cli.config.pin_workers if args.pin_workers is None else args.pin_workers
    if pin:
        from ..runtime.cpu_pinning import supported

        if not supported():
            raise CommandError("--pin-workers needs a platform that can pin a process to a CPU (Linux)", EXIT_USAGE)
    from ..runtime.server import listen_problem, serve

    if server == "uvicorn":
        try:
            from ..runtime import server_uvicorn  # noqa: F401
        except ImportError as exc:  # an optional extra
            raise CommandError(f"--server uvicorn needs the uvicorn extra ({exc.name} is not installed): pip install 'relaygate[uvicorn]'") from None
    from ..store.maintenance import configured_limits

    config = cli.config
    if args.redis:
        config = attrs.evolve(config, redis=redis_url(args.redis, "--redis"))
    problem = listen_problem(args.host, args.port)
    if problem is not None:  # a bad --host or --port, or the port taken: one line, before anything else
        raise CommandError(problem, EXIT_USAGE)
    kind = cli.registry.store_kind(config.db_path)
    problem = run_async(kind.startup_problem(config.db_path, cli.registry.migrations, timeout=config.db_timeout))
    if problem is not None:
        # PostgreSQL unreachable or not migrated (may pass by itself: 1); a SQLite file that is
        # corrupt, cut short, another application's or read-only (fix the --db: 2)
        raise CommandError(problem, EXIT_ERROR if kind.shared else EXIT_USAGE)
    warnings: list[str] = []
    unsealed = _check_sealed_keys(cli)
    if unsealed:
        warnings.append(unsealed)
    shared = cli.registry.shared_state_kind(config)
    problem = run_async(shared.problem(config))
    if problem is not None:  # the shared state (Redis) unreachable: one line, before binding
        raise CommandError(problem)
    if args.workers > 1 and not shared.across_processes:  # each worker would count limits on its own
        limits = run_async(configured_limits(kind, config.db_path, cli.registry.migrations, timeout=config.db_timeout))
        refusal, warning = workers_without_redis(args.workers, limits)
        if refusal:
            raise CommandError(refusal)
        warnings.append(warning)
    grace = config.shutdown_grace_seconds if args.grace is None else args.grace
    return int(
        serve(config, host=args.host, port=args.port, workers=args.workers, grace=grace, server=server, pin_workers=pin, warnings=warnings,
              setups=cli.registry.serve_setups) or 0
    )


def workers_without_redis(workers: int, limits: dict[str, int]) -> tuple[str | None, str]:
    """Several workers and no Redis: the one line refusing to start when keys,
    users or groups have limits (each worker would let through the whole limit),
    and the warning to log otherwise."""
    names = {"key": "API key(s)", "user": "user(s)", "group": "group(s)"}
    limited = [f"{limits[subject]} {name}" for subject, name in names.items() if limits.get(subject)]
    if limited:
        return (
            f"--workers {workers} without Redis would count rate and concurrency limits in each worker, "
            f"multiplying them by {workers} ({', '.join(limited)} have limits): add --redis URL "
            "(or RELAYGATE_REDIS, [gateway] redis), or serve with one worker"
        ), ""
    return None, (
        f"{workers} workers without Redis: each counts channel concurrency caps and circuit breakers on its own, "
        "and limits set on keys, users or groups while serving would be multiplied by the workers; add --redis to share them"
    )


def _check_sealed_keys(cli: CommandContext) -> str | None:
    """Every channel's upstream keys open with the configured secret keys (one line, 2,
    otherwise); the warning to log when some are stored in the clear."""
    from ..admin import channels
    from ..store.sealing import SECRET_ENV, SealingError, default_key_file, sealing_enabled

    async def unsealed(admin: Admin) -> int:
        await channels.list_channels(admin)
        return await admin.store.unsealed_channels()

    try:
        count = cli.run(unsealed)
    except SealingError as exc:
        raise CommandError(str(exc), EXIT_USAGE) from None
    if not count:
        return None
    if not sealing_enabled():
        return (f"{count} channel(s) hold upstream keys in the clear and no secret key is set: set {SECRET_ENV}, "
                f"or create {default_key_file(cli.config.db_path)} with 'relaygate init', then run 'relaygate rotate-secrets'")  # fmt: skip
    return f"{count} channel(s) hold upstream keys stored before sealing was set up: run 'relaygate rotate-secrets' to seal them"


def _configure_init(parser: argparse.ArgumentParser) -> None:
    _address_options(parser)


def _run_init(args: argparse.Namespace, cli: CommandContext) -> int:
    from ..admin import setup

    async def initialize(admin: Admin) -> setup.Setup:
        done = await setup.initialize(admin)
        made = done.result
        created = {"admin": made.admin.name if made.admin_created else None, "demo_channel": made.channel_created, "key_id": made.key_id}
        if made.admin_created or made.channel_created or made.key_id is not None:  # a second run changes nothing
            await cli.audit(admin, "gateway.init", "gateway", None, created)
        return done

    key_file = _ensure_key_file(cli)
    done = cli.run(initialize)
    result, password = done.result, done.password
    admin, channel_created, key_id, secret = result.admin, result.channel_created, result.key_id, result.secret
    channel_count, key_count = result.channels, result.admin_keys
    base = f"http://{_host_for_url(args.host)}:{args.port}"
    if cli.json:
        cli.print_record({
            "gateway_url": f"{base}/v1", "console_url": f"{base}/console/", "admin": admin.name,
            "admin_password": password, "channel_created": channel_created, "key_id": key_id, "key": secret,
            "secret_key_file": str(key_file) if key_file else None,
        })  # fmt: skip
        return 0
    if key_file is not None:
        print(f"Created the secret key that seals upstream keys at rest: {key_file} (back it up apart from the database)")
    if password is None and not channel_created and secret is None:
        print(f"Already initialized: admin user {admin.name!r}, {channel_count} channel(s), {key_count} API key(s) for {admin.name}.")
        print(f"Create another key with: relaygate key create {admin.name} --name NAME")
    if password is not None:
        print(f"Created admin user 'admin'. Console password (shown only now): {password}")
    if channel_created:
        print(f"Created channel 'demo' (type {setup.DEMO_TYPE}) serving the free model {setup.DEMO_MODEL!r}.")
    if secret is not None:
        print(f"Created API key 'demo' for {admin.name}:")
        print(f"    {secret}")
        print("WARNING: this key is shown only now. Store it safely; it cannot be displayed again.")
    print(f"Gateway: {base}/v1")
    print(f"Console: {base}/console/")
    return 0


def _ensure_key_file(cli: CommandContext) -> Path | None:
    """Upstream keys are sealed by default: without ``RELAYGATE_SECRET_KEY`` (or its
    ``_FILE``), ``init`` creates the database's key file (mode 0600); its path when
    created now, ``None`` when one was set or exists."""
    from ..store.sealing import SECRET_ENV, create_key_file, default_key_file

    if os.environ.get(SECRET_ENV) or os.environ.get(SECRET_ENV + "_FILE"):
        return None
    path = default_key_file(cli.config.db_path)
    return path if create_key_file(path) else None


SERVE_ENVIRONMENT = {"host": ("RELAYGATE_HOST", "127.0.0.1"), "port": ("RELAYGATE_PORT", "8080"), "workers": ("RELAYGATE_WORKERS", "1")}


def _address_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default=os.environ.get("RELAYGATE_HOST", "127.0.0.1"), help="address to listen on (default: $RELAYGATE_HOST, else 127.0.0.1)")
    parser.add_argument("--port", type=int, default=os.environ.get("RELAYGATE_PORT", "8080"), help="port (default: $RELAYGATE_PORT, else 8080)")


def _host_for_url(host: str) -> str:
    return f"[{host}]" if ":" in host and not host.startswith("[") else host
