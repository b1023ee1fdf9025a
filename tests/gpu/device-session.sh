set -x
nvidia-smi -L; nvidia-smi --query-gpu=driver_version --format=csv,noheader; python3 -c 'import torch;print(torch.__version__, torch.cuda.device_count())'; ls /usr/local/cuda/lib64/libcupti* /usr/local/cuda/extras/CUPTI/lib64 2>&1 | head; which nvcc gcc
T=build/src/cli/tally
mkdir -p /tmp/p
TALLY_DEBUG=1 TALLY_TRACE=kernel,runtime,driver,nvtx $T record -o /tmp/p/corr.tally -- build/gpu/workload --kernels 3 --nvtx 2>&1 | tail -20
build/tests/tally-dump /tmp/p/corr.tally > $OUT/probe.txt; $T check /tmp/p/corr.tally >> $OUT/probe.txt 2>&1
TALLY_DEBUG=1 $T record -o /tmp/p/torch.tally -- python3 tests/gpu/torch_loop.py 100 2>&1 | tail -20
build/tests/tally-dump /tmp/p/torch.tally > $OUT/probe-torch.txt; $T check /tmp/p/torch.tally >> $OUT/probe-torch.txt 2>&1
$T record -o $OUT/gpu-h200.tally -- build/gpu/workload --kernels 2000 --memcpy 20:1048576 --memset 10:65536 --nvtx --graph 20:10 --threads 2 2>&1 | tail -4
timeout 330 tests/gpu/run.sh build /tmp/g > $OUT/suite.log 2>&1; tail -40 $OUT/suite.log
tar czf $OUT/traces.tgz -C /tmp g --exclude='*.tally' 2>/dev/null
timeout 200 bench/gpu-overhead.sh build 3 > $OUT/bench.txt 2>&1; cat $OUT/bench.txt
