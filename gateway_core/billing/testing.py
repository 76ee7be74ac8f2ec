"""A test kit for billing: a priced world to seed, costs computed by hand, and
reads of the ledger, the usage log and the invariants — for the core's tests
and for adapters that want to prove their usage is charged."""

from __future__ import annotations

import asyncio

from ..config import Config
from ..records import PriceRecord

MODEL = "priced-model"
FREE_MODEL = "free-model"
UNPRICED_MODEL = "unpriced-model"
INPUT, OUTPUT, CACHED = 2_500_000, 10_000_000, 1_250_000  # 2.50 / 10.00 / 1.25 USD per Mtok
PRICE = PriceRecord(MODEL, INPUT, OUTPUT, cached_input_micros_per_mtok=CACHED)


def config(tmp_path, load: tuple[str, ...], *, db: str | None = None, **fields) -> Config:
    """A configuration loading ``load`` on the store ``db`` (a SQLite file or a
    ``postgresql://`` URL; default: a SQLite file in ``tmp_path``)."""
    return Config(db_path=db or str(tmp_path / "relaygate.db"), load=load, **fields)


def seed_world(
    seed,
    *,
    channel_type: str,
    base_url: str,
    balance_usd: int = 10,
    quota_micros: int | None = None,
    group: str = "default",
):
    """alice with a balance and a key (``(user_id, key_id, secret)``); channels of
    ``channel_type`` serving a priced, a free and an unpriced model."""
    seed.channel("up", type=channel_type, base_url=base_url, models=[MODEL, FREE_MODEL], groups=[group])
    seed.channel("raw", type=channel_type, base_url=base_url, models=[UNPRICED_MODEL], groups=[group], free_unpriced=False)
    seed.price(MODEL, INPUT, OUTPUT, cached_input_micros_per_mtok=CACHED)
    seed.price(FREE_MODEL, 0, 0, free=True)
    user_id = seed.user("alice", groups=[group], balance_usd=balance_usd)
    key_id, secret = seed.key(user_id, group=group, quota_micros=quota_micros)
    return user_id, key_id, secret


def expected_cost(input_tokens: int, output_tokens: int, cached: int = 0, ratio_ppm: int = 1_000_000) -> int:
    """Computed by hand, independently of the gateway's function: ceil(Σ tokens × price × ratio / 1e12)."""
    numerator = ((input_tokens - cached) * INPUT + cached * CACHED + output_tokens * OUTPUT) * ratio_ppm
    return -(-numerator // 10**12)


def ledger_of(seed, request_id: str) -> list[tuple[str, int]]:
    rows = seed.rows("SELECT kind, amount_micros FROM ledger WHERE request_id = ? ORDER BY id", (request_id,))
    return [(r["kind"], r["amount_micros"]) for r in rows]


def balance_of(seed, user_id: int) -> int:
    return seed.rows("SELECT balance_micros FROM users WHERE id = ?", (user_id,))[0]["balance_micros"]


def available_of(seed, user_id: int) -> int:
    """The balance less what the user's requests in flight reserve."""
    return seed.rows("SELECT balance_micros - held_micros AS available FROM users WHERE id = ?", (user_id,))[0]["available"]


def key_used(seed, key_id: int) -> int:
    return seed.rows("SELECT used_micros FROM api_keys WHERE id = ?", (key_id,))[0]["used_micros"]


def usage_row(seed, request_id: str) -> dict:
    rows = seed.rows("SELECT * FROM usage_logs WHERE request_id = ?", (request_id,))
    assert rows, f"no usage row for {request_id}"
    return rows[0]


def assert_invariants(seed) -> None:
    """``relaygate check`` is clean on the seed's store (either kind)."""
    report = seed.check()
    assert report.ok, report.problems


async def wait_for_row(seed, request_id: str | None = None, timeout: float = 5.0) -> dict:
    """The usage row of ``request_id`` (or the latest), once written."""
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        sql = "SELECT * FROM usage_logs" + (" WHERE request_id = ?" if request_id else "") + " ORDER BY id DESC LIMIT 1"
        rows = seed.rows(sql, (request_id,) if request_id else ())
        if rows:
            return rows[0]
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError("no usage row was written")
        await asyncio.sleep(0.05)

