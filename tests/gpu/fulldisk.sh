#!/bin/bash
# A full disk on the GPU machine (issue 21, item 12): PyTorch's loop (tests/gpu/torch_loop.py)
# recorded into an 8 MiB tmpfs with --no-checks, which fills long before the loop ends.  The
# program must run to its end (exit 0), and the trace must end with a final ledger that names
# the failed writes (write_failures, write_errno 28 = ENOSPC), the bytes lost and when (counters
# 65 and 66), the room kept for the close used (counter 67), with no room file left behind; and
# tally record must say "the disk filled" on standard error.  What the program did (its adds)
# bounds what the ledger must account for: kernels in the file plus records lost to the disk.
#
#   tests/gpu/fulldisk.sh [BUILD_DIR] [OUT_DIR]   (defaults: build; OUT_DIR, or $OUT, or a temp)
#
# Needs root (or CAP_SYS_ADMIN) to mount the tmpfs in a mount namespace of its own: skips (77)
# without it, and without a GPU or PyTorch.  About 30 s.  TALLY_FULLDISK_ADDS sets the loop's
# length (default 400000: about 12 MiB of trace).
set -u
. "$(dirname "$0")/../lib.sh"
need_gpu
HERE=$(cd "$(dirname "$0")" && pwd)
B=$(cd "${1:-build}" && pwd)
OUTDIR=${2:-${OUT:-$(mktemp -d /tmp/tally-fulldisk-XXXXXX)}}
mkdir -p "$OUTDIR"
TALLY=$B/src/cli/tally
PY=${PYTHON:-python3}
ADDS=${TALLY_FULLDISK_ADDS:-400000}
T=$(mktemp -d /tmp/tally-fulldisk-run-XXXXXX)
trap 'rm -rf "$T"' EXIT

has_torch || skip "no PyTorch with CUDA"
unshare -m sh -c "mount -t tmpfs -o size=64k tmpfs '$T' && umount '$T'" 2>/dev/null ||
	skip "cannot mount a tmpfs here (unshare -m and mount need root or CAP_SYS_ADMIN)"

# In a mount namespace of its own: the tmpfs is gone when the script inside ends.
cat >"$T/run.sh" <<EOF
mkdir -p "$T/disk"
mount -t tmpfs -o size=8m tmpfs "$T/disk" || exit 90
"$TALLY" record --no-checks -o "$T/disk/torch.tally" -- $PY "$HERE/torch_loop.py" $ADDS \
	>"$OUTDIR/record.out" 2>"$OUTDIR/record.err"
echo \$? >"$OUTDIR/record.rc"
df -k "$T/disk" >"$OUTDIR/df.txt"
ls -la "$T/disk" >"$OUTDIR/ls.txt"
"$TALLY" check --json "$T/disk/torch.tally" >"$OUTDIR/check.json" 2>&1
"$TALLY" check "$T/disk/torch.tally" >"$OUTDIR/check.txt" 2>&1
cp "$T/disk/torch.tally" "$OUTDIR/" 2>/dev/null
umount "$T/disk"
EOF
unshare -m sh "$T/run.sh" >"$OUTDIR/run.log" 2>&1
[ $? -eq 90 ] && { bad "the 8 MiB tmpfs could not be mounted"; finish; }

rc=$(cat "$OUTDIR/record.rc" 2>/dev/null)
[ "$rc" = 0 ] && ok "the program ran to its end on a full disk (exit 0)" ||
	{ bad "tally record exited ${rc:-?}"; cat "$OUTDIR/record.err" "$OUTDIR/run.log"; }
adds=$(sed -n 's/.* adds \([0-9]*\) .*/\1/p' "$OUTDIR/record.out")
[ "$adds" = "$ADDS" ] && ok "the loop made its $ADDS adds" || bad "the loop said adds '${adds}'"
grep -q "the disk filled while recording" "$OUTDIR/record.err" && ok "tally record says the disk filled" ||
	{ bad "tally record does not say the disk filled"; cat "$OUTDIR/record.err"; }
grep -q "tally-room" "$OUTDIR/ls.txt" && bad "a room file was left on the disk" || ok "no room file left"
$PY - "$OUTDIR/check.json" "$ADDS" >"$OUTDIR/ledger.txt" 2>&1 <<'EOF'
import json, sys
adds = int(sys.argv[2])
s = json.load(open(sys.argv[1]))["files"][0]["sections"][0]
c = s["ledger"]["counters"]
k = s["records"]
print("final", s["ledger"]["final"], "write_failures", c["write_failures"], "write_errno",
      c["write_errno"], "bytes_lost", c["bytes_lost"], "records_lost_write", c["records_lost_write"],
      "first/last failed at", c["write_first_failed_at"], c["write_last_failed_at"],
      "close_reserve_used", c["close_reserve_used"], "kernels in the file", k.get("kernel"),
      "output_fs", s.get("output_fs"), "close_reserve", s.get("close_reserve"))
checks = [
    ("a final ledger", s["ledger"]["final"]),
    ("write_failures > 0, write_errno 28 (ENOSPC)", c["write_failures"] > 0 and c["write_errno"] == 28),
    ("bytes and records lost counted", c["bytes_lost"] > 0 and c["records_lost_write"] > 0),
    ("when: first and last failure times", 0 < c["write_first_failed_at"] <= c["write_last_failed_at"]),
    ("the room kept for the close was used", c["close_reserve_used"] == 1),
    ("64 KiB kept on tmpfs", s.get("output_fs") == "tmpfs" and s.get("close_reserve") == 65536),
    ("fewer kernels in the file than adds: the disk did fill", k.get("kernel", 0) < adds),
    ("INCOMPLETE, with write_failures among the reasons",
     s["verdict"] == "INCOMPLETE" and any(r.get("counter") == "write_failures" or
                                          "write_failures" in r.get("text", "") for r in s["reasons"])),
]
bad = 0
for name, good in checks:
    print(("ok   " if good else "FAIL ") + name)
    bad += not good
sys.exit(1 if bad else 0)
EOF
if [ $? -eq 0 ]; then
	ok "the final ledger names the failure, the bytes lost and when: $(head -1 "$OUTDIR/ledger.txt")"
else
	bad "the final ledger (below)"
	cat "$OUTDIR/ledger.txt"
	head -c 4000 "$OUTDIR/check.txt"
fi
grep -q "the disk filled (ENOSPC) from +" "$OUTDIR/check.txt" && ok "tally check says when the disk filled" ||
	bad "tally check does not say when the disk filled"
echo "outputs in $OUTDIR"
finish
