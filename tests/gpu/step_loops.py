# SPDX-License-Identifier: MIT
"""Training loops built from PyTorch's own modules, each limited by one thing by construction, for
the per-step diagnosis (tests/gpu/step-loops.sh).  Every loop: an nn.TransformerEncoder, AdamW,
bf16 autocast, an NVTX range "step N" around each step, STEPS steps after a start-up that moves the
model to the GPU and starts the DataLoader.

  data    a DataLoader with 2 fork workers and pin_memory whose __getitem__ spends CPU_MS of CPU
          per sample (WORK_LINE): the launching thread waits for the next batch
  launch  a tiny model in many layers: hundreds of kernels of a few microseconds per step, the
          host's Python and ATen launch path is the limit (data made on the GPU up front)
  sync    loss.item() each step (SYNC_LINE), then HOST_MS of Python work on the CPU (HOST_LINE)
          before the next launch
  gpu     a large model, data made on the GPU up front: the GPU is busy nearly the whole step
  mixed   the sync loop's host work at half length beside the data loop's workers at half cost

Usage: step_loops.py KIND OUT.json [--steps N] [--profile]
Writes OUT.json with the construction's ground truth, measured by the program itself (never by
tally): each step's wall time (perf_counter around the step), the GPU time of each step's kernels
(CUDA events around the step's work on the stream, minus nothing), the host time the construction
spends in its known place (the data wait, the host work after the sync), the file and lines of
those places (from inspect), and the pids of the workers."""
import argparse
import inspect
import json
import os
import time

import torch
import torch.nn as nn
from torch.utils.data import DataLoader, Dataset

ap = argparse.ArgumentParser()
ap.add_argument("kind", choices=["data", "launch", "sync", "gpu", "mixed"])
ap.add_argument("out")
ap.add_argument("--steps", type=int, default=40)
ap.add_argument("--cpu-ms", type=float, default=5.0, help="data: worker CPU per sample")
ap.add_argument("--host-ms", type=float, default=15.0, help="sync: host work after .item()")
ap.add_argument("--profile", action="store_true",
                help="run untraced by tally under torch.profiler: the GPU's kernel time per step")
o = ap.parse_args()
if o.kind == "mixed":
    o.cpu_ms, o.host_ms = o.cpu_ms / 2, o.host_ms / 2

WORK_LINE = None  # set below from inspect: the worker's CPU loop
HOST_LINE = None  # the host work after the sync
SYNC_LINE = None  # the synchronizing call
LAUNCH_LINES = []  # the lines that launch the step's work: the forward, the backward, the step


def burn(ms):
    """Spend ms of this thread's CPU time (a pure-Python loop: the samples land on this line)."""
    end = time.thread_time() + ms / 1000.0
    x = 0
    while time.thread_time() < end:
        x += 1  # BURN_LINE
    return x


BURN_LINE = inspect.getsourcelines(burn)[1] + 4


class Samples(Dataset):
    def __init__(self, n, seq, dim, cpu_ms):
        self.n, self.seq, self.dim, self.cpu_ms = n, seq, dim, cpu_ms

    def __len__(self):
        return self.n

    def __getitem__(self, i):
        burn(self.cpu_ms)  # in the worker process: this is the data-bound loop's cause
        return torch.full((self.seq, self.dim), float(i % 7) / 7)


WORK_LINE = inspect.getsourcelines(Samples.__getitem__)[1] + 1

SHAPES = {  # kind: d_model, heads, layers, ff, seq, batch
    "data": (1024, 16, 4, 4096, 256, 16),
    "mixed": (1024, 16, 4, 4096, 256, 16),
    "sync": (1024, 16, 4, 4096, 256, 16),
    "launch": (32, 2, 24, 64, 8, 2),
    "gpu": (2048, 16, 12, 8192, 512, 32),
}
d, heads, layers, ff, seq, batch = SHAPES[o.kind]
t_start = time.perf_counter()
torch.manual_seed(0)
layer = nn.TransformerEncoderLayer(d, heads, ff, batch_first=True)
model = nn.TransformerEncoder(layer, layers, enable_nested_tensor=False).cuda()
opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
uses_loader = o.kind in ("data", "mixed")
if uses_loader:
    ds = Samples(o.steps * batch + 4 * batch, seq, d, o.cpu_ms)
    loader = iter(DataLoader(ds, batch_size=batch, num_workers=2, pin_memory=True))
    assert torch.multiprocessing.get_start_method() == "fork"
