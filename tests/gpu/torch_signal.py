"""A PyTorch loop stopped by a signal, for the group SIGTERM/SIGINT cases.  Each step is an NVTX
range "step" around one x.add_(1) (one elementwise kernel).  It prints "ready" after 2000 steps and
"progress N" every 1000.  Usage: torch_signal.py MODE

  plain     no handler of its own: SIGINT becomes KeyboardInterrupt, caught to print how many steps
            completed ("stopped_by 2 adds N"; the step in flight may or may not have launched),
            then re-raised, so Python ends by SIGINT (130); SIGTERM kills it at once (143).
  graceful  handlers for SIGTERM and SIGINT that stop the loop after the current step; prints the
            exact count, then ends by the signal: SIGTERM reset to SIG_DFL and raised (143), SIGINT
            as an uncaught KeyboardInterrupt (130)."""
import os
import signal
import sys

import torch

mode = sys.argv[1] if len(sys.argv) > 1 else "plain"
stop = 0


def on_stop(signum, frame):
    global stop
    stop = signum


x = torch.zeros(1, device="cuda")
torch.cuda.synchronize()
if mode == "graceful":
    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
print(f"pid {os.getpid()}", flush=True)
n = 0
try:
    while not stop:
        torch.cuda.nvtx.range_push("step")
        x.add_(1)
        torch.cuda.nvtx.range_pop()
        n += 1
        if n % 1000 == 0:
            print("ready" if n == 2000 else f"progress {n}", flush=True)
except KeyboardInterrupt:
    stop = signal.SIGINT
torch.cuda.synchronize()
print(f"stopped_by {int(stop)} adds {n}", flush=True)
if stop == signal.SIGINT:
    raise KeyboardInterrupt
signal.signal(signal.SIGTERM, signal.SIG_DFL)
os.kill(os.getpid(), signal.SIGTERM)
