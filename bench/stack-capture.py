# SPDX-License-Identifier: MIT
"""CPU cost of a Python stack per launch: capture (the walk through CPython's C API) and interning.

Run by bench/stack-capture.sh under `tally record`, with and without --python-stacks.  It loads
the collector as the CUDA driver does and "launches" through the stand-in CUPTI (which fires the
launch API callback, as CUDA does) from DEPTH nested Python frames, N times in a loop (the loop's
launches share one stack, as a training loop's do), and prints ns per launch for each depth.
"""
import ctypes
import os
import sys
import time

tally = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"], mode=ctypes.RTLD_GLOBAL)
if tally.InitializeInjection() != 1:
    sys.exit(3)
launch = ctypes.PyDLL(os.environ["TALLY_CUPTI_PATH"]).fakecupti_launch
N = int(sys.argv[1]) if len(sys.argv) > 1 else 100000


def loop(n):
    t0 = time.perf_counter_ns()
    for _ in range(n):
        launch(1)
    return time.perf_counter_ns() - t0


def nested(depth, n):
    if depth > 1:
        return nested(depth - 1, n)
    return loop(n)


for depth in (1, 10, 30):
    nested(depth, N // 10)  # warm up: the first launch interns the stack
    print("depth %d ns_per_launch %.1f" % (depth, nested(depth, N) / N))
