"""os.fork() after CUDA started: the child uses no CUDA, does some CPU work and leaves (by
returning normally, or by os._exit with --os-exit); the parent goes on launching.
Usage: torch_fork.py N [--os-exit]; prints what each side did."""
import os
import sys

import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
x = torch.zeros(1, device="cuda")
for _ in range(n):
    x.add_(1)
torch.cuda.synchronize()
pid = os.fork()
if pid == 0:
    total = sum(range(100000))  # CPU only: CUDA does not work in this child
    print(f"child pid {os.getpid()} sum {total}", flush=True)
    if "--os-exit" in sys.argv:
        os._exit(0)
    sys.exit(0)
_, status = os.waitpid(pid, 0)
for _ in range(n):
    x.add_(1)
torch.cuda.synchronize()
assert int(x.item()) == 2 * n
print(f"pid {os.getpid()} adds {2 * n} child_status {os.waitstatus_to_exitcode(status)}", flush=True)
sys.exit(os.waitstatus_to_exitcode(status))
