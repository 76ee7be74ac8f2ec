"""Gateway overhead: the same load straight to a fake upstream and through Relaygate.

``make bench`` runs ``.venv/bin/python bench/overhead.py`` (about 11 minutes). It starts

- ``bench/fast_upstream.py``, a minimal fake OpenAI upstream (raw asyncio on uvloop),
- ``relaygate serve`` on a temporary SQLite store seeded through the CLI with a
  user, a wallet top-up, an API key, and a priced model on each of an ``openai``, an
  ``anthropic`` and a ``gemini`` channel pointing at that upstream, loading only those
  three plugins (``--plugins`` to change): key
  check, policies, billing, usage log and streaming all on, as in production,

pins the gateway to the first CPU and the upstream to the second with ``taskset``
(when there are two; the load generator, this process, shares the second CPU
with the upstream, or takes a third when there is one), all on 127.0.0.1, and
measures:

- ``c1``: non-streaming, concurrency 1, direct and gateway requests alternated
  (the order flips every pair); the added latency is the median of the per-pair
  differences;
- ``c50``: non-streaming, concurrency 50: a direct phase, then a gateway phase;
  added latency = difference of the two phases' percentiles;
- ``stream50``: streaming (``--chunks`` chunks, usage asked), concurrency 50, likewise;
- ``paced50`` and ``paced500``: streams of 20 and 500 content chunks written 5 ms apart
  by the upstream (as a real model streams: one read and one write per token),
  concurrency 50, likewise;
- ``agent10`` and ``agentstream50``: a coding agent's body (``bench/shapes.py``, about
  150 KB: a long system prompt, 30 tools with nested schemas, 45 tool-call round trips
  with source files, some non-ASCII), plain at concurrency 10 and streamed at 50;
- ``ROUTE:BASE`` (``anthropic:paced50``, ``gemini-on-openai:agent10`` ...): a scenario
  above through another client protocol (``bench/wires.py``): the Anthropic Messages
  API (``/v1/messages``) or Gemini's (``:generateContent``, ``:streamGenerateContent``),
  on a channel of its own protocol (``anthropic``, ``gemini``: the same-protocol path)
  or on the ``openai`` channel (``anthropic-on-openai``, ``gemini-on-openai``: converted
  both ways). Direct and floor send the client's protocol to the upstream, which
  answers in the protocol of the path it is called on. By default ``stream50``,
  ``paced50``, ``agent10`` and ``agentstream50`` of each route;
- ``hello``: a hello-world ASGI app on hypercorn + uvloop, raw then behind a
  Starlette router, at concurrency 50 and at concurrency 1 (paired with the
  fake upstream): what the server alone costs.

``--server uvicorn`` serves the gateway (``relaygate serve --server``), the floor
(``bench/bare_proxy.py``) and the hello app on uvicorn instead of hypercorn;
``--server granian`` (hello only, ``pip install granian``) is for comparison.

CPU per request is a process's utime+stime from ``/proc`` (all its threads, and
live child processes with ``--workers``) over a phase, divided by the requests
it served; the gateway's is also split by thread (event loop / others). The
CPU that other processes used during each phase is reported: figures taken on
a busy machine say so. Every response is checked (status 200, a chat completion
body, streams ending with ``data: [DONE]`` after a usage chunk) and every
gateway request must leave exactly one usage-log row; errors are counted and
shown and make the exit status 1.

Profiling: ``--profile FILE`` records the gateway with py-spy during one phase
(``--profile-phase``, default c50; needs ``.venv/bin/pip install py-spy``),
``--perf FILE`` with perf (C and kernel time), and both print where the CPU
goes per request (``bench/profile_report.py``). ``--json`` prints the results
for machines. See ``docs/performance.md``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from arms import Arm, interleaved, rotated
from cpu import Meter
from loadgen import Recorder, Target, new_session, one_request, request_body
from overhead_report import last_exception, log_problems, machine, print_table, target_checks, targets, usage_log
from processes import Child, Placement, free_port, wait_http
from profilers import Both, Perf, PySpy
import pg_column
from scenarios import BASES, DEFAULT_SCENARIOS, ROUTES, SCENARIOS, routed_arms, scenario, scenario_load, scenario_title
from seeding import BENCH_PLUGINS, CHANNEL_MODELS, UPSTREAM_KEY, relaygate_command, seed
from shapes import tiny

HERE = Path(__file__).resolve().parent

# --- before and beside the scenarios (scenarios.py) ---------------------------------------


async def smoke(target: Target, child: Child, model: str = CHANNEL_MODELS["openai"]) -> None:
    """One plain and one streaming request before measuring: fail fast, with the reason."""
    async with new_session(1) as session:
        for stream in (False, True):
            rec = Recorder()
            await one_request(session, target, target.wire.request_body(request_body(stream), model), stream, rec)
            if rec.errors:
                error = next(iter(rec.errors))
                raise SystemExit(
                    f"bench: the {'streaming' if stream else 'plain'} {target.wire.name} smoke request through the gateway ({model}) failed: {error}\n"
                    f"gateway log:\n{last_exception(child.log_path) or child.tail()}"
                )


async def hello_floor(name: str, argv: list[str], placement: Placement, tmp: Path, args, pids: dict[str, int], direct: Target) -> dict[str, Any]:
    """A hello-world ASGI app on hypercorn: what the server alone costs (scenario ``hello``)."""
    port = free_port()
    child = Child(name, placement.command(placement.server, [*argv, "--port", str(port)]), tmp / f"{name}.log", HERE)
    try:
        url = f"http://127.0.0.1:{port}"
        wait_http(url + "/v1/chat/completions", child, method="POST", body=request_body(False))
        watched = {**pids, "server": child.pid}
        arms = [Arm("direct", direct, "upstream"), Arm("server", Target(name, url, "unused"), "server")]
        at50 = await interleaved(arms, args.concurrency, tiny(False), args, watched)
        at1 = await rotated(arms, tiny(False), args, watched, min(args.c1_duration, 4.0))
        s, c1 = at50["server"], at1["server"]
        return {
            "scenario": "hello", "title": name, "concurrency": args.concurrency, "stream": False, "server": s, "cpu": s["cpu"],
            "c1_added_p50_ms": c1["added_p50_ms"], "c1_added_p99_ms": c1["added_p99_ms"],
            "c1_p50_ms": c1["p50_ms"], "c1_cpu_ms_per_req": c1["cpu_ms_per_req"],
        }  # fmt: skip
    finally:
        child.stop()


def move_other_threads(pid: int, core: int) -> int:
    """Pin every thread of ``pid`` but the main one (the event loop) to ``core``."""
    moved = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        if int(tid) != pid:
            try:
                os.sched_setaffinity(int(tid), {core})
                moved += 1
            except OSError:
                pass
    return moved


# --- main ------------------------------------------------------------------------------


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="Relaygate gateway overhead benchmark (see the module docstring).")
    p.add_argument("--duration", type=float, default=6.0, help="measured seconds per arm at concurrency 50, split in --rounds slices (default 6)")
    p.add_argument("--rounds", type=int, default=2, help="slices per arm at concurrency 50, the arms' order reversed every slice (default 2)")
    p.add_argument("--c1-duration", type=float, default=6.0, help="seconds of turn-taking requests at concurrency 1, each of c1 and stream1 (default 6)")
    p.add_argument("--requests", type=int, help="requests per arm and phase (rounds at c1) instead of a duration")
    p.add_argument("--idle", type=float, default=2.0, help="seconds to measure the idle gateway's CPU before the load (default 2)")
    p.add_argument("--warmup", type=float, default=1.0, help="seconds of unmeasured load before each phase (default 1)")
    p.add_argument("--concurrency", type=int, default=50, help="concurrency of the c50, stream50 and floor phases (default 50)")
    p.add_argument("--chunks", type=int, default=20, help="data: chunks per upstream stream before [DONE] (default 20)")
    p.add_argument("--scenarios", default=",".join(DEFAULT_SCENARIOS),
                   help=f"comma-separated subset of {','.join(BASES)},hello, each of the bases also through another client protocol "
                        f"as ROUTE:BASE with ROUTE one of {','.join(ROUTES)} (default {','.join(DEFAULT_SCENARIOS)})")
    p.add_argument("--peers", metavar="DIR", help="also run the load through the peer gateways installed in DIR by bench/peers.sh")
    p.add_argument("--soak", type=float, metavar="SECONDS", help="instead of the scenarios: mixed load through the gateway for SECONDS, "
                   "reporting its RSS and CPU per request over time (bench/soak.py)")
    p.add_argument("--soak-concurrency", type=int, default=8, help="concurrency of the soak load (default 8)")
    p.add_argument("--plugins", metavar="FILE", help='plugins.toml for the gateway (default: one with load = ["openai", "anthropic", "gemini"])')
    p.add_argument("--free", action="store_true", help="make the model free (no balance reservation or settlement per request)")
    p.add_argument("--workers", type=int, default=1, help="relaygate serve --workers (default 1)")
    p.add_argument("--server", default="hypercorn", choices=("hypercorn", "uvicorn", "granian"),
                   help="relaygate serve --server, and the same server under the floor and the hello app (default hypercorn; "
                        "granian: the hello scenario only, for comparison)")
    p.add_argument("--floor-server", default=None, choices=("hypercorn", "uvicorn"),
                   help="the floor's server when it should differ from --server (e.g. the gateway on uvicorn "
                        "against the floor on hypercorn, where the targets were set)")
    p.add_argument("--no-pin", action="store_true", help="do not pin processes to CPUs")
    p.add_argument("--json", action="store_true", help="print the results as JSON (and nothing else on stdout)")
    p.add_argument("--profile", metavar="FILE", help="py-spy the gateway during the --profile-phase gateway phase into FILE (raw collapsed stacks)")
    p.add_argument("--profile-phase", choices=SCENARIOS[:-1], default="c50", help="the phase --profile records (default c50)")
    p.add_argument("--profile-rate", type=int, default=250, help="py-spy samples per second (default 250)")
    p.add_argument("--profile-native", action="store_true", help="py-spy --native: C frames too; pauses the gateway at each sample and counts waiting threads, so only for a look, not figures")
    p.add_argument("--profile-split-threads", action="store_true",
                   help="while profiling, move the gateway's threads other than the event loop to the upstream's CPU, "
                        "so that py-spy does not count the event loop as busy while it waits for its CPU")  # fmt: skip
    p.add_argument("--perf", metavar="FILE", help="perf record the gateway during the --profile-phase into FILE (C and kernel time)")
    p.add_argument("--postgres", metavar="URL", help="serve on PostgreSQL: a fresh database on this server (postgresql://user@host/db), "
                   "filled from the seeded SQLite store by relaygate copy-store, dropped after; its CPU is reported too")
    p.add_argument("--limits", action="store_true", help="give the key rate and concurrency limits and the channel a concurrency cap "
                   "(too high to be reached): every request counts them")
    p.add_argument("--redis", metavar="URL", help="serve with --redis URL (implies --limits): limits, the channel's cap and breakers "
                   "shared through Redis, under a key prefix of the run's own; Redis's CPU is reported too")
    p.add_argument("--keep", action="store_true", help="keep the temporary directory (database, logs)")
    args = p.parse_args(argv)
    args.limits = args.limits or bool(args.redis)
    args.scenarios = [s.strip() for s in args.scenarios.split(",") if s.strip()]
    unknown = set(args.scenarios) - set(SCENARIOS)
    if unknown:
        p.error(f"unknown scenario(s): {', '.join(sorted(unknown))}")
    if args.server == "granian" and (set(args.scenarios) != {"hello"} or args.soak):
        p.error("--server granian runs the hello scenario only (relaygate serve does not offer granian): add --scenarios hello")
    if (args.profile or args.perf) and args.profile_phase not in args.scenarios:
        p.error(f"--profile profiles the {args.profile_phase} gateway phase: include {args.profile_phase} in --scenarios")
    return args


async def redis_pid(url: str) -> int:
    """The process id of the Redis server at ``url`` (its CPU is measured like the gateway's)."""
    import redis.asyncio as aioredis

    client = aioredis.Redis.from_url(url)
    try:
        return int((await client.info("server"))["process_id"])
    finally:
        await client.aclose()


def say(args, text: str) -> None:
    print(text, file=sys.stderr if args.json else sys.stdout, flush=True)


async def run(args: argparse.Namespace) -> dict[str, Any]:
    placement = Placement(not args.no_pin)
    info = machine()
    info["cpus_available"] = len(placement.available)
    if placement.loadgen is not None:
        os.sched_setaffinity(0, {placement.loadgen})
    tmp = Path(tempfile.mkdtemp(prefix="relaygate-bench-"))
    db = tmp / "relaygate.db"
    children: list[Child] = []
    result: dict[str, Any] = {
        "machine": info,
        "placement": placement.describe(),
        "config": {k: v for k, v in vars(args).items() if k not in ("json",)},
        "scenarios": [],
    }
    try:
        up_port = free_port()
        upstream = Child("fake upstream", placement.command(placement.upstream, [
            sys.executable, str(HERE / "fast_upstream.py"), "--port", str(up_port), "--chunks", str(args.chunks),
        ]), tmp / "upstream.log", HERE)  # fmt: skip
        children.append(upstream)
        up_url = f"http://127.0.0.1:{up_port}"
        wait_http(up_url + "/v1/chat/completions", upstream, method="POST", body=request_body(False))
        pids = {"upstream": upstream.pid}
        direct = Target("direct", up_url, UPSTREAM_KEY)
        if set(args.scenarios) - {"hello"} or args.soak:
            say(args, f"seeding {db} through the relaygate CLI ...")
            if args.plugins:
                plugins = Path(args.plugins).resolve()
            else:
                plugins = tmp / "plugins.toml"
                prefix = f'[gateway]\nredis_prefix = "bench-{os.getpid()}"\n' if args.redis else ""
                plugins.write_text(BENCH_PLUGINS + prefix)
            key = seed(db, tmp, plugins, up_url, args.free, args.limits)
            served_db = str(db)
            if args.postgres:
                served_db = result["postgres"] = await pg_column.fresh_database(args.postgres)
                say(args, pg_column.copy_store(relaygate_command(), db, served_db, plugins))
            gw_port = free_port()
            argv = [*relaygate_command(), "serve", "--db", served_db, "--plugins", str(plugins), "--host", "127.0.0.1", "--port", str(gw_port)]
            if args.workers > 1:
                argv += ["--workers", str(args.workers)]
            if args.server != "hypercorn":
                argv += ["--server", args.server]
            if args.redis:
                argv += ["--redis", args.redis]
            gateway = Child("gateway", placement.command(placement.server, argv), tmp / "gateway.log", tmp)
            children.append(gateway)
            gw_url = f"http://127.0.0.1:{gw_port}"
            wait_http(gw_url + "/healthz", gateway)
            target = Target("gateway", gw_url, key)
            await smoke(target, gateway)
            pids = {"upstream": upstream.pid, "gateway": gateway.pid}
            if args.redis:
                pids["redis"] = await redis_pid(args.redis)
            if args.postgres:
                pids["postgres"] = await pg_column.postmaster_pid(served_db)
                if placement.upstream is not None:  # off the gateway's CPU, with the upstream and the load generator
                    say(args, f"postgres: {pg_column.pin(pids['postgres'], placement.upstream)} process(es) pinned to CPU {placement.upstream}")
            with Meter(pids) as idle:
                await asyncio.sleep(args.idle)
            result["gateway_idle_cpu_ms_per_s"] = round(idle.cpu["gateway"] * 1000 / idle.elapsed, 3)
            routed: dict[str, list[Arm]] = {}  # the arms of the routed scenarios, by route
            if args.soak:
                from soak import soak

                result["soak"] = await soak(target, gateway.pid, args, say)
            else:
                arms = [Arm("direct", direct, "upstream")]
                fl_port = free_port()
                floor_child = Child("bare proxy", placement.command(placement.server, [
                    sys.executable, str(HERE / "bare_proxy.py"), "--port", str(fl_port), "--upstream", up_url, "--server", args.floor_server or args.server,
                ]), tmp / "bare_proxy.log", HERE)  # fmt: skip
                children.append(floor_child)
                floor_url = f"http://127.0.0.1:{fl_port}"
                floor_target = Target("floor", floor_url, UPSTREAM_KEY)
                wait_http(floor_target.url, floor_child, method="POST", body=request_body(False))
                pids["floor"] = floor_child.pid
                arms.append(Arm("floor", floor_target, "floor"))
                arms.append(Arm("gateway", target, "gateway"))
                if args.peers:
                    from peers import start_peers, versions

                    result["peer_versions"] = versions(Path(args.peers))

                    for name, child, peer_target in start_peers(Path(args.peers), placement, tmp, up_url, say, args):
                        children.append(child)
                        pids[name] = child.pid
                        arms.append(Arm(name, peer_target, name))
                    result["peers"] = {arm.name: arm.target.url for arm in arms[3:]}

                def profiler(name: str) -> Both | None:
                    if not (args.profile or args.perf) or args.profile_phase != name:
                        return None
                    if args.profile_split_threads and placement.upstream is not None:
                        moved = move_other_threads(gateway.pid, placement.upstream)
                        say(args, f"profile: {moved} gateway thread(s) besides the event loop moved to CPU {placement.upstream}")
                    return Both(
                        PySpy(gateway.pid, Path(args.profile), args.profile_rate, placement.upstream, args.workers > 1, placement, args.profile_native)
                        if args.profile else None,
                        Perf(gateway.pid, Path(args.perf), placement.upstream, placement) if args.perf else None,
                    )

                urls = {"direct": up_url, "floor": floor_url, "gateway": gw_url}
                routed.update({route: routed_arms(route, urls, key) for route in ROUTES if any(n.startswith(route + ":") for n in args.scenarios)})
                for route, route_arms in routed.items():
                    await smoke(route_arms[-1].target, gateway, CHANNEL_MODELS[ROUTES[route][1]])
                for name in SCENARIOS:
                    if name not in args.scenarios or name == "hello":
                        continue
                    route = name.rpartition(":")[0]
                    these = routed[route] if route else arms
                    say(args, f"{name}: {scenario_title(name, args)}: {', '.join(arm.name for arm in these)} ...")
                    shape, concurrency = scenario_load(name, args)
                    if concurrency == 1:
                        got = await rotated(these, shape, args, pids, args.c1_duration, profiler(name))
                    else:
                        got = await interleaved(these, concurrency, shape, args, pids, profiler(name))
                    result["scenarios"].append(scenario(name, got, args))
            gateway_sent = target.sent + sum(route_arms[-1].target.sent for route_arms in routed.values())
            still_up = gateway.alive()
            status = gateway.stop()
            children.remove(gateway)
            if not still_up:
                result["gateway_log_problems"] = [f"the gateway died during the run (status {status})"]
            elif status not in (0, None):
                result["gateway_log_problems"] = [f"the gateway exited with status {status} on SIGTERM"]
            result.setdefault("gateway_log_problems", []).extend(log_problems(tmp / "gateway.log"))
            result["usage_log"] = await pg_column.usage_log(served_db, gateway_sent) if args.postgres else usage_log(db, gateway_sent)
        if "hello" in args.scenarios and not args.soak:
            say(args, f"hello: hello-world ASGI on {args.server} + uvloop, concurrency {args.concurrency} ...")
            hello = [sys.executable, str(HERE / "hello_app.py"), "--server", args.server]
            pids = {"upstream": upstream.pid}
            result["scenarios"].append(await hello_floor(f"{args.server} hello", hello, placement, tmp, args, pids, direct))
            result["scenarios"].append(await hello_floor("+ starlette", [*hello, "--starlette"], placement, tmp, args, pids, direct))
    finally:
        for child in reversed(children):
            child.stop()
        if "postgres" in result and not args.keep:
            await pg_column.drop_database(args.postgres, result["postgres"])
        if args.keep:
            say(args, f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    result["target_checks"] = target_checks(result)
    result["targets"] = targets(result)
    return result


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        import uvloop

        result = uvloop.run(run(args))
    except ImportError:
        result = asyncio.run(run(args))
    if args.json:
        print(json.dumps(result, indent=2))
    elif args.soak:
        from soak import print_soak

        print_soak(result)
        print_table_tail = result.get("usage_log")
        if print_table_tail:
            print(f"usage log: {print_table_tail['rows']} rows for {print_table_tail['gateway_requests']} gateway requests sent")
    else:
        print_table(result)
    by = {s["scenario"]: s for s in result["scenarios"]}
    if args.profile:
        from profile_report import report

        cpu = by[args.profile_phase]["cpu"]
        text = report(Path(args.profile), cpu["gateway_cpu_ms_per_req"], thread_cpu=cpu.get("gateway_thread_cpu_ms_per_req"))
        print(text, file=sys.stderr if args.json else sys.stdout)
    if args.perf:
        from profile_report import perf_report

        text = perf_report(Path(args.perf), by[args.profile_phase]["cpu"]["gateway_cpu_ms_per_req"])
        print(text, file=sys.stderr if args.json else sys.stdout)
    ours = ("direct", "floor", "gateway", "server")  # a peer's errors are shown, not ours to fail on
    errors = sum(v["errors"] for s in result["scenarios"] for k, v in s.get("arms", {"server": s.get("server")}).items() if v and k in ours)
    errors += (result.get("soak") or {}).get("errors", 0)
    usage = result.get("usage_log")
    return 1 if errors or (usage and not usage.get("complete")) else 0


if __name__ == "__main__":
    sys.exit(main())
