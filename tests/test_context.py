"""Request ids: their shape, their order in time (the indexes keyed by them take
each new one at their right edge) and their uniqueness."""

from __future__ import annotations

import re
import time

from gateway_core.request.context import new_request_id

SHAPE = re.compile(r"req_[0-9a-f]{32}")


def test_a_request_id_is_req_then_the_millisecond_then_80_random_bits():
    before = time.time_ns() // 1_000_000
    request_id = new_request_id()
    after = time.time_ns() // 1_000_000
    assert SHAPE.fullmatch(request_id), request_id
    assert before <= int(request_id[4:16], 16) <= after


def test_ids_made_later_sort_after_and_none_repeats():
    made = []
    for _ in range(20):
        made += [new_request_id() for _ in range(5_000)]
        time.sleep(0.002)
    assert len(set(made)) == len(made)
    stamps = [request_id[:16] for request_id in made]
    assert stamps == sorted(stamps)  # within a millisecond the random part decides, across them the time
    assert len(set(stamps)) >= 20
