#!/bin/sh
# The documents say what the commands do: checked against the commands themselves.
# - docs/doctor.md's "Which checks block" lists exactly the checks `tally doctor --help` says can
#   FAIL, which are exactly those `tally doctor --json` marks can_block (it said only its listed
#   checks could FAIL, and output.volume, not listed, failed and blocked);
# - every command's exit codes in its --help are the codes of its page's exit-code table, and
#   record's page names each code its --help names;
# - on every page, a sentence that gives the exit of an output refused for existing (without
#   --force) gives the code the exit table gives it (report.md said 4 for it, and 2; it is 2),
#   and that code is the one the command returns.
# - the README leads with the two commands and reading a trace in three minutes, in order.
# Usage: test-docs-exit.sh TALLY SRCDIR
set -u
TALLY=$1 SRC=$2
. "$(dirname "$0")/../lib.sh"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

"$TALLY" doctor --help >"$T/doctor.help" 2>&1
"$TALLY" doctor --json --root "$SRC/tests/fixtures/doctor/host-gpu" >"$T/doctor.json" 2>/dev/null
python3 - "$SRC/docs/doctor.md" "$T/doctor.help" "$T/doctor.json" <<'PY' && ok "doctor: the FAIL list of docs/doctor.md = --help's = --json's can_block" || bad "doctor: the FAIL lists differ (above)"
import json, re, sys
doc = open(sys.argv[1]).read()
sec = doc.split("## Which checks block", 1)[1].split("\n## ", 1)[0]
in_doc = re.findall(r"^\| `([a-z]+\.[a-z]+)` \|", sec, re.M)
helptext = open(sys.argv[2]).read().split("checks that can FAIL", 1)[1]
in_help = re.findall(r"\b([a-z]+\.[a-z]+)\b", helptext.split("\n", 1)[1])
in_json = [c["id"] for c in json.load(open(sys.argv[3]))["checks"] if c["can_block"]]
print("    docs:", in_doc, "\n    help:", in_help, "\n    json:", in_json)
sys.exit(0 if in_doc and sorted(in_doc) == sorted(in_help) == sorted(in_json) else 1)
PY

# exit codes: --help's "Exit ..." paragraph against the page's table of codes
for pair in check:check stats:stats export:export merge:merge compare:compare control:control \
	report:report doctor:doctor record:record; do
	cmd=${pair%%:*} page=$SRC/docs/${pair#*:}.md
	"$TALLY" "$cmd" --help >"$T/$cmd.help" 2>&1
	python3 - "$cmd" "$T/$cmd.help" "$page" <<'PY' && ok "$cmd: --help's exit codes are docs/${pair#*:}.md's" || bad "$cmd: exit codes differ (above)"
import re, sys
cmd, helpfile, page = sys.argv[1:]
h = open(helpfile).read()
m = re.search(r"Exit(?: status)?[ :](.*?)(?:\n\n|$)", h, re.S)
if not m:
    sys.exit("no Exit paragraph in --help")
in_help = {int(c) for c in re.findall(r"(?<![\d+])(\d{1,3})(?=[: /]|$)", m.group(1).replace("128+N", ""))}
doc = open(page).read()
# the section whose title says exit, else the table headed "| exit | meaning |"
sec = re.search(r"^## (?:[^\n]*[Ee]xit[^\n]*)\n(.*?)(?=^## |\Z)", doc, re.S | re.M) or \
    re.search(r"^(\| (?:exit|code) \| meaning \|\n(?:\|.*\n)+)", doc, re.M)
if not sec:
    sys.exit("no exit section in " + page)
rows = {int(c) for c in re.findall(r"^\| `?(\d+)`? \|", sec.group(1), re.M)}
if cmd == "record":  # its page says them in prose
    missing = {c for c in in_help if not re.search(r"\b%d\b" % c, sec.group(1))}
    print("    help:", sorted(in_help), "missing from the page:", sorted(missing))
    sys.exit(1 if missing or not in_help else 0)
print("    help:", sorted(in_help), "page:", sorted(rows))
sys.exit(0 if rows and rows == in_help else 1)
PY
done

# an output that exists, without --force: every page says the code its exit table says, and the
# command returns it
: >"$T/exists.out"
for cmd in stats export merge report; do
	page=$SRC/docs/$cmd.md
	case $cmd in
	stats) "$TALLY" stats -o "$T/exists.out" "$SRC/tests/data/gen-tiny.tally" >/dev/null 2>&1 ;;
	export) "$TALLY" export -f chrome -o "$T/exists.out" "$SRC/tests/data/gen-tiny.tally" >/dev/null 2>&1 ;;
	merge) "$TALLY" merge -o "$T/exists.out" "$SRC/tests/data/gen-tiny.tally" >/dev/null 2>&1 ;;
	report) "$TALLY" report -o "$T/exists.out" "$SRC/tests/data/gen-tiny.tally" >/dev/null 2>&1 ;;
	esac
	rc=$?
	python3 - "$page" "$rc" <<'PY' && ok "$cmd: an existing output without --force exits $rc, as every sentence of docs/$cmd.md says" || bad "$cmd: an existing output without --force (exit $rc; above)"
import re, sys
doc, rc = open(sys.argv[1]).read(), int(sys.argv[2])
sec = re.search(r"^## (?:[^\n]*[Ee]xit[^\n]*)\n(.*?)(?=^## |\Z)", doc, re.S | re.M).group(1)
table = [int(c) for c, row in re.findall(r"^\| `?(\d+)`? \|(.*)$", sec, re.M) if "without `--force`" in row]
said = [int(n) for line in doc.splitlines() if "--force" in line and "exist" in line
        for n in re.findall(r"\bexit(?: is| code)? (\d+)\b", line)]
print("    table:", table, "sentences:", said, "returned:", rc)
sys.exit(0 if table == [rc] and all(n == rc for n in said) else 1)
PY
done
# the README leads with the two commands and how to read a trace: check, the diagnosis,
# gpu_idle_why, the page, in that order (its two commands once started at line 47 of 549)
python3 - "$SRC/README.md" <<'PY' && ok "README: the two commands within its first 40 lines, then 'Reading a trace in three minutes' in order" || bad "README: the lead (above)"
import re, sys
lines = open(sys.argv[1]).read().split("\n")
first_sh = lines.index("```sh") if "```sh" in lines else 10**6
sec = "\n".join(lines).split("## Reading a trace in three minutes", 1)
order = [sec[1].find(w) for w in ("tally check", "-r diagnosis", "gpu_idle_why", "tally report")] if len(sec) == 2 else []
print("    first sh block at line", first_sh + 1, "; order", order, "; lines", len(lines))
sys.exit(0 if first_sh < 40 and lines[first_sh + 1].startswith("scripts/demo.sh") and order and
         all(o >= 0 for o in order) and order == sorted(order) and len(lines) < 400 else 1)
PY
finish test-docs-exit
