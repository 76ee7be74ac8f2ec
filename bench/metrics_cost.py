"""The CPU the request path spends on metrics and tracing hooks, per request, alone.

``.venv/bin/python bench/metrics_cost.py`` runs, in one process and many times over,
exactly what one request adds to the path: ``Metrics.started``, the policy
pipeline's refusal bookkeeping (a ``try`` that never fires), the stream counters,
the trace headers of one upstream attempt with tracing off, and
``Metrics.finished`` on a real settled row (one attempt, tokens, a cost), plus the
flush to prometheus-client every 1,000 requests (a scrape every second at 1,000
requests a second: more often than any real setting). It prints the CPU time per
request (the least of ``--rounds`` rounds, and the median), in microseconds.

The end-to-end bench (``bench/overhead.py``) cannot resolve a difference this
small on a shared machine; this one measures the added code itself.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from gateway_core.channel_type import Target  # noqa: E402
from gateway_core.model import Usage  # noqa: E402
from gateway_core.request.observing import Observers  # noqa: E402
from gateway_core.request.outcome import answered  # noqa: E402
from gateway_core.records import ChannelRecord  # noqa: E402
from gateway_core.request.settlement import usage_row  # noqa: E402
from gateway_core.testing import make_context, make_key_record  # noqa: E402
from relaygate_metrics import Metrics  # noqa: E402


def one_request_cost(requests: int, stream: bool) -> float:
    """Seconds of CPU for ``requests`` requests' hooks."""
    metrics = Metrics()
    observers = Observers([metrics])  # as the gateway tells them: tracing off
    channel = ChannelRecord(id=1, name="up", type="openai", base_url="http://127.0.0.1:9", api_keys=("k",),
                            models=("gpt-bench",), model_map={}, groups=("default",))  # fmt: skip
    target = Target(channel=channel, api_key="k", upstream_model="gpt-bench")
    ctx = make_context(key=make_key_record())
    ctx.target = target
    ctx.attempts.append({"channel": "up", "channel_id": 1, "key_index": 0, "latency_ms": 12.5, "status": 200})
    outcome = answered(Usage(input_tokens=21, output_tokens=40), 200, 0, first_token_ms=30.0)
    row = usage_row(ctx, outcome)
    started = time.process_time()
    for n in range(requests):
        observers.started(ctx)
        try:  # the pipeline's refusal bookkeeping
            pass
        except Exception:
            raise
        observers.trace_headers(ctx, target)
        if stream:
            observers.stream_started(ctx)
            observers.stream_ended(ctx)
        observers.finished(ctx, outcome, row)
        if n % 1000 == 999:
            metrics.flush()
    return time.process_time() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    for stream in (False, True):
        rounds = [one_request_cost(args.requests, stream) / args.requests * 1e6 for _ in range(args.rounds)]
        kind = "stream" if stream else "plain"
        print(f"{kind:>6}: {min(rounds):.2f} us per request (median {statistics.median(rounds):.2f}, max {max(rounds):.2f}, {args.rounds} rounds of {args.requests})")


if __name__ == "__main__":
    main()
