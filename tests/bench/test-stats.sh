#!/bin/bash
# The statistics the GPU cost benchmarks print (bench/stats.sh), on inputs whose answer is known
# by construction: the within-run ratios, the median's distribution-free interval, the verdict.
#   tests/bench/test-stats.sh
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib.sh"
. "$HERE/../../bench/stats.sh"

# Each interval that is on over the mean of the intervals beside it that are off: 10 over 11
# alone (9 is not there), 12 over 11 and 13, 14 over 13 alone (15 is on too), 4 over 3 and 5;
# 15 has no neighbour that is off.
got=$(printf 'phase_ns 10:100:1,12:110:1,11:100:0,13:100:0,14:105:1,15:90:1\nphase_ns 3:50:0,4:60:1,5:70:0\n' |
	phase_ratios | sort | tr '\n' ' ')
[ "$got" = "1.00000 1.00000 1.05000 1.10000 " ] && ok "phase ratios: 1.00, 1.10, 1.05 and 1.00, none for an interval without a neighbour that is off" ||
	bad "phase ratios: got '$got'"

# 1..10: the median 5.5; the 2nd and 9th values hold it with 97.9% (the 3rd and 8th: 89.1%).
got=$(seq 1 10 | median_interval)
[ "$got" = "5.500 [2.000, 9.000] (10)" ] && ok "median interval of 1..10: $got" || bad "median interval of 1..10: got '$got'"
# 1..20: the 6th and 15th (95.9%; the 7th and 14th: 88.5%)
got=$(seq 1 20 | median_interval)
[ "$got" = "10.500 [6.000, 15.000] (20)" ] && ok "median interval of 1..20: $got" || bad "median interval of 1..20: got '$got'"
got=$(seq 1 4 | median_interval)
[ "$got" = "2.500 [1.000, 4.000] (4, too few)" ] && ok "4 numbers hold no 90% interval: $got" || bad "4 numbers: got '$got'"
[ "$(verdict 1.05 "0.990 [0.980, 1.000] (4, too few)")" = "not settled at 1.05" ] &&
	ok "too few pairs settle nothing" || bad "too few pairs: $(verdict 1.05 "0.990 [0.980, 1.000] (4, too few)")"
got=$(seq 1 5 | median_interval)
[ "$got" = "3.000 [1.000, 5.000] (5)" ] && ok "5 numbers: the smallest and largest hold the median with 93.75%: $got" || bad "5 numbers: got '$got'"
got=$(printf '' | median_interval)
[ "$got" = "no pairs" ] && ok "no ratios: says so" || bad "no ratios: got '$got'"
[ "$(verdict 1.05 "no pairs")" = "not settled at 1.05" ] && ok "no ratios settle nothing" ||
	bad "no ratios: $(verdict 1.05 "no pairs")"

for c in "within 1.05:1.020 [1.000, 1.040] (30)" "above 1.05:1.100 [1.060, 1.150] (30)" \
	"not settled at 1.05:1.040 [1.000, 1.070] (30)"; do
	want=${c%%:*} in=${c#*:}
	got=$(verdict 1.05 "$in")
	[ "$got" = "$want" ] && ok "verdict for $in: $got" || bad "verdict for $in: want '$want', got '$got'"
done

# A run whose speed drifts by up to 40% from second to second, slowly against the intervals, with
# a recorder that costs 3% in the intervals it is on (about half, at random): the drift cancels,
# the 3% stays.
got=$(awk 'BEGIN { srand(7); printf "phase_ns "
	for (k = 100; k < 200; k++) {
		speed = 1 + 0.4 * sin(k / 9) ^ 2; on = rand() < 0.5
		printf "%s%d:%.0f:%d", (k > 100 ? "," : ""), k, 10000 * speed * (on ? 1.03 : 1) * (1 + (rand() - 0.5) * 0.01), on
	}
	print "" }' | phase_ratios | median_interval)
lo=$(echo "$got" | awk '{ gsub(/[\[\],]/, " "); print $2 }') hi=$(echo "$got" | awk '{ gsub(/[\[\],]/, " "); print $3 }')
awk -v l="$lo" -v h="$hi" 'BEGIN { exit !(l <= 1.03 && h >= 1.03 && h - l < 0.02) }' &&
	ok "a 3% cost under a 40% drift: $got" || bad "a 3% cost under a 40% drift: got '$got'"
[ "$(verdict 1.05 "$got")" = "within 1.05" ] && ok "and it is within 1.05" || bad "verdict: $(verdict 1.05 "$got")"
finish bench-stats
