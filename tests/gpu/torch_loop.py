"""PyTorch workload with known counts: N in-place adds (one elementwise kernel each, as
torch.profiler counts them), each inside an NVTX range pushed with torch.cuda.nvtx unless
--no-nvtx.  Usage: torch_loop.py N [--no-nvtx]; prints what it did and its loop time: the whole
loop's (loop_ns), and the loop's as its fastest chunks of 1,000 adds make it (chunk_p10_ns: the
10th percentile of the chunks' times, scaled to N; a chunk the machine slowed is left out, what a
tool adds to every add is not).  With TALLY_BENCH_TOGGLE_MS set (tally then records GPU metrics
and host samples in some intervals of that length only), also each interval's median chunk and
whether tally recorded in it (phase_ns), as tests/gpu/workload.cu prints it."""
import os, sys, time
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "support"))
from bench_toggle import toggled_off  # noqa: E402

n = int(sys.argv[1]) if len(sys.argv) > 1 else 20000
nvtx = "--no-nvtx" not in sys.argv
x = torch.zeros(1, device="cuda")
torch.cuda.synchronize()
chunks = []
t0 = time.monotonic()
if nvtx:
    for i in range(n):
        torch.cuda.nvtx.range_push("step")
        x.add_(1)
        torch.cuda.nvtx.range_pop()
else:
    for i in range(n):
        x.add_(1)
        if i % 1000 == 999:
            chunks.append(time.monotonic())
torch.cuda.synchronize()
t1 = time.monotonic()
assert int(x.item()) == n
took = sorted(b - a for a, b in zip([t0] + chunks, chunks))
p10 = took[len(took) // 10] * 1e9 * n / 1000 if len(took) >= 10 else 0
phases = {}
toggle = float(os.environ.get("TALLY_BENCH_TOGGLE_MS", "0")) / 1e3
for a, b in zip([t0] + chunks, chunks) if toggle > 0 else ():
    ph = int(a // toggle)
    if int(b // toggle) == ph and a - ph * toggle >= toggle / 3:
        phases.setdefault(ph, []).append(b - a)


if phases:  # as tests/gpu/workload.cu prints them: each interval's median chunk, and if on
    print("phase_ns " + ",".join(f"{ph}:{sorted(v)[len(v) // 2] * 1e9:.0f}:{int(not toggled_off(ph))}"
                                 for ph, v in sorted(phases.items()) if len(v) >= 3), flush=True)
print(f"pid {os.getpid()} adds {n} nvtx_ranges {n if nvtx else 0} loop_ns {(t1 - t0) * 1e9:.0f} chunk_p10_ns {p10:.0f}", flush=True)
