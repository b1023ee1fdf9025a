/* SPDX-License-Identifier: MIT */
/*
 * tally report: draws the page from the two JSON blocks tally wrote into it (tally-stats: the
 * verdict and the stats reports; tally-timeline: lanes, buckets, exact events, ledger, gaps).
 * Names come from traces and are hostile: they only ever reach the page through textContent or
 * the canvas, never as markup.
 */
"use strict";

/* ---- small helpers ------------------------------------------------------------------------ */

function el(tag, attrs, text) {
	const e = document.createElement(tag);
	if (attrs)
		for (const k of Object.keys(attrs)) {
			if (k === "class") e.className = attrs[k];
			else e.setAttribute(k, attrs[k]);
		}
	if (text !== undefined && text !== null) e.textContent = String(text);
	return e;
}

function readJson(id) {
	const node = document.getElementById(id);
	return JSON.parse(node.textContent);
}

function fmtNs(ns) {
	const a = Math.abs(ns);
	if (a >= 1e9) return (ns / 1e9).toFixed(3) + " s";
	if (a >= 1e6) return (ns / 1e6).toFixed(3) + " ms";
	if (a >= 1e3) return (ns / 1e3).toFixed(2) + " \u00b5s";
	return Math.round(ns) + " ns";
}

function fmtCount(n) {
	return Number(n).toLocaleString("en-US");
}

function fmtBytes(b) {
	const units = ["B", "KiB", "MiB", "GiB", "TiB"];
	let i = 0;
	while (b >= 1024 && i < units.length - 1) {
		b /= 1024;
		i++;
	}
	return (i ? b.toFixed(1) : String(b)) + " " + units[i];
}

/* A stable colour per name: the same kernel has the same colour everywhere. */
function hue(name) {
	let h = 2166136261;
	for (let i = 0; i < name.length; i++) h = Math.imul(h ^ name.charCodeAt(i), 16777619);
	return ((h >>> 0) % 360);
}

function nameColor(name, light) {
	return "hsl(" + hue(name) + ",62%," + (light ? "72%" : "52%") + ")";
}

function reportError(where, err) {
	const box = document.getElementById("tally-errors");
	const text = where + ": " + (err && err.stack ? err.stack : String(err));
	window.tallyErrors.push(text);
	box.textContent += text + "\n";
	box.hidden = false;
}

/* Each part draws on its own: one failing must not take the others with it. */
function part(where, fn) {
	try {
		fn();
	} catch (err) {
		reportError(where, err);
	}
}

const STATS = readJson("tally-stats");
const TL = readJson("tally-timeline");
const SECS = TL.sections;
const LANE_COLORS = { gpu: "#2f6fdf", api: "#8a5cd0", nvtx: "#d98a1f", device: "#1f9d8a", samples: "#5b8c2a",
	osrt: "#b3261e" };

/* tally keeps one budget of lanes for the page; what came after shares one lane per kind, of
 * no one rank (its sec, and its device or thread, are OTHER) */
const OTHER = 4294967295;
const OTHER_LABEL = "more ranks, streams and threads, together";
/* charts per section drawn at most: the others are in the ranks table */
const MAX_CHARTS = 32;

function secLabel(i) {
	const s = SECS[i];
	return i === OTHER ? OTHER_LABEL : s ? s.label : "section " + i;
}

function secShort(i) {
	const s = SECS[i];
	if (i === OTHER) return "others";
	if (!s) return "section " + i;
	return s.rank ? s.rank : "pid " + s.pid;
}

/* ---- verdict ------------------------------------------------------------------------------ */

function whenLine(w) {
	const b = (w.begin_s >= 0 ? "+" : "") + w.begin_s.toFixed(3);
	const e = (w.end_s >= 0 ? "+" : "") + w.end_s.toFixed(3);
	/* as tally check says it: from the section's own session start, not the page's origin */
	return "when: " + b + " s .. " + e + " s: " + w.count + " (from its own session start)";
}

function reasonItem(input, sec, r) {
	const li = el("li");
	li.appendChild(el("div", { class: "text", title: r.code }, "- " + r.text));
	for (const w of r.windows || []) li.appendChild(el("div", { class: "when" }, whenLine(w)));
	if (r.hint) li.appendChild(el("div", { class: "fix" }, "fix: " + r.hint));
	return li;
}

function renderVerdict() {
	const box = document.getElementById("verdict");
	const complete = STATS.verdict === "COMPLETE";
	const banner = el("div", { class: "banner " + (complete ? "complete" : "incomplete"), id: "verdict-banner" });
	banner.appendChild(el("span", { class: "word", id: "verdict-word" }, STATS.verdict));
	banner.appendChild(el("span", { class: "why" }, complete
		? "every record handed to tally is in the trace: gaps are idle time, counts are exact"
		: "data was lost: a gap is not idle time, a count is a lower bound"));
	const list = el("ul", { class: "reasons", id: "verdict-reasons" });
	for (const input of STATS.inputs) {
		for (const d of input.damage || [])
			list.appendChild(el("li", { class: "text" }, input.path + ": " + d.kind + " at byte " + d.offset));
		for (const sec of input.sections) {
			if (sec.verdict === "COMPLETE") continue;
			const li = el("li");
			const who = "pid " + sec.pid + " on " + sec.host + (sec.rank ? " (" + sec.rank + ")" : "");
			li.appendChild(el("div", { class: "sec" }, input.path + " [" + sec.file_section + "] " + who + ": INCOMPLETE"));
			const sub = el("ul", { class: "reasons" });
			for (const r of sec.reasons) sub.appendChild(reasonItem(input, sec, r));
			li.appendChild(sub);
			list.appendChild(li);
		}
	}
	banner.appendChild(list);
	box.appendChild(banner);
	const facts = el("div", { class: "facts" });
	const add = (k, v) => {
		const span = el("span");
		span.appendChild(el("b", null, k + " "));
		span.appendChild(document.createTextNode(v));
		facts.appendChild(span);
	};
	add("records", fmtCount(STATS.records));
	add("files", String(STATS.inputs.length));
	add("processes", String(SECS.length));
	add("span", fmtNs(TL.span_ns - TL.first_ns) + " of records, from +" + fmtNs(TL.first_ns) + " after " +
		STATS.time_origin);
	if (STATS.untimed_records) add("untimed records", fmtCount(STATS.untimed_records));
	box.appendChild(facts);
	const paths = STATS.inputs.map((i) => i.path).join("  ");
	document.getElementById("subtitle").textContent = paths + "  \u2014  " + STATS.verdict;
	document.title = "tally report: " + STATS.verdict + " \u2014 " + paths;
}

/* ---- time axes: loss windows and gaps are drawn on all of them ----------------------------- */

function lossWindows(sec) {
	return TL.loss_windows.filter((w) => sec === undefined || w.sec === sec);
}

/* A loss window over (nearly) the whole run would paint every chart red and hide it: such a
 * window is drawn as a band along the top instead, and the page says why (wholeRunLoss). */
function coversRun(w) {
	return w.end - w.begin >= 0.9 * Math.max(TL.span_ns, 1);
}

function wholeRunLoss() {
	return TL.loss_windows.filter(coversRun);
}

/* uPlot plugin: shade loss windows (red) and, for busy charts, idle and unproven stretches. */
function shadePlugin(sec, gaps) {
	return {
		hooks: {
			drawAxes: [(u) => {
				const ctx = u.ctx;
				const top = u.bbox.top, h = u.bbox.height;
				ctx.save();
				ctx.fillStyle = "rgba(179,38,30,0.16)";
				for (const w of lossWindows(sec)) {
					const x0 = u.valToPos(w.begin / 1e9, "x", true);
					const x1 = Math.max(u.valToPos(w.end / 1e9, "x", true), x0 + 2);
					ctx.fillRect(x0, top, x1 - x0, coversRun(w) ? Math.min(6, h) : h);
				}
				for (const g of gaps || []) {
					const x0 = u.valToPos(g[1] / 1e9, "x", true);
					const x1 = Math.max(u.valToPos(g[2] / 1e9, "x", true), x0 + 1);
					ctx.fillStyle = g[3] ? hatch(ctx) : g[5] === BUSY_OUTSIDE ? "rgba(230,140,20,0.28)" : "rgba(120,130,140,0.22)";
					ctx.fillRect(x0, top, x1 - x0, h);
				}
				ctx.restore();
			}],
		},
	};
}

let hatchPattern = null;
function hatch(ctx) {
	if (hatchPattern) return hatchPattern;
	const c = document.createElement("canvas");
	c.width = c.height = 8;
	const g = c.getContext("2d");
	g.strokeStyle = "rgba(179,38,30,0.75)";
	g.lineWidth = 2;
	g.beginPath();
	g.moveTo(0, 8);
	g.lineTo(8, 0);
	g.stroke();
	hatchPattern = ctx.createPattern(c, "repeat");
	return hatchPattern;
}

/* x axes are in seconds; their ticks in the unit the span calls for */
function timeAxis(spanS) {
	const unit = spanS < 2e-3 ? ["\u00b5s", 1e6] : spanS < 2 ? ["ms", 1e3] : ["s", 1];
	return {
		label: "time since " + STATS.time_origin + " (" + unit[0] + ")", size: 40,
		values: (u, splits) => splits.map((v) => Number((v * unit[1]).toPrecision(6)).toString()),
	};
}

const CHARTS = [];

/* Every chart's time axis is the same: 0 to the run's span, with the same room left and right of
 * the plot, so that a moment is at the same place on each (the timeline's too). */
const RUN_T0 = Math.min(0, ...TL.ledgers.flatMap((l) => l.snaps.map((s) => s.t)));
const RUN_T1 = Math.max(TL.span_ns, 1, ...TL.ledgers.flatMap((l) => l.snaps.map((s) => s.t)));
const SPAN_S = (RUN_T1 - RUN_T0) / 1e9;
/* the timeline's row labels are as wide as the charts' left axes */
const LEFT_AXIS = 210, RIGHT_AXIS = 64;

function xScale() {
	return { time: false, range: () => [RUN_T0 / 1e9, RUN_T1 / 1e9] };
}

