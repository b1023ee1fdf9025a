# SPDX-License-Identifier: MIT
"""A Python program whose host activity is known by construction (test-sampling.sh).

The main thread computes on the CPU for BUSY seconds in busy(), then sleeps SLEEP seconds at a
known line; a second thread, "napper", sleeps NAP seconds at another known line the whole time.
Each phase's line (from inspect, not from tally) and its start and end on CLOCK_REALTIME (the
trace's record clock) are written to the JSON file argv[1].
"""
import inspect
import json
import sys
import threading
import time

BUSY, SLEEP, NAP = float(sys.argv[2]), float(sys.argv[3]), float(sys.argv[4])
out = {"file": __file__}


def here():
    return inspect.currentframe().f_back.f_lineno + 1


def busy(seconds):
    t0 = time.time()
    x = 0
    out["busy_lines"] = [here(), here() + 1]
    while time.time() - t0 < seconds:
        x += 1
    return x


def napper():
    out["nap_line"] = here()
    time.sleep(NAP)


t = threading.Thread(target=napper, name="napper")
t.start()
out["busy_start"] = time.time_ns()
busy(BUSY)
out["busy_end"] = out["sleep_start"] = time.time_ns()
out["sleep_line"] = here()
time.sleep(SLEEP)
out["sleep_end"] = time.time_ns()
t.join()
json.dump(out, open(sys.argv[1], "w"))
