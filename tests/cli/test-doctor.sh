#!/bin/sh
# tally doctor on the command line: every fixture tree gives valid --json (schema tally-doctor/1,
# every check documented in docs/doctor.md), exit codes follow the verdict, the text explains
# WARN and FAIL with why/fix lines, usage errors exit 2, and the real probe (dlopen of a stand-in
# libcuda.so.1) finds devices and hides CUDA_INJECTION64_PATH from cuInit.
# Usage: test-doctor.sh TALLY SRCDIR FAKE_CUDA_DIR
set -u
abs() { (cd "$(dirname "$1")" && printf '%s/%s' "$(pwd)" "$(basename "$1")"); }
TALLY=$(abs "$1") SRC=$(cd "$2" && pwd) FAKE=$(cd "$3" && pwd)
FIX=$SRC/fixtures/doctor DOCS=$SRC/../docs/doctor.md
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/../lib.sh"
any() { # name cmd...: exit 0 or 1 (the rest of this machine decides which)
	name=$1; shift
	"$@" >"$T/out" 2>"$T/err"; rc=$?
	if [ "$rc" -le 1 ]; then ok "$name (exit $rc)"; else bad "$name: exit $rc"; cat "$T/err"; fi
}
check() { # name python-expression over d (the JSON in $T/out) that must be true
	if python3 - "$T/out" "$2" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
c = {x["id"]: x for x in d["checks"]}
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
	then ok "$1"; else bad "$1"; cat "$T/out"; fi
}
has() { # name text: the text output holds it
	if grep -qF -- "$2" "$T/out"; then ok "$1"; else bad "$1: no \"$2\""; cat "$T/out"; fi
}