/* An axis's label takes LABEL_SIZE of its width, whether it has one or not. */
const LABEL_SIZE = 30;

function leftAxis(label) {
	return { label, size: LEFT_AXIS - LABEL_SIZE, labelSize: LABEL_SIZE, space: 18 };
}

/* A value axis from 0 to a round number above the highest value: a short chart still has its
 * scale (a constant clock or a single spike of memory gets ticks, not just "0"). */
function zeroUp(max) {
	if (!(max > 0)) return [0, 1];
	const p = Math.pow(10, Math.floor(Math.log10(max)));
	for (const m of [1, 1.5, 2, 2.5, 3, 4, 5, 6, 8, 10])
		if (max <= m * p) return [0, m * p];
	return [0, 10 * p];
}

/* Charts of values over time: tall enough for a scale of three ticks and a whole axis label. */
const CHART_H = 170;

/* The right-hand axis a chart has, or an empty one of the same width. */
function rightAxis(opts) {
	return Object.assign({ side: 1, size: RIGHT_AXIS - LABEL_SIZE, labelSize: LABEL_SIZE, grid: { show: false } },
		opts || { scale: "y", label: " ", values: (u, splits) => splits.map(() => ""), ticks: { show: false } });
}

/* Legends show the values at the highest point of the first curve until a pointer moves over
 * the chart, and go back to them when it leaves: never "--". */
function legendAtPeak() {
	let peak = null;
	const find = (u) => {
		const ys = u.data[1] || [];
		let best = 0;
		for (let i = 0; i < ys.length; i++) if (ys[i] !== null && ys[i] > (ys[best] || 0)) best = i;
		return ys.length ? best : null;
	};
	return {
		hooks: {
			ready: [(u) => {
				peak = find(u);
				if (peak !== null) u.setLegend({ idx: peak });
			}],
			setCursor: [(u) => {
				if (u.cursor.idx === null && peak !== null) u.setLegend({ idx: peak });
			}],
		},
	};
}

/* As wide as the timeline's canvas (its frame takes a pixel each side) */
function chartWidth(container) {
	return Math.max(480, (container.clientWidth || document.body.clientWidth - 90) - 2);
}

/* A report of tally stats, as the page's JSON holds it: its rows, or [] */
function report(name) {
	const r = STATS.reports.find((x) => x.name === name);
	return r ? r.rows : [];
}

/* gpu_time_breakdown's row of a section's device (the PID and device say which section) */
function breakdownRow(sec, device) {
	const s = SECS[sec];
	return report("gpu_time_breakdown").find((r) => s && r.PID === s.pid && r.Device === device &&
		(r.Rank === (s.rank || "-"))) || null;
}

/* ---- ledger ------------------------------------------------------------------------------- */

function perSlice(snaps, key) {
	let prev = 0;
	return snaps.map((s) => {
		const d = s[key] - prev;
		prev = s[key];
		return d;
	});
}

/* The first MAX_CHARTS of items, those that fail pick() first, in their order; and a note of
 * how many were left out. */
function chartable(items, pick, what) {
	if (items.length <= MAX_CHARTS) return [items, null];
	const first = items.filter((x) => !pick(x)).concat(items.filter(pick)).slice(0, MAX_CHARTS);
	const chosen = items.filter((x) => first.includes(x));
	return [chosen, el("p", { class: "note" }, (items.length - chosen.length) + " more " + what +
		" not drawn (the ranks table lists each process, its verdict and its GPU busy time).")];
}

function renderLedger() {
	const box = document.getElementById("ledger");
	const [ledgers, more] = chartable(TL.ledgers, (led) => SECS[led.sec] && SECS[led.sec].verdict === "COMPLETE",
		"processes' ledgers");
	if (more) box.appendChild(more);
	for (const led of ledgers) {
		const snaps = led.snaps.slice().sort((a, b) => a.t - b.t);
		box.appendChild(el("div", { class: "chart-title" }, secLabel(led.sec) + ": " + snaps.length + " ledger snapshot(s)"));
		if (led.flush) {
			const f = led.flush;
			box.appendChild(el("div", { class: "flush", id: "flush-" + led.sec },
				"closing flush by " + f.path + ", " + fmtNs(f.ns) + ", " + (f.completed ? "completed" : "NOT completed") +
				", " + fmtCount(f.records) + " records delivered by it" + (f.watchdog ? ", watchdog fired" : "") +
				(f.signal ? ", signal " + f.signal : "")));
		} else {
			box.appendChild(el("div", { class: "flush" }, "no closing ledger: the recording did not close (killed?)"));
		}
		if (!snaps.length) continue;
		const last = snaps[snaps.length - 1];
		box.appendChild(el("div", { class: "flush", id: "ledger-last-" + led.sec },
			(last.final ? "final" : "last") + " ledger: records parsed " + fmtCount(last.parsed) + ", dropped by CUPTI " +
			fmtCount(last.dropped) + ", bad timestamps " + fmtCount(last.bad_time) + ", buffers refused " + fmtCount(last.refused) +
			", pool high-water " + last.pool_hw + "/" + last.pool_cap + ", write failures " + fmtCount(last.write_fail) +
			", " + fmtBytes(last.bytes) + " written"));
		const xs = snaps.map((s) => s.t / 1e9);
		const data = [xs, perSlice(snaps, "parsed"), perSlice(snaps, "dropped"), perSlice(snaps, "loss"),
			snaps.map((s) => s.pool_hw), perSlice(snaps, "write_fail")];
		const div = el("div");
		box.appendChild(div);
		/* per-slice counts are bars; one slice alone still gets a visible width */
		const bars = uPlot.paths.bars({ size: [0.6, 60, 4], align: -1 });
		const opts = {
			width: chartWidth(box), height: SECS.length > 2 ? CHART_H : 190,
			plugins: [shadePlugin(led.sec), legendAtPeak()],
			scales: { x: xScale(), pool: { range: (u, a, b) => [0, Math.max(b, snaps[0].pool_cap || 1)] } },
			axes: [timeAxis(SPAN_S), leftAxis("records"), rightAxis({ scale: "pool", label: "pool buffers" })],
			series: [{ label: "time (s)" },
				{ label: "records parsed", stroke: "#2f6fdf", fill: "rgba(47,111,223,0.35)", width: 1, paths: bars },
				{ label: "dropped by CUPTI", stroke: "#b3261e", fill: "rgba(179,38,30,0.6)", width: 1, paths: bars },
				{ label: "all loss", stroke: "#e07b00", width: 1, dash: [4, 3] },
				{ label: "pool high-water", stroke: "#1f9d8a", scale: "pool", width: 1.5 },
				{ label: "write failures", stroke: "#6b1d8f", width: 1.5 }],
		};
		CHARTS.push(new uPlot(opts, data, div));
	}
}

/* ---- buckets: dense arrays, coarser levels on demand ---------------------------------------- */

const NB = TL.buckets;
const LANES = TL.lanes.map((l, index) => {
	const busy = new Float64Array(NB), count = new Uint32Array(NB), top = new Uint32Array(NB);
	let b = 0;
	for (let k = 0; k < l.i.length; k++) {
		b += l.i[k];
		busy[b] = l.busy[k];
		count[b] = l.n[k];
		top[b] = l.top[k];
	}
	return { index, sec: l.sec, type: l.type, device: l.device, stream: l.stream, tid: l.tid,
		events: l.events, busyNs: l.busy_ns, levels: [{ busy, count, top }], ev: [], maxDur: 0, depth: 1 };
});

/* level k: buckets 2^k times wider; the longest contributor names a bucket */
function level(lane, k) {
	while (lane.levels.length <= k) {
		const p = lane.levels[lane.levels.length - 1];
		const n = Math.ceil(p.busy.length / 2);
		const busy = new Float64Array(n), count = new Uint32Array(n), top = new Uint32Array(n);
		for (let i = 0; i < n; i++) {
			const a = 2 * i, b = a + 1 < p.busy.length ? a + 1 : a;
			busy[i] = p.busy[a] + (b !== a ? p.busy[b] : 0);
			count[i] = p.count[a] + (b !== a ? p.count[b] : 0);
			top[i] = p.busy[b] > p.busy[a] ? p.top[b] : p.top[a] || p.top[b];
		}
		lane.levels.push({ busy, count, top });
	}
	return lane.levels[k];
}

/* Exact events, per lane, sorted by start; NVTX ranges get a nesting depth. */
(function loadEvents() {
	const ev = TL.events;
	for (let i = 0; i + 4 < ev.length; i += 5) {
		const lane = LANES[ev[i]];
		if (!lane) continue;
		lane.ev.push({ start: ev[i + 1], dur: ev[i + 2], name: ev[i + 3], corr: ev[i + 4], lane: lane.index, depth: 0 });
		if (ev[i + 2] > lane.maxDur) lane.maxDur = ev[i + 2];
	}
	/* a device's row shows the work of all its streams */
	for (const dev of LANES.filter((l) => l.type === "device"))
		for (const g of LANES.filter((l) => l.type === "gpu" && l.sec === dev.sec && l.device === dev.device)) {
			for (const e of g.ev) dev.ev.push(Object.assign({}, e, { lane: dev.index }));
			dev.maxDur = Math.max(dev.maxDur, g.maxDur);
		}
	for (const lane of LANES) {
		lane.ev.sort((a, b) => a.start - b.start || b.dur - a.dur);
		if (lane.type !== "nvtx") continue;
		const ends = [];
		for (const e of lane.ev) {
			while (ends.length && ends[ends.length - 1] <= e.start) ends.pop();
			e.depth = ends.length;
			ends.push(e.start + e.dur);
			if (ends.length > lane.depth) lane.depth = Math.min(ends.length, 6);
		}
	}
})();

/* Exact events by (section, correlation id): a launch and the GPU work it made */
const BY_CORR = new Map();
for (const lane of LANES) {
	if (lane.type !== "gpu" && lane.type !== "api") continue;
	for (const e of lane.ev) {
		if (!e.corr) continue;
		const key = lane.sec + ":" + e.corr;
		if (!BY_CORR.has(key)) BY_CORR.set(key, []);
		BY_CORR.get(key).push(e);
	}
}

