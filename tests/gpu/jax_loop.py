"""JAX workload (kernels launched through the driver API by XLA): N dispatched adds."""
import os, sys
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
import jax, jax.numpy as jnp

n = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
x = jnp.zeros(16)
for _ in range(n):
    x = x + 1
x.block_until_ready()
assert float(x[0]) == n
print(f"pid {os.getpid()} jax_adds {n} device {jax.devices()[0]}", flush=True)