# every fixture: valid JSON, the schema, the documented ids, exit code = verdict (one python run)
for dir in "$FIX"/*/; do
	f=$(basename "$dir")
	"$TALLY" doctor --root "$dir" --json >"$T/fx-$f.json" 2>"$T/err"
	echo $? >"$T/fx-$f.rc"
done
python3 - "$T" "$DOCS" <<'PY' || bad "fixtures: --json against the schema and docs/doctor.md (above)"
import glob, json, os, sys
docs = open(sys.argv[2]).read()
keys = {"id", "gate", "status", "needed_for_tracing", "can_block", "value", "source", "why", "remedy"}
def check(path):
    d = json.load(open(path)); rc = int(open(path[:-5] + ".rc").read())
    assert d["schema"] == "tally-doctor/1"
    ids = [c["id"] for c in d["checks"]]
    assert len(ids) == 23 and len(set(ids)) == 23, ids
    gates = {g["id"] for g in d["gates"]}
    for c in d["checks"]:
        assert set(c) == keys, c
        assert c["status"] in ("ok", "warn", "fail", "skip"), c
        assert c["gate"] in gates and c["id"].startswith(c["gate"] + "."), c
        assert "`%s`" % c["id"] in docs, "undocumented check " + c["id"]
        assert c["status"] != "fail" or c["can_block"], c
        assert c["status"] in ("ok", "skip") or c["why"], c
    fails = [c["id"] for c in d["checks"] if c["status"] == "fail"]
    assert d["blocking"] == fails and d["can_record"] == (not fails) and rc == (1 if fails else 0)
    assert sum(d["counts"].values()) == 23
bad = 0
for path in sorted(glob.glob(os.path.join(sys.argv[1], "fx-*.json"))):
    name = os.path.basename(path)[3:-5]
    try:
        check(path); print("ok   %s: schema" % name)
    except Exception as e:
        print("FAIL %s: schema: %r" % (name, e)); bad = 1
sys.exit(bad)
PY

# situations, through the command line
expect_rc "host with a GPU: can record" 0 "$TALLY" doctor --root "$FIX/host-gpu" -o '/home/alice/proj/t_%p'
has "verdict line" "recording can proceed: 19 OK, 0 WARN, 0 FAIL, 4 SKIP"
if grep -q "$(printf '\033')" "$T/out"; then bad "no colour when not a terminal"; else ok "no colour when not a terminal"; fi
expect_rc "NGC image without --gpus: blocked" 1 "$TALLY" doctor --root "$FIX/docker-no-gpus"
has "blocked by card.driver" "recording is BLOCKED"
has "the --gpus fix" 'fix: start the container with `--gpus all`'
has "why line under a FAIL" "        why: a GPU is expected here (NVIDIA_VISIBLE_DEVICES=all)"
expect_rc "login node: warns, does not block" 0 "$TALLY" doctor --root "$FIX/slurm-login"
has "login node remedy" 'login node: run inside `srun --gpus=1 ...`'
any "perf 4 is not a warning" "$TALLY" doctor --root "$FIX/perf-paranoid-4" --json
check "perf.paranoid ok, not needed" 'c["perf.paranoid"]["status"] == "ok" and not c["perf.paranoid"]["needed_for_tracing"] and "--cap-add=SYS_ADMIN" in c["perf.paranoid"]["remedy"]'
expect_rc "full output disk" 1 "$TALLY" doctor --root "$FIX/output" -o /full/trace --json
check "output.space fail" 'c["output.space"]["status"] == "fail" and d["blocking"] == ["tool.collector", "output.space"]'
expect_rc "docker: a trace inside the container (its overlay root) blocks recording" 1 "$TALLY" doctor --root "$FIX/docker" -o /out/trace
has "volume remedy" 'fix: mount a volume and write there: `docker run -v $PWD:/work -w /work ...`'
expect_rc "per-rank pattern in a Slurm job" 0 "$TALLY" doctor --root "$FIX/slurm-job-gpu" -o 'trace_%q{SLURM_PROCID}' --json
check "expanded per rank" 'd["output"] == "/scratch/alice/run/trace_3.tally" and d["output_pattern"] == "trace_%q{SLURM_PROCID}"'
expect_rc "relative --root" 0 sh -c "cd '$FIX' && '$TALLY' doctor --root host-gpu"

any "--root / is this system" "$TALLY" doctor --root / --json
check "the collector is looked for beside tally" '"unset here" not in c["tool.collector"]["value"] and d["root"] == "/"'

# usage errors
expect_rc "unknown option" 2 "$TALLY" doctor --frobnicate
grep -q frobnicate "$T/err" && ok "option named on stderr" || bad "option named on stderr"
expect_rc "stray argument" 2 "$TALLY" doctor extra
expect_rc "missing --root" 2 "$TALLY" doctor --root "$T/nope"
: >"$T/file"
expect_rc "--root is a file" 2 "$TALLY" doctor --root "$T/file"
expect_rc "bad pattern" 2 "$TALLY" doctor -o 'trace%x'
grep -q "unknown pattern" "$T/err" && ok "pattern error explained" || bad "pattern error explained"
expect_rc "help" 0 "$TALLY" doctor --help
has "help lists --root" "--root DIR"
expect_rc "help through tally help" 0 "$TALLY" help doctor

# tool.injection opens what the injection variables name (a name alone proved nothing: a path
# that does not exist passed as "tally's collector", and recording then recorded nothing)
COLL=$(abs "$(dirname "$TALLY")/../../src/collector/libtally.so")
cp "$DOCS" "$T/libtally-text.so"
cp "$FAKE/libcuda.so.1" "$T/libtally-other.so"
for case in "/nonexistent/libtally.so:No such file" "$T/libtally-text.so:not a 64-bit ELF" \
	"$T/libtally-other.so:does not export InitializeInjection"; do
	path=${case%%:*} want=${case#*:}
	expect_rc "CUDA_INJECTION64_PATH=$(basename "$path") blocks" 1 env -i PATH=/usr/bin:/bin \
		CUDA_INJECTION64_PATH="$path" "$TALLY" doctor --json
	check "tool.injection fails: $want" "c['tool.injection']['status'] == 'fail' and '$want' in c['tool.injection']['value'] and 'tool.injection' in d['blocking'] and '--prefix' in c['tool.injection']['remedy']"
done
expect_rc "LD_PRELOAD naming a missing libtally blocks" 1 env -i PATH=/usr/bin:/bin \
	LD_PRELOAD="/lib/x.so:/gone/lib/tally/libtally.so" "$TALLY" doctor --json
check "tool.injection fails on the LD_PRELOAD entry" "c['tool.injection']['status'] == 'fail' and '/gone/lib/tally/libtally.so: No such file' in c['tool.injection']['value']"
if [ -f "$COLL" ]; then
	# (not through LD_PRELOAD, which would load it into the doctor itself)
	any "the built collector" env -i PATH=/usr/bin:/bin CUDA_INJECTION64_PATH="$COLL" NVTX_INJECTION64_PATH="$COLL" "$TALLY" doctor --json
	check "tool.injection ok for the built collector" "c['tool.injection']['status'] == 'ok' and c['tool.injection']['value'].startswith('2 path')"
else
	skipped "no built collector at $COLL"
fi
# tool.cupti says what the collector does: it loads libcupti at run time and searches
# /usr/local/cuda itself (it is not linked against it)
any "tool.cupti's why" "$TALLY" doctor --root "$FIX/host-gpu" --json
check "tool.cupti: loads, not linked; searches /usr/local/cuda itself" "'not linked against CUPTI' in c['tool.cupti']['why'] and '/usr/local/cuda/lib64' in c['tool.cupti']['why'] and 'linked against libcupti' not in c['tool.cupti']['why']"
# in a chroot no mount holds /tmp: say so, not "/tmp: ?"
cp -R "$FIX/host-gpu" "$T/chroot"
grep ' /proc ' "$FIX/host-gpu/proc/self/mountinfo" >"$T/chroot/proc/self/mountinfo"
any "a chroot" "$TALLY" doctor --root "$T/chroot" --json
check "output.tmpdir in a chroot: no '?' for a type" "c['output.tmpdir']['status'] == 'ok' and '?' not in c['output.tmpdir']['value'] and 'type is not known' in c['output.tmpdir']['value']"

# the real probe: dlopen of a stand-in libcuda.so.1, from an empty environment
E="env -i PATH=/usr/bin:/bin LD_LIBRARY_PATH=$FAKE TALLY_COLLECTOR=$FAKE/libcuda.so.1"
any "fake driver" sh -c "cd '$T' && $E '$TALLY' doctor --json"
check "driver loaded, devices and UUIDs" 'c["card.driver"]["status"] == "ok" and "libcuda.so.1" in c["card.driver"]["value"] and "Fake GPU 1 GPU-10111213-1415-1617-1819-1a1b1c1d1e1f" in c["card.devices"]["value"]'
any "injection hidden from cuInit" sh -c "cd '$T' && $E CUDA_INJECTION64_PATH=/opt/other/libinject.so '$TALLY' doctor --json"
check "cuInit saw no injection; the stranger is named" 'c["card.driver"]["status"] == "ok" and c["tool.subscriber"]["status"] == "warn" and "libinject.so" in c["tool.subscriber"]["value"]'
expect_rc "driver mismatch blocks" 1 sh -c "cd '$T' && $E FAKE_CUDA_INIT=803 '$TALLY' doctor --json"
check "mismatch named with its fix" 'c["card.driver"]["status"] == "fail" and "CUDA_ERROR_SYSTEM_DRIVER_MISMATCH" in c["card.driver"]["value"] and "different versions" in c["card.driver"]["remedy"]'
finish
