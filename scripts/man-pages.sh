#!/bin/sh
# Man pages from --help, one per command, made at build time (CMakeLists.txt) for the bundle and
# the .deb:  scripts/man-pages.sh TALLY OUTDIR VERSION
# writes OUTDIR/tally.1.gz (the command list) and OUTDIR/tally-COMMAND.1.gz for each command that
# `tally --help` lists: NAME from that list, SYNOPSIS from the usage line, the rest of the help
# text as it is (preformatted), and where the full page is.
set -eu
tally=$1 out=$2 version=$3
mkdir -p "$out"
rm -f "$out"/*.1.gz

# roff-safe, kept as written: backslashes, then minus signs; a line's leading . or ' made text
esc() { sed 's/\\/\\e/g; s/-/\\-/g; s/^\([.'\'']\)/\\\&\1/'; }

# page NAME SUMMARY HELP-FILE DOC
page() {
	name=$1 summary=$2 help=$3 doc=$4
	upper=$(echo "$name" | tr '[:lower:]' '[:upper:]')
	{
		echo ".TH $upper 1 \"\" \"tally $version\" \"tally manual\""
		echo ".SH NAME"
		echo "$name \\- $summary" | sed 's/\([^\\]\)-/\1\\-/g'
		echo ".SH SYNOPSIS"
		echo ".nf"
		sed -n '1s/^usage: //p' "$help" | esc
		echo ".fi"
		echo ".SH DESCRIPTION"
		echo ".nf"
		# (where the documentation lies is said below, for the installed copy)
		sed "1d; /^'tally COMMAND --help'/d" "$help" | sed '/./,$!d' | esc
		echo ".fi"
		echo ".SH SEE ALSO"
		echo "$doc"
	} | gzip -9n >"$out/$name.1.gz"
}

"$tally" --help >"$out/help.txt"
page tally "record CUDA activity as a timeline that accounts for every record" "$out/help.txt" \
	"tally\\-COMMAND(1) for each command (tally COMMAND \\-\\-help); the documentation under share/doc/tally/docs beside tally (/usr/share/doc/tally/docs in the Debian package)."
sed -n '/^commands:/,/^$/{/^  /p}' "$out/help.txt" | while read -r cmd summary; do
	"$tally" "$cmd" --help >"$out/help-$cmd.txt"
	page "tally-$cmd" "$summary" "$out/help-$cmd.txt" "tally(1), and $cmd.md in tally's documentation (share/doc/tally/docs; /usr/share/doc/tally/docs in the Debian package)."
done
rm -f "$out"/help*.txt
ls "$out"/*.1.gz | wc -l | grep -qv '^1$' || { echo "man-pages: no command listed by $tally --help" >&2; exit 1; }
