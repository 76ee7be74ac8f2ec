"""Redemption codes on both stores: fifty users redeeming one code at once, through
two stores on one database (as two gateway processes or replicas would), credit it
exactly once; wrong, used, expired and disabled codes say so; a code's group opens;
attempts are throttled per user and per address, in memory or shared through Redis."""

from __future__ import annotations

import asyncio
import itertools
import time

import pytest

from gateway_core.admin import Admin
from gateway_core.admin.codes import REDEEM_RULE, RedeemRefused, create_codes, disable_code, list_codes, redeem_code
from gateway_core.ratelimit.signin import InProcessSignInThrottle
from gateway_core.testing.stores import admin_ports
from relaygate_redis.faults import RedisFaults
from relaygate_redis.limiter import connect
from relaygate_redis.signin import RedisSignInThrottle

from .conftest import Books, open_books

VALUE = 2_500_000


async def test_fifty_concurrent_redeemers_of_one_code_credit_it_once(books: Books):
    admin = Admin(admin_ports(books.store)[0])
    other = await open_books(books.dialect, books.target)  # a second process's store
    try:
        admin2 = Admin(admin_ports(other.store)[0])
        users = [await books.seed.user(f"user-{n:02d}") for n in range(50)]
        [(code_id, code)] = await create_codes(admin, count=1, value_micros=VALUE, note="launch")
        results = await asyncio.gather(
            *(redeem_code(admin if n % 2 else admin2, user_id, code) for n, user_id in enumerate(users)), return_exceptions=True
        )
    finally:
        await other.store.close()
        await other.seed.close()
    credited = [r for r in results if not isinstance(r, BaseException)]
    refused = [r for r in results if isinstance(r, RedeemRefused)]
    assert len(credited) == 1 and len(refused) == 49, [r for r in results if not isinstance(r, RedeemRefused)]
    assert {r.reason for r in refused} == {"used"}
    winner = users[results.index(credited[0])]
    assert credited[0].value_micros == VALUE and credited[0].balance_micros == VALUE
    assert [await books.seed.balance(u) for u in users] == [VALUE if u == winner else 0 for u in users]
    rows = await books.seed.fetch("SELECT user_id, kind, amount_micros, note FROM ledger WHERE kind = 'redemption'")
    assert rows == [{"user_id": winner, "kind": "redemption", "amount_micros": VALUE, "note": f"redemption code {code_id}"}]
    [listed] = await list_codes(admin)
    assert (listed.redeemed_by, listed.state(time.time()), listed.note) == ("user-%02d" % users.index(winner), "used", "launch")
    assert code not in str(await books.seed.fetch("SELECT * FROM redemption_codes"))  # only its hash is stored
    assert await books.seed.problems() == []


async def test_each_refusal_says_why_and_a_codes_group_opens(books: Books):
    admin = Admin(admin_ports(books.store)[0])
    user = await books.seed.user("alice")
    await books.seed.execute('INSERT INTO "groups" (name, ratio_ppm, created_at) VALUES (?, ?, ?)', "vip", 1_000_000, 1.0)
    codes = dict(await create_codes(admin, count=3, value_micros=VALUE, group="vip", expires_at=time.time() + 1))
    (first, a), (second, b), (third, c) = sorted(codes.items())
    await disable_code(admin, second)
    done = await redeem_code(admin, user, a.lower().replace("-", " "))  # case and dashes do not matter
    assert (done.group, done.balance_micros) == ("vip", VALUE)
    assert "vip" in {row["group_name"] for row in await books.seed.fetch("SELECT group_name FROM user_groups WHERE user_id = ?", user)}
    reasons = {}
    for label, code in (("used", a), ("disabled", b), ("wrong", "RG-AAAA-BBBB-CCCC-DDDD"), ("short", "hello")):
        with pytest.raises(RedeemRefused) as refused:
            await redeem_code(admin, user, code)
        reasons[label] = refused.value.reason
    await asyncio.sleep(1.1)
    with pytest.raises(RedeemRefused) as expired:
        await redeem_code(admin, user, c)
    assert reasons == {"used": "used", "disabled": "disabled", "wrong": "wrong", "short": "wrong"} and expired.value.reason == "expired"
    assert await books.seed.balance(user) == VALUE and await books.seed.problems() == []


@pytest.fixture(params=["memory", "redis"])
async def throttles(request, redis_prefix):
    """One throttle in this process's memory, or two on Redis (two replicas' clients)."""
    if request.param == "memory":
        yield [InProcessSignInThrottle()]
        return
    clients = [connect("redis://127.0.0.1:6379/0") for _ in range(2)]
    yield [RedisSignInThrottle(client, f"{redis_prefix}:redeem", RedisFaults()) for client in clients]
    for client in clients:
        await client.aclose()


async def test_failed_attempts_are_throttled_per_user_and_per_address(books: Books, throttles):
    """Five wrong codes per user (any address), ten per address (any user); with Redis
    the attempts through one replica count on the other."""
    admin = Admin(admin_ports(books.store)[0])
    alice, bob, carol = await books.seed.user("alice"), await books.seed.user("bob"), await books.seed.user("carol")
    [(_, code)] = await create_codes(admin, count=1, value_micros=VALUE)
    attempts = itertools.cycle(throttles)
    wrong = "RG-AAAA-BBBB-CCCC-DDDD"
    for n in range(REDEEM_RULE.free_failures):
        with pytest.raises(RedeemRefused) as refused:
            await redeem_code(admin, alice, wrong, address=f"10.0.0.{n % 2 + 1}", throttle=next(attempts))
        assert refused.value.reason == "wrong"
    with pytest.raises(RedeemRefused) as refused:  # even the right code, from a new address: alice must wait
        await redeem_code(admin, alice, code, address="10.0.0.9", throttle=next(attempts))
    assert refused.value.reason == "throttled" and 1 <= refused.value.retry_after <= REDEEM_RULE.base_delay
    assert "try again in" in refused.value.message
    for _ in range(REDEEM_RULE.address_free_failures - REDEEM_RULE.free_failures):
        with pytest.raises(RedeemRefused):
            await redeem_code(admin, bob, wrong, address="10.0.0.1", throttle=next(attempts))
    # 10.0.0.1 has now failed three times for alice and five for bob: not yet ten
    with pytest.raises(RedeemRefused) as bob_waits:
        await redeem_code(admin, bob, code, address="10.0.0.3", throttle=next(attempts))
    assert bob_waits.value.reason == "throttled"  # bob's own five
    for _ in range(2):
        with pytest.raises(RedeemRefused):
            await redeem_code(admin, carol, wrong, address="10.0.0.1", throttle=next(attempts))
    with pytest.raises(RedeemRefused) as by_address:  # ten failures from 10.0.0.1: carol waits there
        await redeem_code(admin, carol, code, address="10.0.0.1", throttle=next(attempts))
    assert by_address.value.reason == "throttled"
    done = await redeem_code(admin, carol, code, address="10.0.0.4", throttle=next(attempts))
    assert done.value_micros == VALUE
