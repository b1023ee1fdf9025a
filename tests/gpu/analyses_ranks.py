"""Ranks of one job for tally's rank_steps and diagnosis (tests/gpu/analyses.sh): under torchrun,
each rank runs steps, each an NVTX range "step" around K matrix products on its GPU and, on the
rank given by --sleep-rank, a sleep of --sleep-ms; after the range, all ranks meet at a barrier,
so that the others wait for the sleeper outside their steps.  With one GPU the ranks share it
(cuda:LOCAL_RANK % device_count); the process group's backend is --backend (gloo works with two
ranks on one GPU; NCCL refuses two ranks on one device).  --probe: one all_reduce on the GPU,
then exit (analyses.sh tries NCCL with it first).  Each rank prints what it did."""
import argparse
import os
import time

import torch
import torch.distributed as dist

ap = argparse.ArgumentParser()
ap.add_argument("--steps", type=int, default=20)
ap.add_argument("--matmuls", type=int, default=8)
ap.add_argument("--sleep-rank", type=int, default=1)
ap.add_argument("--sleep-ms", type=float, default=50)
ap.add_argument("--backend", default="gloo")
ap.add_argument("--probe", action="store_true")
o = ap.parse_args()

rank, local = int(os.environ["RANK"]), int(os.environ["LOCAL_RANK"])
torch.cuda.set_device(local % torch.cuda.device_count())
dist.init_process_group(o.backend)
if o.probe:
    t = torch.ones(16, device="cuda")
    dist.all_reduce(t)
    torch.cuda.synchronize()
    print(f"rank {rank} probe {o.backend} ok sum={t[0].item()}", flush=True)
    dist.destroy_process_group()
    raise SystemExit(0)
a = torch.randn(2048, 2048, device="cuda")
b = torch.randn(2048, 2048, device="cuda")
torch.cuda.synchronize()
dist.barrier()
durations = []
for step in range(o.steps):
    t0 = time.perf_counter()
    torch.cuda.nvtx.range_push("step")
    for _ in range(o.matmuls):
        c = a @ b
    torch.cuda.synchronize()
    if rank == o.sleep_rank:
        time.sleep(o.sleep_ms / 1000)
    torch.cuda.nvtx.range_pop()
    durations.append(time.perf_counter() - t0)
    dist.barrier()
dist.destroy_process_group()
durations.sort()
print(f"rank {rank} pid {os.getpid()} steps {o.steps} backend {o.backend} "
      f"median_step_ms {1000 * durations[len(durations) // 2]:.3f}", flush=True)
