"""PyTorch workload with known counts: N in-place adds (one elementwise kernel each, as
torch.profiler counts them), each inside an NVTX range pushed with torch.cuda.nvtx unless
--no-nvtx.  Usage: torch_loop.py N [--no-nvtx]; prints what it did and its loop time."""
import os, sys, time
import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
nvtx = "--no-nvtx" not in sys.argv
x = torch.zeros(1, device="cuda")
torch.cuda.synchronize()
t0 = time.perf_counter()
if nvtx:
    for i in range(n):
        torch.cuda.nvtx.range_push("step")
        x.add_(1)
        torch.cuda.nvtx.range_pop()
else:
    for i in range(n):
        x.add_(1)
torch.cuda.synchronize()
t1 = time.perf_counter()
assert int(x.item()) == n
print(f"pid {os.getpid()} adds {n} nvtx_ranges {n if nvtx else 0} loop_ns {(t1 - t0) * 1e9:.0f}", flush=True)
