"""The peer gateways of ``make bench-peers``, started beside Relaygate on loopback.

``bench/peers.sh`` installs them into a folder outside the repository (pinned
versions); :func:`start_peers` starts each one on the gateway's CPU, pointed at the
bench's fake upstream, with telemetry and every network fetch at start-up off:

- ``litellm``: the LiteLLM proxy, one worker, a config with one model routed to the
  fake upstream as an OpenAI-compatible API (no database, no master key);
- ``portkey``: Portkey's gateway (Node), told per request by its headers
  (``x-portkey-provider``, ``x-portkey-custom-host``) to call the fake upstream
  (127.0.0.1 is one of its default trusted custom hosts). Its ``start-server.js``
  has no host option: it listens on every interface, but only loopback is used.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from loadgen import MODEL, Target, request_body
from processes import Child, Placement, free_port, wait_http
from seeding import UPSTREAM_KEY

OFFLINE_ENV = {
    "LITELLM_TELEMETRY": "False",
    "LITELLM_LOCAL_MODEL_COST_MAP": "True",  # no download of the price list at start-up
    "LITELLM_LOG": "ERROR",
    "DO_NOT_TRACK": "1",
    "NODE_ENV": "production",
}


def versions(folder: Path) -> dict[str, str]:
    try:
        return json.loads((folder / "versions.json").read_text())
    except (OSError, ValueError):
        raise SystemExit(f"bench: no peers installed in {folder} (run bench/peers.sh)")


def litellm_config(tmp: Path, upstream: str) -> Path:
    path = tmp / "litellm.yaml"
    path.write_text(
        "model_list:\n"
        f"  - model_name: {MODEL}\n"
        "    litellm_params:\n"
        f"      model: openai/{MODEL}\n"
        f"      api_base: {upstream}/v1\n"
        f"      api_key: {UPSTREAM_KEY}\n"
        "litellm_settings:\n"
        "  telemetry: false\n"
        "  drop_params: false\n"
    )
    return path


def start_peers(folder: Path, placement: Placement, tmp: Path, upstream: str, say, args) -> list[tuple[str, Child, Target]]:
    installed = versions(folder)
    env = {**os.environ, **OFFLINE_ENV}
    started: list[tuple[str, Child, Target]] = []
    try:
        port = free_port()
        argv = [str(folder / "litellm/bin/litellm"), "--config", str(litellm_config(tmp, upstream)),
                "--host", "127.0.0.1", "--port", str(port), "--num_workers", "1", "--telemetry", "False"]  # fmt: skip
        say(args, f"peers: starting the LiteLLM proxy {installed.get('litellm')} ...")
        child = Child("litellm", placement.command(placement.server, argv), tmp / "litellm.log", tmp, env)
        started.append(("litellm", child, Target("litellm", f"http://127.0.0.1:{port}", "sk-bench-peer")))
        wait_http(started[-1][2].url, child, timeout=120, method="POST", body=request_body(False), headers=started[-1][2].headers)

        port = free_port()
        node = shutil.which("node") or "node"
        server = folder / "portkey/node_modules/@portkey-ai/gateway/build/start-server.js"
        say(args, f"peers: starting Portkey's gateway {installed.get('portkey')} ...")
        child = Child("portkey", placement.command(placement.server, [node, str(server), f"--port={port}", "--headless"]), tmp / "portkey.log", tmp, env)
        headers = {"x-portkey-provider": "openai", "x-portkey-custom-host": f"{upstream}/v1"}
        started.append(("portkey", child, Target("portkey", f"http://127.0.0.1:{port}", UPSTREAM_KEY, headers)))
        wait_http(started[-1][2].url, child, timeout=60, method="POST", body=request_body(False), headers=started[-1][2].headers)
    except BaseException:
        for _, child, _ in started:
            child.stop()
        raise
    return started
