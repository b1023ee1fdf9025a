"""A Python program under the stand-in CUPTI, for the exit-path tests: it starts the "CUDA"
session as the driver would (the injection's InitializeInjection), launches N fake kernels, says
it is ready ($FAKEAPP_READY), and loops until ^C.  The KeyboardInterrupt goes uncaught, so Python
unwinds, resets SIGINT to SIG_DFL and kills itself with it: status 130, no atexit of C's runs.
FAKEAPP_NO_CUDA=1 runs it untraced.  Usage: pyapp.py N"""
import ctypes
import os
import sys
import time

n = int(sys.argv[1])
if not os.environ.get("FAKEAPP_NO_CUDA"):
    assert ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).InitializeInjection() == 1
    ctypes.CDLL(os.environ["TALLY_CUPTI_PATH"]).fakecupti_launch(n)
print(f"launched {n} pid {os.getpid()}", flush=True)
ready = os.environ["FAKEAPP_READY"]
with open(ready + ".tmp", "w") as f:
    f.write(f"{os.getpid()}\n")
os.rename(ready + ".tmp", ready)
while True:
    time.sleep(0.05)
