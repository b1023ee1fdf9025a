# SPDX-License-Identifier: MIT
"""A slow multiprocessing worker behind the GPU's idle time, on the stand-in CUPTI
(test-proctree.sh): the parent is recorded as the CUDA driver would load the collector
(InitializeInjection), then forks one worker ('fork' context, as a DataLoader's) that sleeps SLOW
seconds per item at a known line and puts it on a queue; the parent waits for each item in
q.get() and then launches a burst of 50 kernels through the stand-in CUPTI.  The GPU idles while
the parent waits and the worker sleeps.  Writes the pids and lines (found in this very file, not
from tally) to the JSON file argv[1].  Usage: mp_worker.py OUT.json ITEMS SLOW"""
import ctypes
import json
import multiprocessing as mp
import os
import sys
import time


def work(q, items, slow):
    for i in range(items):
        time.sleep(slow)  # the worker sleeps here
        q.put(i)


def line_of(marker):
    with open(__file__) as f:
        return next(n for n, text in enumerate(f, 1) if marker in text and "line_of" not in text)


if __name__ == "__main__":
    tally = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"], mode=ctypes.RTLD_GLOBAL)
    if tally.InitializeInjection() != 1:
        sys.exit(3)
    cupti = ctypes.CDLL(os.environ["TALLY_CUPTI_PATH"])
    items, slow = int(sys.argv[2]), float(sys.argv[3])
    q = mp.get_context("fork").Queue()
    worker = mp.get_context("fork").Process(target=work, args=(q, items, slow))
    cupti.fakecupti_launch(50)
    worker.start()
    for _ in range(items):
        q.get(timeout=60)  # the parent waits here (a worker that died fails the run)
        cupti.fakecupti_launch(50)
    worker.join()
    json.dump({"file": os.path.abspath(__file__), "parent": os.getpid(), "worker": worker.pid,
               "sleep_line": line_of("the worker sleeps here"),
               "get_line": line_of("the parent waits here")}, open(sys.argv[1], "w"))