const EXACT = TL.exact_windows;
const WINDOW_NS = TL.bucket_ns * TL.window_buckets;

function windowIndex(t) {
	return Math.min(Math.max(Math.floor(t / WINDOW_NS), 0), EXACT.length - 1);
}

function windowExact(t) {
	return EXACT.charCodeAt(windowIndex(t)) === 49;
}

/* Prefix sums over windows: exact events, and windows left to buckets, before each window. */
const WINDOW_SUMS = (() => {
	const n = EXACT.length, events = new Float64Array(n + 1), bucketed = new Uint32Array(n + 1);
	for (let i = 0; i + 4 < TL.events.length; i += 5) events[windowIndex(TL.events[i + 1]) + 1]++;
	for (let w = 0; w < n; w++) {
		events[w + 1] += events[w];
		bucketed[w + 1] = bucketed[w] + (EXACT.charCodeAt(w) === 49 ? 0 : 1);
	}
	return { events, bucketed };
})();

const EXACT_DRAW_MAX = 30000; /* events drawn one by one per frame, at most */

/* A view whose every window kept its events, and not too many of them, is drawn exactly. */
function viewIsExact() {
	const w0 = windowIndex(view.t0), w1 = windowIndex(view.t1);
	return WINDOW_SUMS.bucketed[w1 + 1] === WINDOW_SUMS.bucketed[w0] &&
		WINDOW_SUMS.events[w1 + 1] - WINDOW_SUMS.events[w0] <= EXACT_DRAW_MAX;
}

/* ---- GPU busy ----------------------------------------------------------------------------- */

const POINTS = 1000;

function busySeries(lane) {
	const k = Math.max(0, Math.ceil(Math.log2(NB / POINTS)));
	const lv = level(lane, k);
	const width = TL.bucket_ns * Math.pow(2, k);
	const xs = [], ys = [];
	for (let i = 0; i < lv.busy.length; i++) {
		xs.push((i + 0.5) * width / 1e9);
		ys.push(Math.min(100, 100 * lv.busy[i] / width));
	}
	return [xs, ys];
}

function renderBusy() {
	const box = document.getElementById("busy");
	const perStream = document.getElementById("busy-streams").checked;
	box.textContent = "";
	const all = LANES.filter((l) => l.type === "device");
	if (!all.length) {
		box.appendChild(el("p", { class: "note" }, "No GPU records in these traces."));
		return;
	}
	const [devices, more] = chartable(all, (l) => l.sec !== OTHER, "devices");
	if (more) box.appendChild(more);
	for (const dev of devices) {
		const streams = LANES.filter((l) => l.type === "gpu" && l.sec === dev.sec && l.device === dev.device)
			.sort((a, b) => a.stream - b.stream);
		/* gpu_gaps' own gaps and classes: the same figures as tally stats */
		const gaps = TL.gaps.filter((g) => g[0] === dev.index);
		const active = gaps.filter((g) => g[5] === BUSY_OUTSIDE).reduce((s, g) => s + g[2] - g[1], 0);
		const bd = breakdownRow(dev.sec, dev.device);
		/* the shared lane of the devices past the lane budget is no one device: no figures of one */
		const shared = dev.sec === OTHER;
		box.appendChild(el("div", shared ? { class: "chart-title", "data-shared": "1" } :
			{ class: "chart-title", "data-sec": dev.sec, "data-device": dev.device, "data-idle-ns": bd ? bd["Idle (ns)"] : "" },
			shared ? OTHER_LABEL + ": the GPUs past the page's lanes, " + fmtCount(dev.events) + " GPU records" :
			secLabel(dev.sec) + ", GPU " + dev.device + ": " + streams.length + " stream(s), " +
			fmtCount(dev.events) + " GPU records; idle " + (bd ? fmtNs(bd["Idle (ns)"]) + " of " + fmtNs(bd["Span (ns)"]) +
			(bd["Idle Unproven (ns)"] ? ", of it unproven " + fmtNs(bd["Idle Unproven (ns)"]) : "") : "?") +
			(active ? "; busy outside the trace (SM or GR Active above 1%) " + fmtNs(active) + ": other work ran" : "")));
		const [xs, ys] = busySeries(dev);
		const data = [xs, ys];
		const series = [{ label: "time (s)" }, { label: "GPU " + dev.device + " busy %", stroke: "#1f9d8a", fill: "rgba(31,157,138,0.18)", width: 1.5 }];
		if (perStream)
			for (const s of streams) {
				data.push(busySeries(s)[1]);
				series.push({ label: "stream " + s.stream, stroke: "hsl(" + (s.stream * 47 % 360) + ",60%,45%)", width: 1 });
			}
		const div = el("div");
		box.appendChild(div);
		CHARTS.push(new uPlot({
			width: chartWidth(box), height: SECS.length > 2 ? 120 : 170, plugins: [shadePlugin(dev.sec, gaps), legendAtPeak()],
			scales: { x: xScale(), y: { range: [0, 100] } },
			axes: [timeAxis(SPAN_S), leftAxis("busy %"), rightAxis()],
			series,
		}, data, div));
		renderMetrics(box, dev, gaps);
	}
	renderMetricTable(box);
}

/* ---- GPU metrics, under each device's busy curve ------------------------------------------- */

const METRICS = TL.metrics || { bucket_ns: 0, curves: [] };
const METRIC_COLORS = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2",
	"#17becf", "#7f7f7f", "#bcbd22"];

function metricCurves(dev) {
	return METRICS.curves.filter((c) => c.sec === dev.sec && c.device === dev.device);
}

/* 1.92e12 bytes/s -> "1.92 TB/s"; percentages with one decimal */
function fmtMetric(v, unit) {
	if (v === null || v === undefined || !isFinite(v)) return "-";
	if (unit === "%") return v.toFixed(1) + "%";
	const base = unit === "bytes/s" ? "B/s" : unit || "";
	const steps = [[1e12, "T"], [1e9, "G"], [1e6, "M"], [1e3, "k"]];
	for (const [f, p] of steps)
		if (Math.abs(v) >= f) return (v / f).toPrecision(3) + " " + p + base;
	return Number(v.toPrecision(3)) + (base ? " " + base : "");
}

/* Why a device of a process has no curves: the gpu_metrics_sum row that says so. */
function metricsElsewhere(dev) {
	const rep = STATS.reports.find((r) => r.name === "gpu_metrics_sum");
	const pid = SECS[dev.sec] ? SECS[dev.sec].pid : -1;
	const row = rep ? rep.rows.find((r) => r.PID === pid && r.Device === dev.device && r.Metric === "-") : null;
	return row ? row.Name : null;
}

/* One chart per unit: percentages on 0..100, rates and clocks on their own scale. */
function renderMetrics(box, dev, gaps) {
	const curves = metricCurves(dev);
	if (!curves.length) {
		const why = metricsElsewhere(dev) || (METRICS.left_out ? "no curve here: the page keeps the curves of the first " +
			METRICS.kept + " metric series (" + METRICS.left_out + " more; tally stats -r gpu_metrics_sum lists them all)" : null);
		if (why) box.appendChild(el("p", { class: "note metrics-note" }, "GPU metrics: " + why));
		return;
	}
	const units = [...new Set(curves.map((c) => c.unit))];
	const w = METRICS.bucket_ns;
	const xs = curves[0].values.map((v, i) => (i + 0.5) * w / 1e9);
	for (const unit of units) {
		const mine = curves.filter((c) => c.unit === unit);
		const data = [xs].concat(mine.map((c) => c.values));
		const series = [{ label: "time (s)" }].concat(mine.map((c, k) => ({
			label: c.label, stroke: METRIC_COLORS[k % METRIC_COLORS.length], width: 1,
			value: (u, v) => fmtMetric(v, unit),
		})));
		box.appendChild(el("div", { class: "chart-title metrics-title" }, "GPU " + dev.device + " metrics (" +
			(unit || "value") + "): " + mine.map((c) => c.label + " mean " + fmtMetric(c.mean, unit)).join(", ")));
		const yr = unit === "%" ? [0, 100] : zeroUp(Math.max(...mine.flatMap((c) => c.values.filter((v) => v !== null))));
		const div = el("div", { class: "metrics-chart", "data-unit": unit, "data-y-max": yr[1] });
		box.appendChild(div);
		CHARTS.push(new uPlot({
			width: chartWidth(box), height: CHART_H, plugins: [shadePlugin(dev.sec, gaps), legendAtPeak()],
			scales: { x: xScale(), y: { range: yr } },
			axes: [timeAxis(SPAN_S), Object.assign(leftAxis(unit || "value"),
				{ values: (u, splits) => splits.map((v) => fmtMetric(v, unit)) }), rightAxis()],
			series,
		}, data, div));
	}
}

/* gpu_metrics_sum, below the charts. */
function renderMetricTable(box) {
	const rep = STATS.reports.find((r) => r.name === "gpu_metrics_sum");
	if (!rep || !rep.rows.length) return;
	box.appendChild(el("h3", null, rep.title + " (" + rep.name + "): " + rep.rows.length + " row(s)"));
	const cols = Object.keys(rep.rows[0]);
	box.appendChild(dataTable(cols, rep.rows.map((r) => cols.map((c) => r[c])), "table-" + rep.name));
}

/* the charts follow the window's width */
window.addEventListener("resize", () => {
	for (const c of CHARTS)
		if (c.root.isConnected) c.setSize({ width: chartWidth(c.root.parentNode.parentNode), height: c.height });
});

/* ---- timeline ----------------------------------------------------------------------------- */

const ROW = { header: 20, device: 20, gpu: 16, api: 14, nvtx: 13, samples: 12, osrt: 12 };
/* processes shown as their devices only (a click on the band toggles); many ranks start folded */
const COLLAPSED = new Set(SECS.length > 4 ? SECS.map((s, i) => i) : []);
const LABEL_W = LEFT_AXIS, AXIS_H = 24;

function laneName(l, name) {
	return (l.type === "gpu" || l.type === "device" ? l.device : l.tid) === OTHER ? "(more threads/streams, together)" : name;
}

