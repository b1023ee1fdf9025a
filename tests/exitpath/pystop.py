"""A Python program that stops gracefully, for the test that tally record's forwarded copy of a
signal never adds a delivery the program would not have had untraced.  It starts the "CUDA"
session as pyapp.py does (FAKEAPP_NO_CUDA=1: untraced), counts SIGTERMs in a handler of its own
(installed after CUDA started) and SIGINTs as KeyboardInterrupts (Python's handler, installed
before).  After the first it works 2.5 s more, where torch_signal.py synchronizes and prints: a
second KeyboardInterrupt there would cut that short; here it is counted.  Then it prints
"stopped INT=a TERM=b" and ends normally.  Usage: pystop.py N"""
import ctypes
import os
import signal
import sys
import time

n = int(sys.argv[1])
ints = terms = 0


def on_term(signum, frame):
    global terms
    terms += 1


if not os.environ.get("FAKEAPP_NO_CUDA"):
    assert ctypes.CDLL(os.environ["CUDA_INJECTION64_PATH"]).InitializeInjection() == 1
    ctypes.CDLL(os.environ["TALLY_CUPTI_PATH"]).fakecupti_launch(n)
signal.signal(signal.SIGTERM, on_term)
print(f"launched {n} pid {os.getpid()}", flush=True)
ready = os.environ["FAKEAPP_READY"]
with open(ready + ".tmp", "w") as f:
    f.write(f"{os.getpid()}\n")
os.rename(ready + ".tmp", ready)
try:
    while not terms:
        time.sleep(0.05)
except KeyboardInterrupt:
    ints += 1
deadline = time.monotonic() + 2.5
while time.monotonic() < deadline:
    try:
        sum(range(10000))
    except KeyboardInterrupt:
        ints += 1
print(f"stopped INT={ints} TERM={terms}", flush=True)
