# Statistics of the GPU cost benchmarks, sourced by bench/gpu-lib.sh (and checked on their own
# by tests/bench/test-stats.sh): awk only, so they run wherever the benchmarks do.

# phase_ratios: "phase_ns I:NS:ON,..." lines in (each interval's median chunk, and whether tally
# recorded in it), one ratio a line out: each interval that is on over the mean of the intervals
# beside it that are off (one or two; none: no ratio)
phase_ratios() {
	awk '{ gsub(/^phase_ns /, ""); n = split($0, a, ","); delete m; delete on
		for (i = 1; i <= n; i++) { split(a[i], f, ":"); m[f[1]] = f[2]; on[f[1]] = f[3] }
		for (k in m) {
			if (!on[k]) continue
			s = 0; c = 0
			if ((k - 1) in m && !on[k - 1]) { s += m[k - 1]; c++ }
			if ((k + 1) in m && !on[k + 1]) { s += m[k + 1]; c++ }
			if (c && s > 0) printf "%.5f\n", m[k] / (s / c)
		} }'
}

# median_interval: numbers in; "median [lo, hi] (n)", [lo, hi] the order statistics around the
# median that hold it with at least 90% confidence whatever the distribution (binomial, p 1/2).
# (Neighbouring intervals' ratios share an interval, so they are not quite independent and the
# interval is a little narrower than it should be: "again" shows the method's real spread.)
# Fewer than 5 numbers hold no such interval (even the smallest and largest of 4: 87.5%):
# "median [min, max] (n, too few)".
median_interval() {
	sort -g | awk '{ v[NR] = $1 } END {
		n = NR; if (n < 1) { print "no pairs"; exit }
		med = (n % 2) ? v[(n + 1) / 2] : (v[n / 2] + v[n / 2 + 1]) / 2
		for (i = 0; i <= n; i++) p[i] = 0
		p[0] = 2 ^ -n; for (i = 1; i <= n; i++) p[i] = p[i - 1] * (n - i + 1) / i
		k = 0
		while (k + 1 < n - k - 1) { c = 0; for (i = k + 2; i <= n - k - 2; i++) c += p[i]
			if (c < 0.90) break; k++ }
		printf "%.3f [%.3f, %.3f] (%d%s)", med, v[k + 1], v[n - k], n, n < 5 ? ", too few" : "" }'
}

# verdict GOAL "median [lo, hi] (n)": where the interval lies against the goal
verdict() {
	echo "$2" | awk -v g="$1" '{ gsub(/[\[\],]/, " "); lo = $2; hi = $3
		print /too few|no pairs/ ? "not settled at " g : (hi <= g) ? "within " g : (lo > g) ? "above " g : "not settled at " g }'
}