function buildRows() {
	const rows = [];
	let y = AXIS_H;
	const push = (r, h) => {
		r.y = y;
		r.h = h;
		y += h;
		rows.push(r);
	};
	const bySec = new Map();
	for (const l of LANES) {
		if (!bySec.has(l.sec)) bySec.set(l.sec, []);
		bySec.get(l.sec).push(l);
	}
	for (const s of SECS.map((x, i) => i).concat(bySec.has(OTHER) ? [OTHER] : [])) {
		const mine = bySec.get(s) || [];
		if (!mine.length) continue;
		const folded = COLLAPSED.has(s);
		push({ kind: "header", sec: s, label: (folded ? "\u25b8 " : "\u25be ") + secLabel(s) }, ROW.header);
		const devs = mine.filter((l) => l.type === "device").sort((a, b) => a.device - b.device);
		for (const d of devs)
			push({ kind: "lane", lane: d, label: laneName(d, "GPU " + d.device + " (all streams)") }, ROW.device);
		if (folded) continue;
		for (const d of devs) {
			for (const g of mine.filter((l) => l.type === "gpu" && l.device === d.device).sort((a, b) => a.stream - b.stream))
				push({ kind: "lane", lane: g, label: laneName(g, "  stream " + g.stream) }, ROW.gpu);
		}
		for (const a of mine.filter((l) => l.type === "api").sort((p, q) => p.tid - q.tid))
			push({ kind: "lane", lane: a, label: laneName(a, threadLabel(a) + " CUDA API") }, ROW.api);
		for (const n of mine.filter((l) => l.type === "nvtx").sort((p, q) => p.tid - q.tid))
			push({ kind: "lane", lane: n, label: laneName(n, threadLabel(n) + " NVTX") }, ROW.nvtx * n.depth);
		for (const h of hostLanes(mine))
			push({ kind: "lane", lane: h, label: laneName(h, threadLabel(h) + (h.type === "samples" ? " samples" : " waits")) },
				ROW[h.type]);
	}
	return { rows, height: y + 6 };
}

/* ---- the host under the GPU lanes: each thread's samples and blocking calls ------------------ */

/* A host lane's thread: its name and kernel tid where the trace's THREADS chunk names it. */
function threadOf(lane) {
	return (TL.threads || []).find((t) => t.sec === lane.sec && t.id === lane.tid);
}

/* One label of a thread everywhere, as tally stats writes it: "MainThread (tid 2001)"; an API or
 * NVTX lane's CUPTI id that THREADS does not tie to a tid, "CUPTI thread N"; else "tid N". */
function threadLabel(lane) {
	const t = threadOf(lane);
	if (t) return t.name ? t.name + " (tid " + t.tid + ")" : "tid " + t.tid;
	return (lane.type === "api" || lane.type === "nvtx" ? "CUPTI thread " : "tid ") + lane.tid;
}

/* The main thread first, then by thread; a thread's samples above its waits. */
function hostLanes(mine) {
	const order = (l) => { const t = threadOf(l); return t && t.main ? -1 : t ? t.tid : l.tid; };
	return mine.filter((l) => l.type === "samples" || l.type === "osrt")
		.sort((p, q) => order(p) - order(q) || p.tid - q.tid || (p.type === "samples" ? -1 : 1));
}

/* gpu_idle_why's rows, by gap: what each thread did while the GPU sat idle (made once: hovering
 * asks for it at every move). */
let IDLE_WHY = null;
function idleWhy() {
	if (IDLE_WHY) return IDLE_WHY;
	IDLE_WHY = new Map();
	for (const r of report("gpu_idle_why")) {
		if (!IDLE_WHY.has(r.Gap)) IDLE_WHY.set(r.Gap, { head: r, rows: [] });
		if (r.What !== "gap") IDLE_WHY.get(r.Gap).rows.push(r);
	}
	return IDLE_WHY;
}

/* The explanation of a section's device gap [start, end): gpu_idle_why lists the same gaps
 * (gpu_gaps' device gaps) from the same origin (TL.t0_ns is stats' time_base_ns). */
function gapWhy(sec, device, start, end) {
	const pid = SECS[sec] ? SECS[sec].pid : -1;
	for (const g of idleWhy().values())
		if (g.head.PID === pid && g.head.Device === device && g.head["Start (ns)"] === start &&
			g.head["Duration (ns)"] === end - start) return g;
	return null;
}

function whyLines(g, max) {
	const lines = [g.head.Class + ": " + g.head.Detail];
	const byThread = new Map();
	for (const r of g.rows) {
		if (!byThread.has(r.Thread)) byThread.set(r.Thread, []);
		byThread.get(r.Thread).push(r);
	}
	for (const [thread, rows] of byThread) {
		const top = rows.slice().sort((a, b) => b["Time (ns)"] - a["Time (ns)"]).slice(0, 2);
		lines.push(thread + ": " + top.map((r) => r.What + " " + r["Share (% of gap)"].toFixed(0) + "% " + r.Detail).join("; "));
	}
	return lines.slice(0, max);
}

const IDLE_COLORS = { "host wait": "#d98a1f", "kernel wait": "#8a5cd0", other: "#b9c2cc" };
/* gpu_gaps' class of a gap the GPU metrics show busy: not idle time, in every output */
const BUSY_OUTSIDE = "busy outside trace";

/* gpu_idle_breakdown: per process and device, its idle time by class (the same idle time as
 * gpu_time_breakdown's), and the host stacks sampled most in the largest class. */
function renderIdleBreakdown(box) {
	const devs = new Map();
	for (const r of report("gpu_idle_breakdown")) {
		const key = r.PID + "/" + r.Device;
		if (!devs.has(key)) devs.set(key, { head: r, classes: [], stacks: [], outside: null });
		if (r.Category === BUSY_OUTSIDE) devs.get(key).outside = r;
		else (r.Category in IDLE_COLORS ? devs.get(key).classes : devs.get(key).stacks).push(r);
	}
	for (const d of devs.values()) {
		const idle = d.classes.reduce((sum, r) => sum + r["Idle Time (ns)"], 0);
		const line = partsLine(rankPid(d.head) + ", GPU " + d.head.Device + ": idle " + fmtNs(idle),
			d.classes.map((r) => [r.Category, IDLE_COLORS[r.Category], r["Idle Time (ns)"]]), idle, "why",
			{ "data-pid": d.head.PID, "data-device": d.head.Device, "data-idle-total": idle });
		if (d.outside)
			line.appendChild(el("div", { class: "note why-outside" }, fmtNs(d.outside["Idle Time (ns)"]) + " more in " +
				d.outside.Gaps + " gap(s) the GPU metrics show busy outside the trace: not idle, and not counted here"));
		for (const s of d.stacks)
			line.appendChild(el("div", { class: "note why-stack" }, s.Thread + ", " + s.Category + ", " + s.Samples +
				" samples (" + s["Samples (% of thread's)"].toFixed(0) + "% of the thread's): " + s.Stack));
		box.appendChild(line);
	}
}

function renderIdleWhy() {
	const box = document.getElementById("idle-why");
	const gaps = idleWhy();
	/* every device gap of 1 ms or more the timeline draws has its explanation on hover (finer
	 * ones are drawn, gpu_gaps' too, but gpu_idle_why lists from 1 ms): say how many do */
	const devGaps = TL.gaps.filter((g) => LANES[g[0]] && LANES[g[0]].type === "device");
	box.setAttribute("data-explained", devGaps.filter((g) => gapWhy(LANES[g[0]].sec, LANES[g[0]].device, g[1], g[2])).length +
		"/" + devGaps.length);
	renderIdleBreakdown(box);
	if (!gaps.size) {
		box.appendChild(el("p", { class: "note" }, "no GPU gap of 1 ms or more"));
		return;
	}
	for (const [n, g] of gaps) {
		const h = g.head, div = el("div", { class: "why-gap", "data-gap": String(n), "data-class": h.Class });
		div.appendChild(el("h3", null, "Gap " + n + ": " + fmtNs(h["Duration (ns)"]) + " on GPU " + h.Device + " of pid " +
			h.PID + " at " + fmtNs(h["Start (ns)"]) + " \u2014 " + h.Class + (h.Proof === "idle" ? "" : " (" +
			(h.Proof === BUSY_OUTSIDE ? BUSY_OUTSIDE : "UNPROVEN") + ")")));
		div.appendChild(el("p", { class: "note" }, h.Detail));
		if (g.rows.length) {
			const cols = ["Thread", "What", "Count", "Time (ns)", "Share (% of gap)", "Detail"];
			div.appendChild(dataTable(cols, g.rows.map((r) => cols.map((c) => r[c])), "why-gap-" + n));
		}
		box.appendChild(div);
	}
}

const view = { t0: RUN_T0, t1: RUN_T1, selected: null, hover: null };

function tlGeometry(canvas) {
	const w = canvas.clientWidth;
	return { w, plotW: Math.max(w - LABEL_W - RIGHT_AXIS, 10) };
}

function xOf(t, plotW) {
	return LABEL_W + (t - view.t0) / (view.t1 - view.t0) * plotW;
}

function niceStep(span, target) {
	const raw = span / target, p = Math.pow(10, Math.floor(Math.log10(raw)));
	for (const m of [1, 2, 5, 10]) if (raw <= m * p) return m * p;
	return 10 * p;
}

function drawAxis(ctx, plotW, height) {
	const step = niceStep(view.t1 - view.t0, plotW / 110);
	ctx.fillStyle = "#eef1f5";
	ctx.fillRect(0, 0, LABEL_W + plotW, AXIS_H);
	ctx.font = "11px system-ui, sans-serif";
	ctx.textBaseline = "middle";
	for (let t = Math.ceil(view.t0 / step) * step; t <= view.t1; t += step) {
		const x = xOf(t, plotW);
		ctx.fillStyle = "#d9dee5";
		ctx.fillRect(x, AXIS_H, 1, height - AXIS_H);
		ctx.fillStyle = "#5d6875";
		ctx.fillText(fmtNs(t), x + 3, AXIS_H / 2);
	}
}

function laneLevel(plotW) {
	const bucketPx = TL.bucket_ns / (view.t1 - view.t0) * plotW;
	if (bucketPx >= 2 || viewIsExact()) return { detailed: true, k: 0 };
	return { detailed: false, k: Math.min(Math.ceil(Math.log2(1.5 / bucketPx)), 24) };
}