else:
    fixed = torch.randn(batch, seq, d, device="cuda")

stream = torch.cuda.current_stream()
steps = []
worker_pids = []


def one_step(i):
    global SYNC_LINE, HOST_LINE, LAUNCH_LINES
    rec = {"step": i}
    t0 = time.perf_counter()
    if uses_loader:
        x = next(loader)
        rec["data_wait_s"] = time.perf_counter() - t0
        x = x.cuda(non_blocking=True)
    else:
        x = fixed
    e0, e1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    e0.record(stream)
    here = inspect.currentframe().f_lineno
    LAUNCH_LINES = [here + 3, here + 5, here + 6]  # the forward, the backward, the optimizer
    with torch.autocast("cuda", dtype=torch.bfloat16):
        loss = model(x).float().pow(2).mean()
    opt.zero_grad(set_to_none=True)
    loss.backward()
    opt.step()
    e1.record(stream)
    if o.kind in ("sync", "mixed"):
        SYNC_LINE = inspect.currentframe().f_lineno + 1
        v = loss.item()  # the synchronizing call
        h0 = time.perf_counter()
        HOST_LINE = inspect.currentframe().f_lineno + 1
        burn(o.host_ms)  # host work after the sync, before the next launch
        rec["host_after_sync_s"] = time.perf_counter() - h0
        rec["loss"] = v
    rec["events"] = (e0, e1)
    rec["wall_s"] = time.perf_counter() - t0
    return rec


# start-up ends with the first step's work in flight; warm the allocator and the kernels' choice
torch.cuda.synchronize()
prof = None
if o.profile:
    from torch.profiler import ProfilerActivity, profile

    prof = profile(activities=[ProfilerActivity.CUDA])
    prof.__enter__()
t_first = time.perf_counter()
for i in range(o.steps):
    torch.cuda.nvtx.range_push(f"step {i}")
    steps.append(one_step(i))
    torch.cuda.nvtx.range_pop()
torch.cuda.synchronize()
t_end = time.perf_counter()
kernel_s_per_step = None
if prof is not None:
    prof.__exit__(None, None, None)
    total_us = sum(e.self_device_time_total for e in prof.key_averages())
    kernel_s_per_step = total_us / 1e6 / o.steps
for r in steps:
    e0, e1 = r.pop("events")
    r["gpu_span_s"] = e0.elapsed_time(e1) / 1000.0
if uses_loader:
    worker_pids = [w.pid for w in loader._workers]
    loader._shutdown_workers()  # the batches made ahead are not wanted: stop the workers now


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if v else None


here = os.path.abspath(__file__)
truth = {
    "kind": o.kind,
    "file": here,
    "steps": o.steps,
    "startup_s": t_first - t_start,
    "loop_s": t_end - t_first,
    "median_step_s": median([r["wall_s"] for r in steps]),
    "median_gpu_span_s": median([r["gpu_span_s"] for r in steps]),
    "profiler_gpu_s_per_step": kernel_s_per_step,
    "work_line": WORK_LINE if uses_loader else None,
    "burn_line": BURN_LINE,
    "sync_line": SYNC_LINE,
    "launch_lines": LAUNCH_LINES,
    "host_line": HOST_LINE,
    "cpu_ms_per_sample": o.cpu_ms if uses_loader else None,
    "host_ms_after_sync": o.host_ms if o.kind in ("sync", "mixed") else None,
    "batch": batch,
    "pid": os.getpid(),
    "worker_pids": worker_pids,
    "per_step": steps,
}
if uses_loader:
    truth["median_data_wait_s"] = median([r["data_wait_s"] for r in steps])
if o.kind in ("sync", "mixed"):
    truth["median_host_after_sync_s"] = median([r["host_after_sync_s"] for r in steps])
with open(o.out, "w") as f:
    json.dump(truth, f, indent=1)
print(
    f"{o.kind}: steps {o.steps} median step {truth['median_step_s'] * 1e3:.1f} ms, "
    f"gpu span {truth['median_gpu_span_s'] * 1e3:.1f} ms, start-up {truth['startup_s']:.2f} s",
    flush=True,
)
