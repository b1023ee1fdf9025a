#!/bin/bash
# Names of native frames that travel (issue 31): a trace recorded on the GPU machine with
# --sample native names the same functions when it is read on another machine.
#
# On the GPU machine:
#   tests/gpu/symbols.sh [BUILD_DIR] [OUT_DIR]        (under a minute; exits 77 without a GPU)
# records cpu_between (tests/gpu/symbols.cu: 10 bursts of 200 kernels, each followed by 40 ms of
# CPU in crunch(double)) with --sample native; tally record names its native frames there.  It
# checks that the trace has the names (a SYMBOLS chunk, naming complete), and that the row of
# crunch(double) in cpu_sample_sum has exactly the main thread's samples whose innermost
# address lies in crunch (from the raw addresses, tally-dump, and nm: not from tally's names).
# It prints the function rows tally gives there and keeps, in OUT_DIR ($OUT/symbols when $OUT
# is set): symbols.tally, device-names.csv (cpu_sample_sum there), the program (cpu_between).
#
# On any other machine, with that directory copied back:
#   tests/gpu/symbols.sh --read OUT_DIR [BUILD_DIR]
# compares what tally says here with device-names.csv: every named row (a function, not
# module+0xoffset) the same, with the same counts; and, with the names of tally record cut off
# (the trace as a tally without them would have written it), every function named here is one
# the device named (a name from another build, this machine's libc or a missing program, would
# be new), crunch is not named unless the very program is at its path here, and --symfs with the kept program names crunch(double) with the device's count again.
set -u
. "$(dirname "$0")/../lib.sh"
HERE=$(cd "$(dirname "$0")" && pwd)
if [ "${1:-}" = --read ]; then
	MODE=read
	O=$(cd "${2:?usage: symbols.sh --read OUT_DIR [BUILD_DIR]}" && pwd)
	B=$(cd "${3:-build}" && pwd)
else
	MODE=record
	need_gpu
	B=$(cd "${1:-build}" && pwd)
	O=${2:-${OUT:+$OUT/symbols}}
	O=${O:-$(mktemp -d /tmp/tally-symbols-XXXXXX)}
	mkdir -p "$O"
	O=$(cd "$O" && pwd)
fi
TALLY=$B/src/cli/tally
DUMP=$B/tests/tally-dump
S=$O/cpu_between
names() { # TRACE OUT [OPTIONS]: cpu_sample_sum as CSV
	t=$1 out=$2
	shift 2
	"$TALLY" stats "$@" -r cpu_sample_sum -f csv "$t" >"$out" 2>"$out.err" || bad "stats $t: exit $?"
}

if [ $MODE = record ]; then
	export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64
	nvcc -O2 -g -arch=sm_90 -cudart shared -o "$S" "$HERE/symbols.cu" ||
		{ bad "cannot build symbols.cu"; finish symbols.sh; }
	"$TALLY" record -f --sample native -o "$O/symbols.tally" -- "$S" 10 40 >"$O/run.out" 2>"$O/run.err" ||
		bad "record: exit $? ($(tail -n 3 "$O/run.err"))"
	cat "$O/run.err"
	"$TALLY" check -v "$O/symbols.tally" >"$O/check.txt" 2>&1
	grep -q " SYMBOLS " "$O/check.txt" && ok "tally record appended the frames' names (SYMBOLS)" ||
		bad "no SYMBOLS chunk in the trace"
	grep -q "native frames named before" "$O/run.err" && bad "naming was cut short: $(grep 'named before' "$O/run.err")"
	"$DUMP" --host "$O/symbols.tally" >"$O/symbols.dump"
	names "$O/symbols.tally" "$O/device-names.csv"
	echo "the functions tally names on the device (cpu_sample_sum, native):"
	grep ',native,function,' "$O/device-names.csv" | head -n 12 | sed 's/^/  /'
	python3 - "$O" "$S" <<'PY'
import csv, re, subprocess, sys
O, prog = sys.argv[1:3]
nm = subprocess.run(["nm", "-S", "--defined-only", prog], capture_output=True, text=True).stdout
rng = next(((int(p[0], 16), int(p[0], 16) + int(p[1], 16)) for p in (l.split() for l in nm.splitlines())
            if len(p) == 4 and p[3] == "_Z6crunchd"), None)
