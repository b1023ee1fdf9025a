#!/bin/sh
# tally export --format kineto: the directory of Kineto JSON that Holistic Trace Analysis (HTA) and
# PyTorch's tools read, checked for the shape they read it by (HTA itself is not installed here;
# docs/export.md has its figures on the kept traces).  On traces the CPU test source was told to
# make (two ranks of a job of two, two launching threads, four streams, every kind of record):
# - one file per rank, rank-N.json, whose top has "rank": N as HTA's file scan finds it (a regex
#   that wants a space after the colon) and distributedInfo.world_size from the job;
# - GPU work on pid = device, tid = stream, with args.stream, args.device, args.context,
#   args.correlation and "External id"; categories kernel, gpu_memcpy, gpu_memset in the numbers
#   the workload made, copies named as Kineto names them ("Memcpy HtoD (...)");
# - API calls cuda_runtime and cuda_driver, NVTX ranges user_annotation, none with a stream (HTA
#   would count them as GPU work), no synchronization records;
# - each NVTX range's projection onto the GPU as Kineto makes it, gpu_user_annotation on each
#   stream where work launched inside it ran, from the first start to the last end (from the
#   construction of tally-testsrc --steps), with the range's External id and no args.stream;
# - one ac2g flow per launch with GPU work: "s" on its call, "f" bound to the work;
# - times in whole microseconds, each end the nearest microsecond to the recorded nanosecond (the
#   CSV export's), so no duration is negative;
# - deviceProperties naming the devices; loss windows as tally_loss slices with no stream, and the
#   verdict under "tally"; a process with no rank numbered after the highest, or left out (and
#   said) when it has no GPU work (a launcher); --force removes the
#   rank files of an earlier export that this one did not write.
# And tally export without --format takes it from -o's name (.json chrome, .sqlite/.db sqlite);
# a name that says none is a usage error naming the formats.
# Usage: test-kineto.sh TALLY TESTSRC
set -u
TALLY=$1 TESTSRC=$2
. "$(dirname "$0")/../lib.sh"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# check NAME PYTHON-CONDITION over the export in $T/$1 (f: rank -> parsed file, raw: rank -> text)
# and the CSV export in $T/$1.csv (csv: kind -> rows)
check() {
	python3 - "$T/$1" "$2" <<'PY' && ok "$1: $2" || bad "$1: $2"
import csv as csvmod, glob, json, os, re, sys
d = sys.argv[1]
f, raw = {}, {}
for p in sorted(glob.glob(d + "/*.json")):
    r = int(re.match(r"rank-(\d+)\.json$", os.path.basename(p)).group(1))
    raw[r] = open(p).read()
    f[r] = json.loads(raw[r])
csv = {}
for p in glob.glob(d + ".csv/*.csv"):
    csv[os.path.basename(p)[:-4]] = list(csvmod.DictReader(open(p)))
ev = lambda r, cat: [e for e in f[r]["traceEvents"] if e.get("cat") == cat]
gpu = lambda r: [e for e in f[r]["traceEvents"] if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset")]
sys.exit(0 if eval(sys.argv[2]) else 1)
PY
}

K=400 D=30 M=40 S=20 Y=10 R=12 Q=5
mkdir "$T/job"
for rank in 0 1; do
	RANK=$rank WORLD_SIZE=2 "$TESTSRC" -o "$T/job/rank$rank.tally" --threads 2 --kernels $K \
		--driver-kernels $D --memcpys $M --memsets $S --syncs $Y --ranges $R --marks $Q \
		--streams 4 --devices 2 --seed $((rank + 5)) >/dev/null
done
expect_rc "export -f kineto" 0 "$TALLY" export -q -f kineto -o "$T/k" "$T/job"
"$TALLY" export -q -f csv -o "$T/k.csv" "$T/job/rank0.tally"
check k "sorted(os.listdir(d)) == ['rank-0.json', 'rank-1.json']"
check k "all(re.search(r'\"rank\":\s+(\d+)', raw[r].split('traceEvents')[0]).group(1) == str(r) for r in f)"
check k "all(f[r]['distributedInfo'] == {'rank': r, 'world_size': 2} for r in f)"
check k "all(len(ev(r, 'kernel')) == 2 * ($K + $D) and len(ev(r, 'gpu_memcpy')) == 2 * $M and len(ev(r, 'gpu_memset')) == 2 * $S for r in f)"
check k "all(len(ev(r, 'cuda_runtime')) == 2 * ($K + $M + $S + $Y) and len(ev(r, 'cuda_driver')) == 2 * $D for r in f)"
check k "all(len(ev(r, 'user_annotation')) == 2 * $R and not ev(r, 'cuda_sync') for r in f)"
check k "all(e['args']['stream'] == e['tid'] and e['args']['device'] == e['pid'] and e['args']['correlation'] == e['args']['External id'] > 0 and 'context' in e['args'] for r in f for e in gpu(r))"
check k "all(len({e['args']['stream'] for e in gpu(r)}) == 4 for r in f)"
check k "all(re.fullmatch(r'Memcpy (HtoD|DtoH|DtoD|HtoH|PtoP|HtoA|AtoH|AtoA|AtoD|DtoA|Unknown) \(\w[\w ]* -> \w[\w ]*\)', e['name']) for r in f for e in ev(r, 'gpu_memcpy'))"
check k "all(re.fullmatch(r'Memset \(\w[\w ]*\)', e['name']) for r in f for e in ev(r, 'gpu_memset'))"
check k "all('stream' not in e.get('args', {}) and e['pid'] > 1000 for r in f for c in ('cuda_runtime', 'cuda_driver', 'user_annotation') for e in ev(r, c))"
check k "all(e['args']['correlation'] > 0 and 'cbid' in e['args'] for r in f for c in ('cuda_runtime', 'cuda_driver') for e in ev(r, c))"
# flows: one s per launch with GPU work, on the call (same ts and thread), one f per GPU work
check k "all(len([e for e in ev(r, 'ac2g') if e['ph'] == 's']) == len([e for e in ev(r, 'ac2g') if e['ph'] == 'f']) == 2 * ($K + $D + $M + $S) for r in f)"
check k "all({(e['id'], e['pid'], e['tid'], e['ts']) for e in ev(r, 'ac2g') if e['ph'] == 'f'} == {(e['args']['correlation'], e['pid'], e['tid'], e['ts']) for e in gpu(r)} for r in f)"
check k "all({(e['id'], e['tid'], e['ts']) for e in ev(r, 'ac2g') if e['ph'] == 's'} <= {(e['args']['correlation'], e['tid'], e['ts']) for c in ('cuda_runtime', 'cuda_driver') for e in ev(r, c)} for r in f)"
check k "all(e.get('bp') == 'e' for r in f for e in ev(r, 'ac2g') if e['ph'] == 'f')"
# times: whole microseconds, each end the recorded nanosecond rounded to the nearest
check k "all(type(e['ts']) is int and (e['ph'] != 'X' or type(e['dur']) is int and e['dur'] >= 0) for r in f for e in f[r]['traceEvents'])"
check k "{int(c['correlation']): ((int(c['start']) + 500) // 1000, (int(c['end']) + 500) // 1000) for c in csv['kernel']} == {e['args']['correlation']: (e['ts'], e['ts'] + e['dur']) for e in ev(0, 'kernel')}"
check k "all(sorted(p['id'] for p in f[r]['deviceProperties']) == [0, 1] and all(p['name'] and 'numSms' in p for p in f[r]['deviceProperties']) for r in f)"
check k "all(f[r]['tally']['tally_verdict'] == 'COMPLETE' and not ev(r, 'tally_loss') for r in f)"

# NVTX ranges projected onto the GPU as Kineto does (gpu_user_annotation): steps of exact times
# (tally-testsrc --steps, testsrc.h): per step a range "step" around a 2 ms copy and 4 kernels of
# 1 ms back to back on stream 7, and a 0.5 ms NCCL kernel on stream 8 starting 1 ms after the first
# kernel; so each step's projection is 6 ms on stream 7 from the copy's start to the fourth
# kernel's end, and 0.5 ms on stream 8 from 3 ms after it, with the step's External id
"$TESTSRC" -o "$T/steps.tally" --t0 1796000000000000000 --steps 5 --step-kernels 4 --kernel-us 1000 \
	--copy-us 2000 --comm-us 500 --comm-at-us 1000 --gap-us 500 --devices 1 >/dev/null
expect_rc "export -f kineto, steps in NVTX ranges" 0 "$TALLY" export -q -f kineto -o "$T/steps" "$T/steps.tally"
ga="lambda: sorted(ev(0, 'gpu_user_annotation'), key=lambda e: (e['tid'], e['ts']))"
check steps "len(ev(0, 'user_annotation')) == 5 and [(e['tid'], e['name'], e['pid']) for e in ($ga)()] == [(7, 'step', 0)] * 5 + [(8, 'step', 0)] * 5"
check steps "[e['dur'] for e in ($ga)()] == [6000] * 5 + [500] * 5"
check steps "[e['ts'] for e in ($ga)()][:5] == sorted(e['ts'] for e in ev(0, 'gpu_memcpy')) and [e['ts'] + e['dur'] for e in ($ga)()][:5] == sorted(e['ts'] + e['dur'] for e in ev(0, 'kernel') if e['tid'] == 7)[3::4]"
check steps "[e['ts'] for e in ($ga)()][5:] == [e['ts'] + 3000 for e in ($ga)()][:5] == sorted(e['ts'] for e in ev(0, 'kernel') if e['tid'] == 8)"
check steps "sorted(e['args']['External id'] for e in ($ga)()) == sorted(2 * [e['args']['External id'] for e in ev(0, 'user_annotation')]) and all(a['ts'] <= g['ts'] for g in ($ga)() for a in ev(0, 'user_annotation') if a['args']['External id'] == g['args']['External id'])"
check steps "all(set(e['args']) == {'External id'} for e in ($ga)()) and not {e['args']['External id'] for e in ($ga)()} & {e['args']['correlation'] for e in gpu(0)}"
# --range-every 10: an "iter" range around every 10 kernel launches of each thread (6 a thread),
# the copies launched after them, outside: each kernel lies inside an "iter" projection on its own
# stream, each projection starts at a kernel's start and ends at a kernel's end (no copy's), one
# projection per range and stream
"$TESTSRC" -o "$T/iter.tally" --kernels 60 --memcpys 6 --range-every 10 --threads 2 --streams 3 >/dev/null
expect_rc "export -f kineto, launches in NVTX ranges" 0 "$TALLY" export -q -f kineto -o "$T/iter" "$T/iter.tally"
inside="lambda g: any(a['pid'] == g['pid'] and a['tid'] == g['tid'] and a['ts'] <= g['ts'] and g['ts'] + g['dur'] <= a['ts'] + a['dur'] for a in ev(0, 'gpu_user_annotation'))"
check iter "len(ev(0, 'user_annotation')) == 2 * 6 and {e['name'] for e in ev(0, 'gpu_user_annotation')} == {'iter'}"
check iter "len(ev(0, 'kernel')) == 120 and all(($inside)(g) for g in ev(0, 'kernel'))"
check iter "len(ev(0, 'gpu_memcpy')) == 12 and all((a['pid'], a['tid'], a['ts']) in {(k['pid'], k['tid'], k['ts']) for k in ev(0, 'kernel')} and (a['pid'], a['tid'], a['ts'] + a['dur']) in {(k['pid'], k['tid'], k['ts'] + k['dur']) for k in ev(0, 'kernel')} for a in ev(0, 'gpu_user_annotation'))"
check iter "len({(a['args']['External id'], a['tid']) for a in ev(0, 'gpu_user_annotation')}) == len(ev(0, 'gpu_user_annotation')) <= 12 * 3"
check k "not ev(0, 'gpu_user_annotation') or all(a['pid'] < 1000 for a in ev(0, 'gpu_user_annotation'))"

# loss travels with the data: a window where CUPTI dropped records, never on a stream
"$TESTSRC" -o "$T/lossy.tally" --kernels 300 --idle-at 150:5:40 >/dev/null
expect_rc "export -f kineto, a lossy trace" 0 "$TALLY" export -q -f kineto -o "$T/lossy" "$T/lossy.tally"
check lossy "f[0]['tally']['tally_verdict'] == 'INCOMPLETE'"
check lossy "len(ev(0, 'tally_loss')) >= 1 and all('args' not in e and e['name'].startswith('DATA LOST') for e in ev(0, 'tally_loss'))"

# a process recorded without a rank goes after the highest rank; --force drops stale rank files
"$TESTSRC" -o "$T/job/norank.tally" --kernels 20 >/dev/null
expect_rc "export into an existing directory without --force" 2 "$TALLY" export -q -f kineto -o "$T/k" "$T/job"
expect_rc "export -f kineto --force, with an unranked process" 0 "$TALLY" export -q -f kineto --force -o "$T/k" "$T/job"
check k "sorted(os.listdir(d)) == ['rank-0.json', 'rank-1.json', 'rank-2.json'] and len(ev(2, 'kernel')) == 20 and f[2]['distributedInfo'] == {'rank': 2}"
# a process with no rank and no GPU work beside ranked ones (torchrun's launcher: two API calls
# and two synchronizations, no kernel) is left out, and the export says so: HTA would read its
# file as one more rank of the job
"$TESTSRC" -o "$T/job/launcher.tally" --kernels 0 --syncs 2 >/dev/null
expect_rc "export -f kineto --force, with a launcher" 0 "$TALLY" export -f kineto --force -o "$T/k" "$T/job"
check k "sorted(os.listdir(d)) == ['rank-0.json', 'rank-1.json', 'rank-2.json'] and len(ev(2, 'kernel')) == 20"
grep -q "warning: 1 process(es) with no rank and no GPU work .* left out, with their 2 event(s)" "$T/err" &&
	ok "the launcher left out is said, with its 2 API calls" || bad "launcher: $(cat "$T/err")"
rm "$T/job/launcher.tally"
expect_rc "export -f kineto --force, one rank" 0 "$TALLY" export -q -f kineto --force -o "$T/k" "$T/job/rank1.tally"
check k "sorted(os.listdir(d)) == ['rank-1.json']"

# the format from -o's name when --format is absent
expect_rc "export -o x.json (no -f)" 0 "$TALLY" export -q -o "$T/x.json" "$T/job/rank0.tally"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["traceEvents"] and d["otherData"]["tally_verdict"] else 1)' "$T/x.json" &&
	ok "x.json is Chrome JSON" || bad "x.json is not Chrome JSON"
for ext in sqlite db; do
	expect_rc "export -o x.$ext (no -f)" 0 "$TALLY" export -q -o "$T/x.$ext" "$T/job/rank0.tally"
	[ "$(head -c 15 "$T/x.$ext")" = "SQLite format 3" ] && ok "x.$ext is a SQLite database" || bad "x.$ext is not SQLite"
done
expect_rc "export -o x.txt (no -f): usage" 2 "$TALLY" export -q -o "$T/x.txt" "$T/job/rank0.tally"
grep -q "does not name one (.json, .pftrace, .sqlite, .db): --format" "$T/err" && [ ! -e "$T/x.txt" ] &&
	ok "x.txt: refused, the formats named, nothing written" || bad "x.txt: $(cat "$T/err")"
expect_rc "export -o DIR (no -f): usage" 2 "$TALLY" export -q -o "$T/somedir" "$T/job/rank0.tally"
finish test-kineto