function drawBuckets(ctx, row, plotW, k, skipExact) {
	const lane = row.lane, lv = level(lane, k), width = TL.bucket_ns * Math.pow(2, k);
	const first = Math.max(0, Math.floor(view.t0 / width)), last = Math.min(lv.busy.length - 1, Math.floor(view.t1 / width));
	const h = row.h - 3;
	for (let b = first; b <= last; b++) {
		if (!lv.busy[b] && !lv.count[b]) continue;
		const t = b * width;
		if (skipExact && windowExact(t)) continue;
		const x0 = xOf(t, plotW), x1 = xOf(t + width, plotW);
		const frac = Math.min(1, lv.busy[b] / width);
		const bh = Math.max(2, frac * h);
		const name = TL.names[lv.top[b]] || "";
		ctx.fillStyle = lane.type === "gpu" || lane.type === "device" ? nameColor(name, lane.type === "device") : LANE_COLORS[lane.type];
		ctx.fillRect(x0, row.y + row.h - 1 - bh, Math.max(x1 - x0, 1), bh);
	}
}

function firstEvent(lane, t) {
	let lo = 0, hi = lane.ev.length;
	while (lo < hi) {
		const mid = (lo + hi) >> 1;
		if (lane.ev[mid].start < t) lo = mid + 1;
		else hi = mid;
	}
	return lo;
}

function visibleEvents(lane, from, to) {
	const out = [];
	for (let i = firstEvent(lane, from - lane.maxDur); i < lane.ev.length && lane.ev[i].start <= to; i++)
		if (lane.ev[i].start + lane.ev[i].dur >= from) out.push(lane.ev[i]);
	return out;
}

function eventBox(row, e, plotW) {
	const x0 = xOf(e.start, plotW), x1 = Math.max(xOf(e.start + e.dur, plotW), x0 + 1);
	const h = row.lane.type === "nvtx" ? ROW.nvtx - 2 : row.h - 4;
	const y = row.lane.type === "nvtx" ? row.y + 1 + e.depth * ROW.nvtx : row.y + 2;
	return { x0, x1, y, h };
}

function drawLabelled(ctx, lane, b, name) {
	ctx.fillRect(b.x0, b.y, b.x1 - b.x0, b.h);
	if (b.x1 - b.x0 <= 40) return;
	ctx.save();
	ctx.beginPath();
	ctx.rect(b.x0, b.y, b.x1 - b.x0, b.h);
	ctx.clip();
	ctx.fillStyle = lane.type === "nvtx" ? "#1d232b" : "#fff";
	ctx.fillText(name, b.x0 + 3, b.y + b.h / 2);
	ctx.restore();
}

/* Events narrower than a pixel add their time to their pixel column, drawn as tall as the share
 * of the column they fill: a run of tiny kernels shows how busy the GPU was, neither a solid block
 * nor a hairline. */
function drawColumns(ctx, row, cols, plotW) {
	const pxNs = (view.t1 - view.t0) / plotW, h = row.h - 4;
	ctx.fillStyle = LANE_COLORS[row.lane.type];
	for (let i = 0; i < cols.length; i++) {
		if (!cols[i]) continue;
		const bh = Math.max(1, Math.min(1, cols[i] / pxNs) * h);
		ctx.fillRect(LABEL_W + i, row.y + 2 + h - bh, 1, bh);
	}
}

function drawEvents(ctx, row, plotW) {
	const lane = row.lane, pxNs = (view.t1 - view.t0) / plotW;
	const cols = new Float64Array(Math.ceil(plotW) + 1);
	ctx.font = "10px system-ui, sans-serif";
	ctx.textBaseline = "middle";
	for (const e of visibleEvents(lane, view.t0, view.t1)) {
		if (lane.type === "nvtx" && e.depth >= lane.depth) continue;
		if (e.dur < pxNs && lane.type !== "nvtx") {
			const c = Math.floor((e.start - view.t0) / pxNs);
			if (c >= 0 && c < cols.length) cols[c] += e.dur;
			continue;
		}
		const b = eventBox(row, e, plotW), name = TL.names[e.name] || "";
		const gpu = lane.type === "gpu" || lane.type === "device";
		ctx.fillStyle = gpu ? nameColor(name) : lane.type === "nvtx" ? nameColor(name, true) : LANE_COLORS[lane.type];
		drawLabelled(ctx, lane, b, name);
	}
	drawColumns(ctx, row, cols, plotW);
}

function drawShades(ctx, rows, plotW) {
	for (const w of TL.loss_windows) {
		const mine = rows.filter((r) => r.kind === "lane" && r.lane.sec === w.sec);
		if (!mine.length) continue;
		const x0 = xOf(w.begin, plotW), x1 = Math.max(xOf(w.end, plotW), x0 + 2);
		const y0 = mine[0].y, y1 = mine[mine.length - 1].y + mine[mine.length - 1].h;
		ctx.fillStyle = "rgba(179,38,30,0.14)";
		ctx.fillRect(x0, y0, x1 - x0, y1 - y0);
	}
	for (const g of TL.gaps) {
		const row = rows.find((r) => r.kind === "lane" && r.lane.index === g[0]);
		if (!row) continue;
		const x0 = xOf(g[1], plotW), x1 = xOf(g[2], plotW);
		if (x1 < LABEL_W || x0 > LABEL_W + plotW) continue;
		ctx.fillStyle = g[3] ? hatch(ctx) : "rgba(120,130,140,0.25)";
		ctx.fillRect(x0, row.y + row.h - 5, x1 - x0, 4);
	}
}

/* Flows: the selected event's launch and GPU work, joined by correlation id. */
function flowPartners(sel) {
	if (!sel || !sel.corr) return [];
	const mine = LANES[sel.lane];
	const all = BY_CORR.get(mine.sec + ":" + sel.corr) || [];
	/* a device row's kernel is its stream's kernel: its partner is the launch, not that twin */
	return all.filter((e) => e.lane !== sel.lane && !(e.start === sel.start && e.dur === sel.dur && mine.type === "device"));
}

function drawFlows(ctx, rows, plotW) {
	const sel = view.selected;
	if (!sel) return;
	const rowOf = (e) => rows.find((r) => r.kind === "lane" && r.lane.index === e.lane);
	const from = rowOf(sel);
	if (!from) return;
	const a = eventBox(from, sel, plotW);
	ctx.strokeStyle = "#1d232b";
	ctx.lineWidth = 2;
	ctx.strokeRect(a.x0 - 1, a.y - 1, a.x1 - a.x0 + 2, a.h + 2);
	for (const e of flowPartners(sel)) {
		const r = rowOf(e);
		if (!r) continue;
		const b = eventBox(r, e, plotW);
		ctx.strokeStyle = "#b3261e";
		ctx.lineWidth = 1.5;
		ctx.beginPath();
		ctx.moveTo(a.x0, a.y + a.h / 2);
		ctx.bezierCurveTo(a.x0 + 30, a.y + a.h / 2, b.x0 - 30, b.y + b.h / 2, b.x0, b.y + b.h / 2);
		ctx.stroke();
		ctx.strokeRect(b.x0 - 1, b.y - 1, b.x1 - b.x0 + 2, b.h + 2);
	}
}

function drawLabels(ctx, rows) {
	ctx.fillStyle = "#fff";
	ctx.fillRect(0, AXIS_H, LABEL_W, ctx.canvas.height);
	ctx.textBaseline = "middle";
	for (const r of rows) {
		if (r.kind === "header") {
			ctx.fillStyle = "#1d232b";
			ctx.fillRect(0, r.y, ctx.canvas.width, r.h);
			ctx.fillStyle = "#fff";
			ctx.font = "600 12px system-ui, sans-serif";
			ctx.fillText(r.label, 8, r.y + r.h / 2);
			continue;
		}
		ctx.fillStyle = LANE_COLORS[r.lane.type];
		ctx.fillRect(0, r.y + 2, 4, r.h - 4);
		ctx.fillStyle = "#1d232b";
		ctx.font = (r.lane.type === "device" ? "600 " : "") + "11px system-ui, sans-serif";
		ctx.fillText(r.label, 10, r.y + Math.min(r.h, 18) / 2);
		ctx.fillStyle = "#eef1f5";
		ctx.fillRect(0, r.y + r.h - 1, ctx.canvas.width, 1);
	}
}

const TLS = { rows: null, height: 0 };

function drawTimeline() {
	const canvas = document.getElementById("tl-canvas");
	const dpr = window.devicePixelRatio || 1;
	const { w, plotW } = tlGeometry(canvas);
	canvas.width = Math.round(w * dpr);
	canvas.height = Math.round(TLS.height * dpr);
	canvas.style.height = TLS.height + "px";
	const ctx = canvas.getContext("2d");
	/* where the time axis is, for the browser test: the charts' plot areas are the same */
	canvas.setAttribute("data-plot-left", String(LABEL_W));
	canvas.setAttribute("data-plot-width", String(Math.round(plotW)));
	ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
	ctx.clearRect(0, 0, w, TLS.height);
	drawAxis(ctx, plotW, TLS.height);
	const lod = laneLevel(plotW);
	ctx.save();
	ctx.beginPath();
	ctx.rect(LABEL_W, AXIS_H, plotW, TLS.height);
	ctx.clip();
	for (const r of TLS.rows) {
		if (r.kind !== "lane") continue;
		/* zoomed in far: exact events where the window kept them, buckets elsewhere */
		drawBuckets(ctx, r, plotW, lod.k, lod.detailed);
		if (lod.detailed) drawEvents(ctx, r, plotW);
	}
	drawShades(ctx, TLS.rows, plotW);
	drawFlows(ctx, TLS.rows, plotW);
	ctx.restore();
	drawLabels(ctx, TLS.rows);
	canvas.setAttribute("data-rows", TLS.rows.map((r) => r.label.trim()).join("\n"));
	document.getElementById("tl-range").textContent = fmtNs(view.t0) + " \u2013 " + fmtNs(view.t1) +
		" (" + fmtNs(view.t1 - view.t0) + (lod.detailed ? ", exact events" : ", buckets of " + fmtNs(TL.bucket_ns * Math.pow(2, lod.k))) + ")";
}

