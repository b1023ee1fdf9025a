#!/bin/bash
# The bundle on a GPU machine, unpacked into fresh directories and run from there (no build tree
# on any path): it records the PyTorch loop, torchrun on two GPUs with -o '%q{RANK}', and, from
# the bundle made with WITH_CUPTI=1 and the toolkit's CUPTI hidden, the C workload.
#   tests/gpu/bundle.sh DIST_DIR OUT_DIR
# DIST_DIR holds tally-*-linux-x86_64.tar.gz and tally-*-linux-x86_64-with-cupti.tar.gz (made
# with `scripts/dist.sh build DIST_DIR` and `scripts/dist.sh build DIST_DIR --with-cupti`).
# Expected counts come from what the programs print.  Exits 77 without a GPU.
set -u
. "$(dirname "$0")/../lib.sh"
need_gpu
HERE=$(cd "$(dirname "$0")" && pwd)
DIST=$(cd "$1" && pwd)
OUT=$(mkdir -p "$2" && cd "$2" && pwd)
mkdir -p "$OUT/torch" "$OUT/ddp" "$OUT/cupti"
PY=${PYTHON:-python3}
unpack() { # TARBALL DIR
	rm -rf "$2" && mkdir -p "$2" && tar -C "$2" --strip-components=1 -xzf "$1"
}
plain=$(ls "$DIST"/tally-*-linux-x86_64.tar.gz | head -1)
withc=$(ls "$DIST"/tally-*-linux-x86_64-with-cupti.tar.gz | head -1)
B=$OUT/fresh/tally C=$OUT/fresh-cupti/tally
unpack "$plain" "$B" && unpack "$withc" "$C" || { bad "unpack"; finish bundle.sh; }

# verdict NAME FILE-GLOB WANT-FILES CONDITION: over each file, s its section, v its verdict, k its
# records, adds the "add" kernel instances (tally stats), out the program's output
verdict() {
	local name=$1 glob=$2 want=$3 cond=$4
	local files=($glob)
	[ "${#files[@]}" = "$want" ] && [ -e "${files[0]}" ] || { bad "$name: ${#files[@]} file(s), want $want"; tail -5 "$OUT/$name.err"; return; }
	for f in "${files[@]}"; do
		"$B/bin/tally" check --json "$f" >"$f.json" 2>/dev/null
		"$B/bin/tally" stats -f json --report cuda_gpu_kern_sum "$f" >"$f.stats" 2>/dev/null
		if $PY - "$f" "$OUT/$name.out" "$cond" <<'PY'; then
import json, re, sys
f, out, cond = sys.argv[1], open(sys.argv[2]).read(), sys.argv[3]
s = json.load(open(f + ".json"))["files"][0]["sections"][0]
v, k = s["verdict"], s["records"]
rows = json.load(open(f + ".stats"))["reports"][0]["rows"]
adds = sum(r["Instances"] for r in rows if "add" in r.get("Name", ""))
num = lambda key: sum(int(m) for m in re.findall(key + r" (\d+)", out))
R = (s["rank"] or "=").split("=", 1)[1]  # the rank's value, from the variable tally read
ok = eval(cond)
print("  %s: %s, %s, rank %s, add kernels %d" % (f, v, k, s["rank"], adds))
sys.exit(0 if ok else 1)
PY
			ok "$name: $(basename "$f"): $cond"
		else
			bad "$name: $(basename "$f"): $cond"
		fi
	done
}

# 1. The PyTorch loop
"$B/bin/tally" record -o "$OUT/torch/%p" -- $PY "$HERE/torch_loop.py" 2000 >"$OUT/torch.out" 2>"$OUT/torch.err"
verdict torch "$OUT/torch/*.tally" 1 'v == "COMPLETE" and adds == num("adds") == 2000 and k["nvtx_range"] == 2000'

# 2. torchrun on two GPUs, one file per rank named by RANK
NGPU=$(nvidia-smi -L | wc -l)
if [ "$NGPU" -ge 2 ] && command -v torchrun >/dev/null; then
	"$B/bin/tally" record -o "$OUT/ddp/%q{RANK}" -- torchrun --standalone --nproc-per-node=2 \
		"$HERE/ddp_allreduce.py" 500 >"$OUT/ddp.out" 2>"$OUT/ddp.err"
	# one file per rank, named by its RANK (a -PID is added after the first process's name,
	# since all of them share one tally record: docs/record.md)
	verdict ddp "$OUT/ddp/*.tally" 2 'v == "COMPLETE" and adds == 500 and s["rank"] == "RANK=" + R and re.match(R + r"(-\d+)?\.tally$", f.split("/")[-1]) and "rank %s pid %d adds 500" % (R, s["pid"]) in out'
else
	skipped "ddp: $NGPU GPU(s) or no torchrun (needs 2 GPUs: the nvidia-h200-x2 kind)"
fi

# 3. WITH_CUPTI=1 bundle, the toolkit's CUPTI hidden: no LD_LIBRARY_PATH, no CUDA_HOME, and where
# a mount namespace is allowed, every libcupti on this machine outside the bundle masked.
W=$OUT/workload
nvcc -O2 -arch=sm_90 -o "$W" "$HERE/workload.cu" -lcuda || { bad "cannot build workload"; finish bundle.sh; }
cat >"$OUT/hidden.sh" <<SH
for f in \$(find / -xdev -name 'libcupti.so*' -not -path '$C/*' 2>/dev/null); do mount --bind /dev/null "\$f"; done
echo "masked: \$(find / -xdev -name 'libcupti.so*' -not -path '$C/*' 2>/dev/null | wc -l) libcupti file(s)"
"$C/bin/tally" doctor 2>&1 | grep -A1 'tool.cupti\|CUPTI'
exec "$C/bin/tally" record -o "$OUT/cupti/%p" -- "$W" --kernels 5000
SH
if unshare -m true 2>/dev/null; then
	env -u LD_LIBRARY_PATH -u CUDA_HOME unshare -m sh "$OUT/hidden.sh" >"$OUT/cupti.out" 2>"$OUT/cupti.err"
else
	echo "note: no mount namespace here: the toolkit's CUPTI is only off the library path"
	env -u LD_LIBRARY_PATH -u CUDA_HOME sh -c "$(grep -v mount "$OUT/hidden.sh")" >"$OUT/cupti.out" 2>"$OUT/cupti.err"
fi
cat "$OUT/cupti.out" | grep -v "^launched"
verdict cupti "$OUT/cupti/*.tally" 1 'v == "COMPLETE" and k["kernel"] == num("total_kernels") == 5000'
used=$(grep -a -o "cupti=[^[:space:]]*" "$OUT"/cupti/*.tally | head -1)
[[ "$used" == "cupti=$C/lib/tally/libcupti.so"* ]] && ok "cupti: the trace says the bundled CUPTI recorded it ($used)" ||
	bad "cupti: CUPTI used: $used"
finish bundle.sh
