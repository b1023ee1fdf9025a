# SPDX-License-Identifier: MIT
"""GPU idle gaps made by a sleep, on the stand-in CUPTI (test-sampling.sh): the collector is
loaded as the CUDA driver does (InitializeInjection), then ITERS times a burst of 50 launches
through the stand-in CUPTI and a time.sleep(SLEEP) at a known line, written (from inspect, not
from tally) to the JSON file argv[1].  Usage: sampling_gaps.py OUT.json ITERS SLEEP"""
import ctypes
import inspect
import json
import os
import sys
import time

tally = ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"], mode=ctypes.RTLD_GLOBAL)
if tally.InitializeInjection() != 1:
    sys.exit(3)
cupti = ctypes.CDLL(os.environ["TALLY_CUPTI_PATH"])
iters, pause = int(sys.argv[2]), float(sys.argv[3])
out = {"file": __file__}
for i in range(iters):
    cupti.fakecupti_launch(50)
    out["sleep_line"] = inspect.currentframe().f_lineno + 1
    time.sleep(pause)
cupti.fakecupti_launch(50)
json.dump(out, open(sys.argv[1], "w"))