if not rng:
    sys.exit("FAIL nm finds no _Z6crunchd in " + prog)
raw = sum(rng[0] <= int(m.group(1), 16) < rng[1] for m in re.finditer(
    r"^sample .* stack pc:cpu_between:0x([0-9a-f]+)", open(O + "/symbols.dump").read(), re.M))
rows = list(csv.reader(l for l in open(O + "/device-names.csv") if l.strip() and not l.startswith("#")))
h = rows[0]
got = sum(int(r[h.index("Self")]) for r in rows[1:] if r[h.index("By")] == "function"
          and r[h.index("Location")].startswith("crunch(double) ("))
cpu = float(re.search(r"crunch_cpu_ns (\d+)", open(O + "/run.out").read()).group(1)) / 1e6
print("%s crunch(double): %d samples named, %d by the raw addresses; %.0f ms of CPU in it"
      % ("ok  " if got == raw and raw else "FAIL", got, raw, cpu))
sys.exit(0 if got == raw and raw else 1)
PY
	[ $? -eq 0 ] && ok "on the device, crunch(double) is named with every sample in it" ||
		bad "on the device, crunch(double)'s samples"
	echo "kept in $O: read it on another machine with: tests/gpu/symbols.sh --read DIR [BUILD_DIR]"
	finish symbols.sh
fi

# ---- read mode: on another machine ----
[ -f "$O/symbols.tally" ] && [ -f "$O/device-names.csv" ] || skip "no symbols.tally and device-names.csv in $O"
python3 - "$O/symbols.tally" "$O/plain.tally" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
n = struct.unpack("<I", d[-4:])[0]  # a SYMBOLS chunk ends the file: its payload's own length
open(sys.argv[2], "wb").write(d[:len(d) - 32 - n])
PY
mkdir -p "$O/symfs"
cp "$S" "$O/symfs/cpu_between"
names "$O/symbols.tally" "$O/here-names.csv"
names "$O/plain.tally" "$O/here-plain.csv"
names "$O/plain.tally" "$O/here-symfs.csv" --symfs "$O/symfs"
echo "the functions tally names here:"
grep ',native,function,' "$O/here-names.csv" | head -n 12 | sed 's/^/  /'
echo "here, without the names tally record wrote:"
grep ',native,function,' "$O/here-plain.csv" | head -n 12 | sed 's/^/  /'
python3 - "$O" <<'PY'
import csv, sys
O = sys.argv[1]
def rows(name):
    r = list(csv.reader(l for l in open("%s/%s" % (O, name)) if l.strip() and not l.startswith("#")))
    h = r[0]
    return {(x[h.index("By")], x[h.index("Location")]): int(x[h.index("Self")]) for x in r[1:]
            if x[h.index("Kind")] == "native"}
dev, here, plain, symfs = (rows(n) for n in ("device-names.csv", "here-names.csv", "here-plain.csv", "here-symfs.csv"))
fail = 0
def ok(c, what):
    global fail
    print(("ok   " if c else "FAIL ") + what)
    fail += not c
named = lambda rs: {k: v for k, v in rs.items() if "+0x" not in k[1] and not k[1].startswith("[")}
ok(named(dev) == named(here), "the trace names here what it named on the device: %d named rows%s"
   % (len(named(dev)), "" if named(dev) == named(here) else
      "; differ: %s" % sorted(set(named(dev).items()) ^ set(named(here).items()))[:6]))
dev_funcs = {k[1].split(" (")[0] for k in named(dev)}
new = sorted({k[1] for k in named(plain) if k[1].split(" (")[0].replace(" [unverified]", "") not in dev_funcs})
ok(not new, "without record's names, no function here that the device did not name: %s" % new[:6])
crunch = lambda rs: sum(v for k, v in rs.items() if k[0] == "function" and k[1].startswith("crunch(double) ("))
ok(crunch(plain) in (0, crunch(dev)), "without record's names, crunch is named only from its own build "
   "(0 where the program is not at its path here): %d of %d" % (crunch(plain), crunch(dev)))
ok(crunch(symfs) == crunch(dev) > 0, "--symfs with the kept program: crunch(double) %d samples, %d on the device"
   % (crunch(symfs), crunch(dev)))
sys.exit(1 if fail else 0)
PY
[ $? -eq 0 ] && ok "read here: the device's names, never another build's" || bad "read here"
finish symbols.sh
