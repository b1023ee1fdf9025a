#!/bin/bash
# What a newcomer's machine gives the reader, on the GPU (issue 20):
#   elf-names  native stacks of stacks.cu (nvcc, shared cudart) read with NO libdw (hidden from
#              the loader when this machine has one): each launch's innermost user frame is
#              solver_step or model_forward, named from the ELF symbol tables as "func (stacks)",
#              with the counts the program printed; no frame of CUPTI or libcuda in any stack;
#              no libc frame named __gconv_* (a neighbour's name); __libc_start_call_main named
#              where libc keeps a .symtab
#   driver     the trace's "CUDA driver" is the driver's own version (nvidia-smi's "CUDA
#              Version: 13.0" is 13000), not 0/unknown: for stacks.cu built with the static
#              cudart (nvcc's default, which dlopens libcuda RTLD_LOCAL) and for PyTorch (skipped
#              without it; also compared with what cuDriverGetVersion answers in Python, through ctypes)
#
#   tests/gpu/fresh.sh [BUILD_DIR] [OUT_DIR]     (OUT_DIR defaults to $OUT, else a temporary one)
# About a minute.  Exits 77 without a GPU.
set -u
. "$(dirname "$0")/../lib.sh"
need_gpu
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-build}" && pwd)
O=${2:-${OUT:-$(mktemp -d /tmp/tally-fresh-XXXXXX)}}
mkdir -p "$O"
TALLY=$B/src/cli/tally
PY=${PYTHON:-python3}
export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64
mkdir -p "$B/gpu"
nvcc -O2 -g -arch=sm_90 -cudart shared -o "$B/gpu/stacks-shared" "$HERE/stacks.cu" &&
	nvcc -O2 -g -arch=sm_90 -o "$B/gpu/stacks-static" "$HERE/stacks.cu" || { bad "nvcc stacks.cu"; finish; }

# ---- elf-names
"$TALLY" record -f --native-stacks -o "$O/native.tally" -- "$B/gpu/stacks-shared" launches \
	>"$O/native.stdout" 2>"$O/native.stderr" || { bad "record stacks (see $O/native.stderr)"; finish; }
# read with no libdw anywhere: off the library path (a copy carried in build/extra-libs), and
# hidden from the loader where this machine has one installed
libdw=$(ldconfig -p 2>/dev/null | sed -n 's/.*libdw\.so\.1 .*=> //p')
unshare -m sh -c 'for l in $1; do mount --bind /dev/null "$l" || exit 90; done; shift
	exec env -u LD_LIBRARY_PATH "$@"' sh "$libdw" "$TALLY" stats -r cuda_kern_stack_sum \
	--format csv "$O/native.tally" >"$O/native.csv" 2>"$O/native.err"
libc=$($PY -c 'import ctypes.util, sys; print(ctypes.util.find_library("c") or "")')
libc_path=$(ldconfig -p | sed -n "s/.*$libc (.*x86-64.*=> //p" | head -1)
$PY - "$O/native.stdout" "$O/native.csv" "$O/native.err" "$libc_path" <<'PY'
import csv, re, struct, sys
out, path, err, libc = sys.argv[1:]
want = {m.group(1): int(m.group(3)) for m in re.finditer(r"^(\w+) (\d+) (\d+)$", open(out).read(), re.M)}
rows = list(csv.DictReader(l for l in open(path) if l.strip() and not l.startswith("#")))
frames = {r["Location"]: int(r["Instances"]) for r in rows if r["By"] == "frame"}
stacks = [r["Location"].split(" <- ") for r in rows if r["By"] == "stack"]
every = [f for s in stacks for f in s]
fail = []
print("frames:", frames)
print("a stack:", stacks[0] if stacks else None)
for func, n in want.items():  # C++: "solver_step(int) (stacks-shared)"
    hit = [k for k, v in frames.items() if v == n and k.endswith(" (stacks-shared)") and
           (k.startswith(func + "(") or k.startswith(func + " ("))]
    if len(hit) != 1:
        fail.append("no frame '%s... (stacks-shared)' with %d launches" % (func, n))
if len(want) != 2:
    fail.append("the program listed %d functions, not 2" % len(want))
if "without file:line" not in open(err).read():
    fail.append("tally did not say that lines need libdw (was libdw found?)")
cupti = [f for f in every if "libcupti" in f or "libcuda.so" in f]
if cupti or not every:
    fail.append("CUPTI's or the driver's frames recorded: %s" % cupti[:4])
gconv = [f for f in every if f.startswith("__gconv")]
if gconv:
    fail.append("a libc frame named by a neighbour: %s" % gconv[:2])
def has_symtab(p):  # an ELF64 file's section types: SHT_SYMTAB is 2
    try:
        d = open(p, "rb").read()
        shoff, = struct.unpack_from("<Q", d, 0x28); n, = struct.unpack_from("<H", d, 0x3c)
        return any(struct.unpack_from("<I", d, shoff + 64 * i + 4)[0] == 2 for i in range(n))
    except Exception:
        return False
named = sum(1 for f in every if not re.search(r"\+0x[0-9a-f]+$", f))
print("frames named: %d of %d; libc %s has %s" % (named, len(every), libc,
      ".symtab" if has_symtab(libc) else "no .symtab (exported names only)"))
if has_symtab(libc) and not any(f.startswith("__libc_start_call_main ") for f in every):
    fail.append("libc has a .symtab but no frame is __libc_start_call_main")
for f in fail:
    print("FAIL:", f)
sys.exit(1 if fail else 0)
PY
[ $? -eq 0 ] && ok "elf-names: without libdw, frames named from the ELF symbol tables; no CUPTI/libcuda frame; libc named right" ||
	bad "elf-names: see $O/native.*"

# ---- driver
want=$(nvidia-smi | sed -n 's/.*CUDA Version: \([0-9]*\)\.\([0-9]*\).*/\1 \2/p' | head -1 |
	awk '{print $1 * 1000 + $2 * 10}')
driver() { # NAME: the driver version in $O/NAME.tally, from tally check --json
	"$TALLY" check --json "$O/$1.tally" 2>/dev/null |
		$PY -c 'import json,sys; print(json.load(sys.stdin)["files"][0]["sections"][0]["driver_version"])'
}
"$TALLY" record -f -o "$O/static.tally" -- "$B/gpu/stacks-static" launches >"$O/static.stdout" 2>&1
got=$(driver static)
[ -n "$want" ] && [ "$got" = "$want" ] && ok "driver: static cudart program: CUDA driver $got (nvidia-smi: $want)" ||
	bad "driver: static cudart program: CUDA driver '$got', nvidia-smi says '$want'"
"$TALLY" check "$O/static.tally" | grep versions
if has_torch; then
	"$TALLY" record -f -o "$O/torch.tally" -- $PY "$HERE/torch_loop.py" 200 >"$O/torch.stdout" 2>&1
	got=$(driver torch)
	# what the driver itself answers, asked the way tally asks it (torch has no public call for it)
	tv=$($PY -c "import ctypes; v = ctypes.c_int(); ctypes.CDLL('libcuda.so.1').cuDriverGetVersion(ctypes.byref(v)); print(v.value)")
	[ "$got" = "$want" ] && [ "$got" = "$tv" ] &&
		ok "driver: PyTorch: CUDA driver $got (nvidia-smi $want, torch $tv)" ||
		bad "driver: PyTorch: CUDA driver '$got', nvidia-smi '$want', torch '$tv'"
	"$TALLY" check "$O/torch.tally" | grep versions
else
	skipped "driver: PyTorch: no torch with CUDA here"
fi
echo "traces in $O"
finish
