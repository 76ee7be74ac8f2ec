"""What the SQLite writer spends per request against a usage log that is already large,
with the request ids the gateway makes (ordered in time) and with random ones.

    .venv/bin/python bench/settle_log_size.py [--rows 300000] [--batch 21] [--batches 100] [--ids ordered,random]

For each kind of id: a fresh store (the gateway's migrations, through the CLI: a user
with a balance and a key), ``--rows`` earlier requests recorded with ids of that kind
(their usage rows and ledger captures), then ``--batches`` rounds of what the writer
does for ``--batch`` requests at once: one transaction of reservations
(``wallet.hold``), one of settlements with their usage rows
(``requests.record_request``) — the same functions, on a connection set up as the
writer's. Printed: CPU microseconds per request (this process, the only thread) and the
log pages each pair of transactions wrote. ``--batch 1`` is concurrency 1; about 20 is
what the gateway's writer batches at concurrency 50.

An index keyed by random ids takes each insert on a page of its own; ids ordered in
time all land at the index's right edge, where one batch shares a page.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gateway_core.request.context import new_request_id  # noqa: E402
from gateway_core.records import UsageRow  # noqa: E402
from gateway_core.store import requests, wallet  # noqa: E402
from gateway_core.store.checkpointer import writer_connection  # noqa: E402
from gateway_core.store.connection import connect  # noqa: E402

FRAME_BYTES = 4096 + 24  # a page and its frame header in the log
IDS: dict[str, Callable[[], str]] = {
    "ordered": new_request_id,
    "random": lambda: "req_" + os.urandom(12).hex(),  # the former shape: 96 random bits
}


def seeded(db: Path) -> tuple[int, int]:
    """A user with a balance and a key, made through the CLI; their ids."""
    relaygate = [str(Path(sys.executable).parent / "relaygate"), "--db", str(db)]
    subprocess.run([*relaygate, "migrate"], check=True, capture_output=True)
    subprocess.run([*relaygate, "user", "add", "alice"], check=True, capture_output=True)
    subprocess.run([*relaygate, "wallet", "topup", "alice", "100000"], check=True, capture_output=True)
    key = json.loads(subprocess.run([*relaygate, "--json", "key", "create", "alice", "--name", "k"], check=True, capture_output=True, text=True).stdout)
    conn = connect(str(db))
    try:
        return conn.execute("SELECT id FROM users WHERE name = 'alice'").fetchone()[0], key["id"]
    finally:
        conn.close()


def measure(kind: str, args: argparse.Namespace, db: Path) -> tuple[float, float]:
    """CPU microseconds per request and log pages per batch, for ids of ``kind`` (a new store at ``db``)."""
    make = IDS[kind]
    user_id, key_id = seeded(db)
    conn = writer_connection(lambda: connect(str(db)))()

    def row(request_id: str) -> UsageRow:
        return UsageRow(
            request_id=request_id, started_at=time.time(), protocol="openai", endpoint="chat", client_ip="127.0.0.1",
            user_id=user_id, key_id=key_id, key_name="k", model="m", upstream_model="m", channel_id=1, channel_name="c",
            input_tokens=10, output_tokens=20, cost_micros=3, held_micros=50, duration_ms=1.2, first_token_ms=1.0,
            status=200, end_reason="done", attempts=[{"channel": "c", "channel_id": 1, "key_index": 0, "latency_ms": 0.5, "status": 200}],
        )  # fmt: skip

    def batch() -> None:
        ids = [make() for _ in range(args.batch)]
        conn.execute("BEGIN IMMEDIATE")
        for request_id in ids:
            wallet.hold(conn, user_id, 50, request_id, key_id, "bench")
        conn.execute("COMMIT")
        conn.execute("BEGIN IMMEDIATE")
        for request_id in ids:
            requests.record_request(conn, row(request_id), user_id)
        conn.execute("COMMIT")

    try:
        conn.execute("BEGIN IMMEDIATE")  # the log so far
        for _ in range(args.rows):
            requests.record_request(conn, row(make()), user_id)
        conn.execute("COMMIT")
        for _ in range(20):  # warm-up
            batch()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        started = time.process_time()
        for _ in range(args.batches):
            batch()
        cpu = (time.process_time() - started) / (args.batches * args.batch)
        pages = os.path.getsize(f"{db}-wal") / FRAME_BYTES / args.batches
    finally:
        conn.close()
    return cpu * 1e6, pages


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rows", type=int, default=300_000, help="requests already in the log (default 300,000)")
    parser.add_argument("--batch", type=int, default=21, help="requests per writer transaction (default 21)")
    parser.add_argument("--batches", type=int, default=100, help="measured batches (default 100; keep batches x pages under 10,000)")
    parser.add_argument("--ids", default="ordered,random", help="kinds of id, measured in this order")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="relaygate-settle-log-") as tmp:
        for number, kind in enumerate(args.ids.split(",")):
            cpu, pages = measure(kind, args, Path(tmp) / f"{number}-{kind}.db")
            print(f"{kind:8} ids, {args.rows:,} rows logged, batches of {args.batch}: {cpu:6.1f} us of CPU per request, {pages:5.1f} log pages per batch", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