/* #view=FROM_NS,TO_NS (ns since the first record) opens the timeline there; zooming keeps it
 * current, so a link or a bookmark shows the same stretch. */
function readViewFromUrl() {
	const m = /view=(-?[0-9.e+]+),(-?[0-9.e+]+)/.exec(window.location.hash);
	if (m && Number(m[2]) > Number(m[1])) {
		view.t0 = Number(m[1]);
		view.t1 = Number(m[2]);
	}
	/* #select=CORR: the API call with that correlation id, selected as a click would */
	const s = /select=([0-9]+)/.exec(window.location.hash);
	if (s) select(LANES.filter((l) => l.type === "api").flatMap((l) => l.ev).find((e) => e.corr === Number(s[1])) || null);
}

function select(e) {
	view.selected = e;
	document.getElementById("tl-detail").textContent = e ? detailText(e) : "";
}

function writeViewToUrl() {
	if (window.history && window.history.replaceState)
		try {
			window.history.replaceState(null, "", "#view=" + Math.round(view.t0) + "," + Math.round(view.t1));
		} catch (e) {
			/* some browsers refuse it for file:// pages: the link just does not follow */
		}
}

function zoom(factor, centerT) {
	const span = Math.max(Math.min((view.t1 - view.t0) * factor, TL.span_ns * 1.05 + 1), 100);
	const c = centerT === undefined ? (view.t0 + view.t1) / 2 : centerT;
	const left = (c - view.t0) / (view.t1 - view.t0);
	view.t0 = c - left * span;
	view.t1 = view.t0 + span;
	writeViewToUrl();
	drawTimeline();
}

function hit(canvas, ev) {
	const rect = canvas.getBoundingClientRect();
	const x = ev.clientX - rect.left, y = ev.clientY - rect.top;
	const { plotW } = tlGeometry(canvas);
	const row = TLS.rows.find((r) => y >= r.y && y < r.y + r.h);
	if (!row || row.kind !== "lane" || x < LABEL_W) return { x, y, row };
	const t = view.t0 + (x - LABEL_W) / plotW * (view.t1 - view.t0);
	const lod = laneLevel(plotW);
	const slop = 3 / plotW * (view.t1 - view.t0);
	if (lod.detailed && windowExact(t)) {
		let best = null;
		for (const e of visibleEvents(row.lane, t - slop, t + slop)) {
			const b = eventBox(row, e, plotW);
			if (y >= b.y && y <= b.y + b.h && (!best || e.dur < best.dur)) best = e;
		}
		return { x, y, row, t, event: best };
	}
	const width = TL.bucket_ns * Math.pow(2, lod.k), lv = level(row.lane, lod.k), b = Math.floor(t / width);
	if (b < 0 || b >= lv.busy.length) return { x, y, row, t };
	return { x, y, row, t, bucket: { start: b * width, width, busy: lv.busy[b], count: lv.count[b], top: TL.names[lv.top[b]] || "" } };
}

/* The idle stretch of a device or stream row at time t, as a line for the tooltip */
function gapLine(lane, t) {
	const g = TL.gaps.find((x) => x[0] === lane.index && x[1] <= t && t < x[2]);
	if (!g) return "";
	const why = lane.type === "device" ? gapWhy(lane.sec, lane.device, g[1], g[2]) : null;
	return "\n" + (g[3] ? "UNPROVEN idle " : "idle ") + fmtNs(g[2] - g[1]) + ": " + g[4] +
		(why ? "\nwhy: " + whyLines(why, 5).join("\n  ") : "");
}

function tipText(h) {
	const lane = h.row.lane;
	const where = secShort(lane.sec) + ", " + h.row.label.trim() + gapLine(lane, h.t);
	if (h.event) {
		let text = (TL.names[h.event.name] || "(no name)") + "\n" + where + "\nstart " + fmtNs(h.event.start) +
			", duration " + fmtNs(h.event.dur) + (h.event.corr ? "\ncorrelation id " + h.event.corr : "");
		for (const p of flowPartners(h.event).slice(0, 3))
			text += "\n" + (LANES[p.lane].type === "api" ? "launched by " : "ran as ") + (TL.names[p.name] || "") +
				", " + fmtNs(Math.abs(p.start - h.event.start)) + (p.start >= h.event.start ? " later" : " earlier");
		return text;
	}
	if (h.bucket && (h.bucket.count || h.bucket.busy))
		return where + "\n" + fmtNs(h.bucket.start) + " + " + fmtNs(h.bucket.width) + ": " + fmtCount(h.bucket.count) +
			" event(s), busy " + (100 * Math.min(1, h.bucket.busy / h.bucket.width)).toFixed(1) + "%\nlongest: " + h.bucket.top;
	const gap = gapLine(lane, h.t);
	return gap ? where : null;
}

function detailText(sel) {
	const partners = flowPartners(sel);
	let text = "selected: " + (TL.names[sel.name] || "(no name)") + " at " + fmtNs(sel.start) + ", " + fmtNs(sel.dur);
	for (const p of partners) {
		const lane = LANES[p.lane], api = lane.type === "api";
		text += "\n  " + (api ? "launched by " : "ran as ") + (TL.names[p.name] || "") + " at " + fmtNs(p.start) +
			" (" + fmtNs(p.dur) + "), " + (api ? threadLabel(lane) : "GPU " + lane.device + " stream " + lane.stream) +
			", " + fmtNs(Math.abs(p.start - sel.start)) + (p.start >= sel.start ? " later" : " earlier");
	}
	if (sel.corr && !partners.length) text += "\n  no partner with correlation id " + sel.corr + " among the exact events";
	return text;
}

function timeAt(canvas, clientX) {
	const rect = canvas.getBoundingClientRect();
	return view.t0 + (clientX - rect.left - LABEL_W) / tlGeometry(canvas).plotW * (view.t1 - view.t0);
}

function showTip(canvas, tip, ev) {
	const h = hit(canvas, ev), text = h.row && h.row.kind === "lane" ? tipText(h) : null;
	tip.hidden = !text;
	if (text) {
		tip.textContent = text;
		tip.style.left = Math.min(h.x + 14, canvas.clientWidth - 300) + "px";
		tip.style.top = h.y + 14 + "px";
	}
}

/* Drag pans; shift+drag selects a stretch to zoom into; a click selects an event. */
function dragTo(canvas, drag, ev) {
	const dx = ev.clientX - drag.x;
	if (Math.abs(dx) > 2) drag.moved = true;
	if (drag.brush) {
		drawTimeline();
		const ctx = canvas.getContext("2d"), rect = canvas.getBoundingClientRect();
		ctx.fillStyle = "rgba(47,111,223,0.18)";
		ctx.fillRect(Math.min(drag.x, ev.clientX) - rect.left, AXIS_H, Math.abs(dx), TLS.height);
		return;
	}
	const dt = dx / tlGeometry(canvas).plotW * (drag.t1 - drag.t0);
	view.t0 = drag.t0 - dt;
	view.t1 = drag.t1 - dt;
	drawTimeline();
}

function toggleSection(sec) {
	if (COLLAPSED.has(sec)) COLLAPSED.delete(sec);
	else COLLAPSED.add(sec);
	const built = buildRows();
	TLS.rows = built.rows;
	TLS.height = built.height;
}

function dragEnd(canvas, drag, ev) {
	const h = drag.moved ? null : hit(canvas, ev);
	if (h && h.row && h.row.kind === "header") {
		toggleSection(h.row.sec);
	} else if (h) {
		select(h.event || null);
	} else if (drag.brush) {
		const a = timeAt(canvas, drag.x), b = timeAt(canvas, ev.clientX);
		if (Math.abs(b - a) >= 100) {
			view.t0 = Math.min(a, b);
			view.t1 = Math.max(a, b);
		}
	}
	writeViewToUrl();
	drawTimeline();
}

function timelineMouse(canvas, tip) {
	let drag = null;
	canvas.addEventListener("wheel", (ev) => {
		ev.preventDefault();
		const h = hit(canvas, ev);
		zoom(ev.deltaY > 0 ? 1.25 : 0.8, h.t !== undefined ? h.t : undefined);
	}, { passive: false });
	canvas.addEventListener("mousedown", (ev) => {
		drag = { x: ev.clientX, t0: view.t0, t1: view.t1, moved: false, brush: ev.shiftKey };
	});
	window.addEventListener("mouseup", (ev) => {
		if (drag) dragEnd(canvas, drag, ev);
		drag = null;
	});
	canvas.addEventListener("mousemove", (ev) => {
		tip.hidden = !!drag;
		if (drag) dragTo(canvas, drag, ev);
		else showTip(canvas, tip, ev);
	});
}

function setupTimeline() {
	const canvas = document.getElementById("tl-canvas"), tip = document.getElementById("tl-tip");
	const built = buildRows();
	TLS.rows = built.rows;
	TLS.height = built.height;
	timelineMouse(canvas, tip);
	canvas.addEventListener("mouseleave", () => { tip.hidden = true; });
	document.getElementById("tl-zoom-in").addEventListener("click", () => zoom(0.5));
	document.getElementById("tl-zoom-out").addEventListener("click", () => zoom(2));
	document.getElementById("tl-reset").addEventListener("click", () => {
		view.t0 = RUN_T0;
		view.t1 = RUN_T1;
		drawTimeline();
	});
	window.addEventListener("resize", drawTimeline);
	readViewFromUrl();
	drawTimeline();
}

/* #selftest: wheel, drag and shift+drag as a person would, the outcome in data-selftest (the
 * browser test has no mouse; these are the same handlers) */
