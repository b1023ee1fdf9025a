# SPDX-License-Identifier: MIT
"""A PyTorch loop that sleeps between bursts of kernels (tests/gpu/sampling.sh): ITERS times,
200 in-place adds and a synchronize, then time.sleep(SLEEP) at a known line.  The GPU idles
while the main thread sleeps there.  Writes the sleep's file and line (from inspect, not from
tally) to the JSON file argv[1].  Usage: sampling_sleep.py OUT.json ITERS SLEEP"""
import inspect
import json
import sys
import time

import torch

iters, pause = int(sys.argv[2]), float(sys.argv[3])
x = torch.zeros(1, device="cuda")
torch.cuda.synchronize()
out = {"file": __file__}
for i in range(iters):
    for _ in range(200):
        x.add_(1)
    torch.cuda.synchronize()
    out["sleep_line"] = inspect.currentframe().f_lineno + 1  # the next line: where the GPU idles
    time.sleep(pause)
assert int(x.item()) == 200 * iters
json.dump(out, open(sys.argv[1], "w"))
print("iters %d sleep_s %.3f" % (iters, pause))
