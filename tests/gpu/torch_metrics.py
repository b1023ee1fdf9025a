"""GPU metrics by construction, in PyTorch: NVTX ranges "sleep" (time.sleep: nothing runs on the
GPU), "elementwise" (x.add_(1) over 64M floats: memory bound, no tensor pipe) and "matmul-fp16"
(8192x8192 FP16 matmuls: the tensor pipes), each about SECONDS long (1).  Prints
"phase NAME seconds S ops N" as it measured them, and "pid P".
Usage: torch_metrics.py [SECONDS] [--only PHASE]"""
import os, sys, time
import torch

seconds = float(sys.argv[1]) if len(sys.argv) > 1 and not sys.argv[1].startswith("-") else 1.0
only = sys.argv[sys.argv.index("--only") + 1] if "--only" in sys.argv else None
x = torch.zeros(64 << 20, device="cuda")
a = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.float16)
torch.cuda.synchronize()
print(f"pid {os.getpid()}", flush=True)
time.sleep(0.5)  # the sampler sets the device up meanwhile: every phase below is sampled


def phase(name, step):
    if only and name != only:
        return
    torch.cuda.nvtx.range_push(name)
    t0, n = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        step()
        n += 1
        if n % 8 == 0:
            torch.cuda.synchronize()  # keep the queue short, so the phase ends on time
    torch.cuda.synchronize()
    t1 = time.perf_counter()
    torch.cuda.nvtx.range_pop()
    print(f"phase {name} seconds {t1 - t0:.6f} ops {n}", flush=True)


phase("sleep", lambda: time.sleep(seconds))
phase("elementwise", lambda: x.add_(1))
phase("matmul-fp16", lambda: torch.matmul(a, b))
