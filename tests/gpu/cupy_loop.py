"""CuPy workload: N in-place adds on the GPU."""
import os, sys
import cupy as cp

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
x = cp.zeros(16, dtype=cp.float32)
for _ in range(n):
    x += 1
cp.cuda.Device().synchronize()
assert float(x[0]) == n
print(f"pid {os.getpid()} cupy_adds {n}", flush=True)