function selfTest() {
	const canvas = document.getElementById("tl-canvas"), rect = canvas.getBoundingClientRect();
	const x = rect.left + LABEL_W + 200, y = rect.top + AXIS_H + 30;
	const mouse = (type, cx, shift, target) => (target || canvas).dispatchEvent(
		new MouseEvent(type, { clientX: cx, clientY: y, shiftKey: !!shift, bubbles: true }));
	const span0 = view.t1 - view.t0;
	canvas.dispatchEvent(new WheelEvent("wheel", { deltaY: -100, clientX: x, clientY: y, bubbles: true, cancelable: true }));
	const zoomed = view.t1 - view.t0 < span0;
	const t0 = view.t0;
	mouse("mousedown", x);
	mouse("mousemove", x - 60);
	mouse("mouseup", x - 60, false, window);
	const panned = view.t0 > t0;
	const want = (view.t1 - view.t0) * 100 / tlGeometry(canvas).plotW;
	mouse("mousedown", x, true);
	mouse("mousemove", x + 100, true);
	mouse("mouseup", x + 100, true, window);
	const brushed = Math.abs(view.t1 - view.t0 - want) <= want * 0.01;
	mouse("mousemove", x + 20);
	document.body.setAttribute("data-selftest", "zoom=" + zoomed + " pan=" + panned + " brush=" + brushed);
}

/* ---- diagnosis ------------------------------------------------------------------------------ */

function renderDiagnosis() {
	const box = document.getElementById("diagnosis");
	const rows = report("diagnosis");
	if (!STATS.reports.some((r) => r.name === "diagnosis")) {
		box.appendChild(el("p", { class: "note" }, "The diagnosis was not computed."));
		return;
	}
	if (!rows.length) {
		box.appendChild(el("p", { id: "diagnosis-none" },
			"Nothing crosses a rule's threshold: no finding (the rules and thresholds: docs/diagnosis.md)."));
		return;
	}
	renderStepBars(box);
	const list = el("ol", { class: "findings", id: "diagnosis-list" });
	for (const f of rows) {
		const li = el("li", { class: "finding", "data-rule": f.Rule, "data-cost-ns": f["Cost (ns)"] });
		const head = el("div", { class: "finding-head" });
		head.appendChild(el("span", { class: "rule" }, f.Rule));
		head.appendChild(el("span", { class: "figure" }, f.Finding));
		if (f["Cost (ns)"]) head.appendChild(el("span", { class: "cost" }, "costs " + fmtNs(f["Cost (ns)"]) +
			(f["Cost (% of GPU time)"] !== null ? " (" + f["Cost (% of GPU time)"].toFixed(1) + "% of GPU time)" : "")));
		li.appendChild(head);
		for (const k of ["Proof", "Where", "Why", "Try"])
			if (f[k]) {
				const line = el("div", { class: "finding-" + k.toLowerCase() });
				line.appendChild(el("b", null, k.toLowerCase()));
				line.appendChild(document.createTextNode(" " + f[k]));
				li.appendChild(line);
			}
		list.appendChild(li);
	}
	box.appendChild(list);
}

/* What bounds the steps, per process and device: step_bound's "all" rows (the classes add up to
 * the step), each a bar of its classes' shares, its verdict first. */
const STEP_CLASSES = ["GPU", "Comm", "Data", "Launch", "Sync", "Wait", "Other"];

function stepVerdict(pid) {
	const r = report("step_bound").find((x) => x.Step === "all" && x.PID === pid);
	return r ? r.Verdict + "-bound " + r[r.Verdict === "comm" ? "Comm (% of step)" :
		STEP_CLASSES.find((c) => c.toLowerCase() === r.Verdict) + " (% of step)"].toFixed(1) + "%" : "";
}

function renderStepBars(box) {
	const all = report("step_bound").filter((r) => r.Step === "all");
	if (!all.length) return;
	const wrap = el("div", { id: "step-bars" });
	for (const r of all) {
		const line = el("div", { class: "step-bar-line", "data-pid": r.PID, "data-verdict": r.Verdict });
		line.appendChild(el("span", { class: "step-bar-who" }, (r.Rank !== "-" ? r.Rank + " " : "") + "pid " + r.PID +
			" GPU " + r.Device + ": " + stepVerdict(r.PID) + " (median step " + fmtNs(r["Duration (ns)"]) + ")"));
		const bar = el("span", { class: "step-bar" });
		for (const c of STEP_CLASSES) {
			const v = r[c + " (% of step)"] || 0;
			if (v < 0.5) continue;
			const seg = el("span", { class: "step-seg step-" + c.toLowerCase(), title: c + " " + v.toFixed(1) + "%" },
				v >= 8 ? c.toLowerCase() + " " + v.toFixed(0) + "%" : "");
			seg.style.width = v.toFixed(2) + "%";
			bar.appendChild(seg);
		}
		line.appendChild(bar);
		wrap.appendChild(line);
	}
	box.appendChild(wrap);
}

/* ---- ranks -------------------------------------------------------------------------------- */

function stragglerText() {
	const all = report("rank_steps").find((r) => r.Step === "all");
	if (!all) return "Steps: no NVTX range of a step in these traces (name one with tally report --range NAME): no straggler named.";
	return "Steps: " + all.Verdict + (all.Verdict.startsWith("straggler") ? "" : ".");
}

function renderRanks() {
	if (SECS.length < 2) {
		const link = document.getElementById("nav-ranks");
		if (link) link.remove(); /* one process: nothing to set side by side */
		return;
	}
	document.getElementById("ranks-section").hidden = false;
	const box = document.getElementById("ranks");
	const all = report("rank_steps").find((r) => r.Step === "all");
	const named = all && all.Verdict.startsWith("straggler") ? all["Slowest Rank"] : null;
	box.appendChild(el("p", { id: "straggler" }, stragglerText()));
	const max = Math.max(...SECS.map((x) => x.gpu_busy_ns), 1);
	const rows = SECS.map((x, i) => [x.rank || "-", x.label, x.gpu_busy_ns, x.gpu_idle_ns, x.gpu_idle_unproven_ns,
		x.compute_ns, x.comm_exposed_ns, x.copy_exposed_ns, x.top_kernel, x.top_kernel_ns, x.loss, x.verdict,
		stepVerdict(x.pid), i]);
	const cols = ["Rank", "Process", "GPU busy (ns)", "GPU idle (ns)", "Idle unproven (ns)", "Compute (ns)",
		"Communication (ns)", "Copy/Memset (ns)", "Top kernel", "Top kernel time (ns)", "Records lost", "Verdict",
		"Steps"];
	box.appendChild(dataTable(cols, rows, "ranks-table", (tr, row) => {
		if (named && row[0] === named) tr.className = "slowest";
		const cell = tr.children[2], bar = el("span", { class: "bar" });
		bar.style.width = Math.round(80 * row[2] / max) + "px";
		cell.insertBefore(bar, cell.firstChild);
	}));
}

/* ---- where the time went -------------------------------------------------------------------- */

const PARTS = [["Compute", "#2f6fdf"], ["Communication", "#d98a1f"], ["Copy/Memset", "#8a5cd0"],
	["Busy Outside Trace", "#e68c14"], ["Idle proven", "#b9c2cc"], ["Idle unproven", "#b3261e"]];

function partNs(r, name) {
	if (name === "Idle proven") return r["Idle Proven (ns)"];
	if (name === "Idle unproven") return r["Idle Unproven (ns)"];
	return r[name + " (ns)"];
}

/* A line: its label, then a bar of a whole cut into parts ([name, color, ns]), each part's share
 * and time in the legend.  cls names the bar's and the segments' classes (cls-bar, cls-seg). */
function partsLine(label, parts, whole, cls, attrs) {
	const line = el("div", { class: "bd-line" });
	line.appendChild(el("div", { class: "bd-label" }, label));
	const bar = el("div", Object.assign({ class: cls + "-bar" }, attrs));
	const legend = el("div", { class: "bd-legend" });
	for (const [name, color, ns] of parts) {
		const pct = whole ? 100 * ns / whole : 0;
		const seg = el("span", { class: cls + "-seg", title: name + " " + fmtNs(ns), "data-part": name, "data-ns": ns });
		seg.style.width = pct + "%";
		seg.style.background = color;
		bar.appendChild(seg);
		const item = el("span", { class: "bd-item" });
		const sw = el("span", { class: "legend-swatch" });
		sw.style.background = color;
		item.appendChild(sw);
		item.appendChild(document.createTextNode(name + " " + pct.toFixed(1) + "% (" + fmtNs(ns) + ")"));
		legend.appendChild(item);
	}
	line.appendChild(bar);
	line.appendChild(legend);
	return line;
}

function rankPid(r) {
	return (r.Rank !== "-" ? r.Rank + ", " : "") + "pid " + r.PID;
}

function renderBreakdown() {
	const box = document.getElementById("breakdown");
	const rows = report("gpu_time_breakdown");
	if (!rows.length) {
		box.appendChild(el("p", { class: "note" }, "No GPU work in these traces."));
		return;
	}
	for (const r of rows) {
		const line = partsLine(rankPid(r) + ", GPU " + r.Device + ": " + fmtNs(r["Span (ns)"]),
			PARTS.map(([name, color]) => [name, color, partNs(r, name)]), r["Span (ns)"], "bd",
			{ "data-pid": r.PID, "data-device": r.Device });
		if (r.Note) line.appendChild(el("div", { class: "note" }, r.Note));
		box.appendChild(line);
	}
	const ov = report("comm_compute_overlap");
	box.appendChild(el("p", { id: "overlap-line" }, ov.length
		? ov.map((r) => (r.Rank !== "-" ? r.Rank : "pid " + r.PID) + " GPU " + r.Device + ": " + r["Overlap (% of communication)"].toFixed(1) +
			"% of " + fmtNs(r["Communication (ns)"]) + " of communication overlapped by compute").join("; ")
		: "No communication kernels (NCCL and the like, by name) in these traces."));
}

/* ---- queues and memory: curves on the common time axis --------------------------------------- */

function stepSeries(t0, width, values) {
	const xs = [], ys = [];
	for (let i = 0; i < values.length; i++) {
		xs.push((t0 + (i + 0.5) * width) / 1e9);
		ys.push(values[i]);
	}
	return [xs, ys];
}

