"""What ``relaygate serve`` does to Python's cyclic garbage collector once started:
the start-up objects frozen out of its passes, and a young generation large
enough that requests in flight are not walked again and again."""

import subprocess
import sys

PROBE = """
import gc
before = gc.get_threshold()
from gateway_core.runtime.server import YOUNG_COLLECTION_THRESHOLD, freeze_startup_objects
freeze_startup_objects()
print(before[1:] == gc.get_threshold()[1:], gc.get_threshold()[0] == YOUNG_COLLECTION_THRESHOLD, gc.get_freeze_count() > 1000)
young = []
start = gc.get_count()[0]
for _ in range(5000):
    young.append([])  # container objects: counted by the young generation
print(gc.get_count()[0] - start >= 5000)  # not collected at Python's default of 700
"""


def test_serving_freezes_start_up_and_collects_the_young_generation_less_often():
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "True", "True", "True"]
