"""torch.profiler inside a process tally records: a second CUPTI client.  tally keeps its trace
and refuses the profiler's CUPTI calls; the program must still run to the end.
Usage: torch_profiler.py N"""
import os, sys
import torch

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
x = torch.zeros(1, device="cuda")
with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
    for _ in range(n):
        x.add_(1)
    torch.cuda.synchronize()
assert int(x.item()) == n
gpu_events = sum(1 for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA)
print(f"pid {os.getpid()} adds {n} profiler_gpu_events {gpu_events}", flush=True)