/* One chart per (process, device): a series per stream; x values merged (series may differ). */
function renderQueues() {
	const box = document.getElementById("queues");
	const qs = TL.queues || [];
	if (!qs.length) {
		box.appendChild(el("p", { class: "note" }, "No launch joined to its GPU work in these traces (needs the CUDA API and GPU records)."));
		return;
	}
	const keys = [...new Set(qs.map((q) => q.sec + ":" + q.device))];
	for (const key of keys) {
		const mine = qs.filter((q) => q.sec + ":" + q.device === key).sort((a, b) => a.stream - b.stream);
		const xsAll = [...new Set(mine.flatMap((q) => stepSeries(q.t0, q.width, q.depth)[0]))].sort((a, b) => a - b);
		const data = [xsAll];
		const series = [{ label: "time (s)" }];
		for (const q of mine) {
			const [xs, ys] = stepSeries(q.t0, q.width, q.depth), at = new Map(xs.map((x, i) => [x, ys[i]]));
			data.push(xsAll.map((x) => (at.has(x) ? at.get(x) : null)));
			/* a stream's curve runs over its own buckets: where another stream's buckets begin
			 * elsewhere the shared x has no value of this one, which is no gap in it */
			series.push({ label: "stream " + q.stream + " (peak " + q.peak.toFixed(1) + ")", stroke: "hsl(" + (q.stream * 47 % 360) + ",60%,45%)",
				width: 1.2, spanGaps: true });
		}
		box.appendChild(el("div", { class: "chart-title", "data-queue": key }, secLabel(mine[0].sec) + ", GPU " + mine[0].device +
			": launches outstanding per stream (mean per " + fmtNs(mine[0].width) + ")"));
		/* what a reader can check the chart draws: every stream a line of two points or more */
		const div = el("div", { class: "queue-chart", "data-series": mine.length,
			"data-drawn": data.slice(1).filter((ys) => ys.filter((y) => y !== null).length >= 2).length });
		box.appendChild(div);
		CHARTS.push(new uPlot({
			width: chartWidth(box), height: CHART_H, plugins: [shadePlugin(mine[0].sec), legendAtPeak()],
			scales: { x: xScale() }, axes: [timeAxis(SPAN_S), leftAxis("launches"), rightAxis()], series,
		}, data, div));
	}
}

function renderMemory() {
	const box = document.getElementById("memory");
	const mem = (TL.memory || []).filter((m) => m.points.length);
	if (!mem.length) {
		box.appendChild(el("p", { class: "note" }, "No CUDA memory records in these traces (record with --trace cuda,memory)."));
		return;
	}
	for (const m of mem) {
		const xs = [RUN_T0 / 1e9], ys = [0];
		for (const [t, b] of m.points) {
			xs.push(t / 1e9);
			ys.push(b);
		}
		xs.push(RUN_T1 / 1e9);
		ys.push(ys[ys.length - 1]);
		box.appendChild(el("div", { class: "chart-title", "data-memory-peak": m.peak }, secLabel(m.sec) + ", GPU " + m.device + ", " +
			m.kind + " memory: peak " + fmtBytes(m.peak)));
		const div = el("div", { class: "memory-chart", "data-y-max": zeroUp(m.peak)[1] });
		box.appendChild(div);
		CHARTS.push(new uPlot({
			width: chartWidth(box), height: CHART_H, plugins: [shadePlugin(m.sec), legendAtPeak()],
			scales: { x: xScale(), y: { range: zeroUp(m.peak) } },
			axes: [timeAxis(SPAN_S), Object.assign(leftAxis("bytes"), { values: (u, v) => v.map((b) => fmtBytes(b)) }), rightAxis()],
			series: [{ label: "time (s)" }, { label: "in use", stroke: "#1f9d8a", fill: "rgba(31,157,138,0.18)", width: 1.5,
				paths: uPlot.paths.stepped({ align: 1 }), value: (u, v) => (v === null ? "" : fmtBytes(v)) }],
		}, [xs, ys], div));
	}
}

/* A loss window over the whole run: said once, above the charts it would otherwise fill. */
function renderWholeRunLoss() {
	const whole = wholeRunLoss();
	if (!whole.length) return;
	const text = "A loss window covers the whole run (" + [...new Set(whole.map((w) => w.counter))].join(", ") +
		", in " + [...new Set(whole.map((w) => secShort(w.sec)))].join(", ") + "): records may be missing anywhere, " +
		"so every count is a lower bound and no idle time is proven. It is drawn as a red band along the top of " +
		"each chart rather than over all of it.";
	for (const id of ["ledger-section", "busy-section", "queue-section"]) {
		const sec = document.getElementById(id);
		const p = el("p", { class: "whole-loss" }, text);
		sec.insertBefore(p, sec.children[1]);
	}
}

/* ---- tables ------------------------------------------------------------------------------- */

function cellText(v) {
	if (typeof v !== "number") return v === null || v === undefined ? "" : String(v);
	const digits = Number.isInteger(v) ? 0 : v < 100 ? 3 : 1;
	return v.toLocaleString("en-US", { minimumFractionDigits: digits, maximumFractionDigits: digits });
}

/* A sortable table: header clicks sort by that column (numbers as numbers). */
function dataTable(cols, rows, id, decorate) {
	const wrap = el("div", { class: "table-wrap" });
	const table = el("table", { class: "data", id });
	const thead = el("thead"), hr = el("tr"), tbody = el("tbody");
	const isStr = cols.map((c, k) => rows.length > 0 && typeof rows[0][k] === "string");
	/* long text (kernel names) wraps; short text (ranks, verdicts) stays on one line */
	const wide = cols.map((c, k) => isStr[k] && rows.some((r) => String(r[k]).length > 40));
	const cls = (k) => (isStr[k] ? "str" : "num") + (wide[k] ? " wide" : "");
	let sortCol = -1, desc = true;
	const fill = () => {
		tbody.textContent = "";
		for (const row of rows) {
			const tr = el("tr");
			cols.forEach((c, k) => {
				const td = el("td", { class: cls(k), "data-col": c }, cellText(row[k]));
				td.setAttribute("data-value", row[k] === null || row[k] === undefined ? "" : String(row[k]));
				tr.appendChild(td);
			});
			if (decorate) decorate(tr, row);
			tbody.appendChild(tr);
		}
	};
	cols.forEach((c, k) => {
		const th = el("th", { class: cls(k) }, c);
		th.addEventListener("click", () => {
			desc = sortCol === k ? !desc : !isStr[k];
			sortCol = k;
			rows.sort((a, b) => {
				const x = a[k], y = b[k];
				const r = typeof x === "number" && typeof y === "number" ? x - y : String(x).localeCompare(String(y));
				return desc ? -r : r;
			});
			for (const h of hr.children) h.className = h.className.replace(/ ?sorted-(asc|desc)/, "");
			th.className += desc ? " sorted-desc" : " sorted-asc";
			fill();
		});
		hr.appendChild(th);
	});
	thead.appendChild(hr);
	table.appendChild(thead);
	table.appendChild(tbody);
	fill();
	wrap.appendChild(table);
	return wrap;
}

/* A filter over a table's text: the rows whose text holds what is typed (case ignored). */
function filterBox(wrap, name) {
	const input = el("input", { type: "search", class: "filter", placeholder: "filter " + name + " by name",
		"aria-label": "filter " + name });
	const apply = () => {
		const want = input.value.toLowerCase();
		for (const tr of wrap.querySelectorAll("tbody tr"))
			tr.hidden = want !== "" && tr.textContent.toLowerCase().indexOf(want) < 0;
	};
	input.addEventListener("input", apply);
	wrap.addEventListener("click", apply); /* a sort redraws the rows: filter them again */
	return input;
}

/* Every report the page carries, as a table: the analyses, nsys's summaries, stacks, memory */
const TABLES = ["gpu_time_breakdown", "comm_compute_overlap", "kern_rank_spread", "rank_steps", "cuda_launch_stats",
	"gpu_queue_depth", "gpu_idle_breakdown", "cuda_gpu_kern_sum", "cuda_kern_stack_sum", "cuda_api_sum", "cuda_gpu_mem_time_sum",
	"cuda_gpu_mem_size_sum", "cuda_gpu_mem_usage", "nvtx_sum"];

function renderTables() {
	const box = document.getElementById("tables");
	for (const name of TABLES) {
		const rep = STATS.reports.find((r) => r.name === name);
		if (!rep) continue;
		box.appendChild(el("h3", null, rep.title + " (" + rep.name + "): " + rep.rows.length + " row(s)"));
		if (!rep.rows.length) {
			box.appendChild(el("p", { class: "note" }, "nothing of this kind in the trace"));
			continue;
		}
		const cols = Object.keys(rep.rows[0]);
		const wrap = dataTable(cols, rep.rows.map((r) => cols.map((c) => r[c])), "table-" + name);
		if (rep.rows.length > 10) box.appendChild(filterBox(wrap, rep.name));
		box.appendChild(wrap);
	}
}

/* ---- the page ----------------------------------------------------------------------------- */

part("verdict", renderVerdict);
part("diagnosis", renderDiagnosis);
part("ranks", renderRanks);
part("breakdown", renderBreakdown);
part("whole-run loss", renderWholeRunLoss);
part("ledger", renderLedger);
part("busy", () => {
	renderBusy();
	document.getElementById("busy-streams").addEventListener("change", () => part("busy", renderBusy));
});
part("queues", renderQueues);
part("memory", renderMemory);
part("timeline", setupTimeline);
if (TL.summaries)
	document.getElementById("timeline-section").insertBefore(el("p", { class: "note", id: "summaries-note" },
		TL.summaries + " process(es) come from summaries (tally stats --partial): their verdicts, figures and " +
		"tables are here, but a summary keeps no events to draw."), document.getElementById("tl-wrap"));
part("tables", renderTables);
part("idle-why", renderIdleWhy);
document.getElementById("footer").textContent = "Written by tally report from " + STATS.inputs.length +
	" file(s); " + TL.lanes.length + " lanes of " + NB + " buckets, " + fmtCount(TL.events.length / 5) +
	" exact events. Charts by uPlot 1.6.32 (MIT licence, in the page's source).";
if (window.location.hash.indexOf("selftest") >= 0) part("selftest", selfTest);
document.body.setAttribute("data-tally-ms", String(Math.round(performance.now())));
document.body.setAttribute("data-tally-ready", "1");
