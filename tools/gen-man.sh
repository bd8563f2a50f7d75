#!/bin/sh
# Generate colloc's man pages from the one source of each: the built
# commands' --help text, and docs/collocd-config.md for the config file.
# POSIX sh + awk only (no help2man, no pandoc), run by the build:
#
#   tools/gen-man.sh colloc  BUILD/colloc  VERSION OUT/colloc.1
#   tools/gen-man.sh collocd BUILD/collocd VERSION OUT/collocd.8
#   tools/gen-man.sh conf    docs/collocd-config.md VERSION OUT/collocd.conf.5
#
# The --help text goes in verbatim (preformatted), so that every option the
# command knows is in its page; tests/install/test_man.sh checks it.
set -eu

if [ $# -ne 4 ]; then
	echo "usage: gen-man.sh colloc|collocd|conf SOURCE VERSION OUT" >&2
	exit 2
fi
kind=$1 src=$2 version=$3 out=$4
tmp="$out.tmp.$$"
trap 'rm -f "$tmp" "$tmp.help" "$tmp.cmds"' EXIT

# verbatim: stdin as a preformatted roff block, escaped.
verbatim() {
	printf '.nf\n'
	awk '{
		gsub(/\\/, "\\e")
		gsub(/-/, "\\-")
		if ($0 ~ /^[.\047]/) $0 = "\\&" $0
		print
	}'
	printf '.fi\n'
}

# help CMD...: CMD's --help as a preformatted block on stdout. A command
# whose --help fails stops the build rather than giving a page without it:
# the text goes through a file, never a pipeline, since a failure on the
# left of a pipe (or in a `... | while` loop, a subshell) would not reach
# `set -e` or the exit below.
help() {
	if ! "$@" --help </dev/null >"$tmp.help" 2>&1; then
		echo "gen-man.sh: '$* --help' failed" >&2
		exit 1
	fi
	verbatim <"$tmp.help"
}

case $kind in
colloc)
	{
		printf '.TH COLLOC 1 "" "colloc %s" "User Commands"\n' "$version"
		printf '.SH NAME\ncolloc \\- estimate GPU memory of training jobs and run them on shared GPUs\n'
		printf '.SH SYNOPSIS\n.B colloc\n[\\-\\-socket \\fIPATH\\fR] \\fICOMMAND\\fR [\\fIARGS\\fR...]\n'
		printf '.SH DESCRIPTION\n'
		help "$src"
		printf '.SH COMMANDS\nEach command'"'"'s own \\fB\\-\\-help\\fR, as printed by \\fBcolloc \\fICOMMAND\\fB \\-\\-help\\fR.\n'
		# The commands, as `colloc --help` lists them ("  NAME ...").
		# the commands are the indented words of the list before "exit status"
		help "$src" >/dev/null
		sed -n '/^exit status/q; s/^  \([a-z][a-z-]*\) .*/\1/p' "$tmp.help" >"$tmp.cmds"
		[ -s "$tmp.cmds" ] || { echo "gen-man.sh: '$src --help' lists no commands" >&2; exit 1; }
		while read -r cmd; do
			printf '.SS colloc %s\n' "$cmd"
			help "$src" "$cmd"
		done <"$tmp.cmds"
		printf '.SH ENVIRONMENT\n'
		printf '.TP\n.B COLLOC_SOCKET\ncollocd'"'"'s socket when \\-\\-socket is not given.\n'
		printf '.TP\n.B COLLOC_DATA_DIR\nthe data directory (zoo/, platforms/) instead of the installed share/colloc.\n'
		printf '.TP\n.B COLLOC_SIM_STATE\nthe state file of simulated GPUs (colloc gpus, colloc\\-simjob).\n'
		printf '.SH SEE ALSO\n.BR collocd (8),\n.BR collocd.conf (5);\n'
		printf 'docs/cli\\-jobs.md and docs/install.md in the source.\n'
	} >"$tmp"
	;;
collocd)
	{
		printf '.TH COLLOCD 8 "" "colloc %s" "System Administration"\n' "$version"
		printf '.SH NAME\ncollocd \\- the colloc GPU resource manager daemon\n'
		printf '.SH SYNOPSIS\n.B collocd\n[\\fIOPTIONS\\fR]\n'
		printf '.SH DESCRIPTION\n'
		help "$src"
		printf '.SH FILES\n'
		printf '.TP\n.I /etc/colloc/collocd.conf\nthe config file read when \\-\\-config is not given, see\n.BR collocd.conf (5).\n'
		printf '.TP\n.I STATE_DIR/collocd.db\nthe job database (SQLite).\n'
		printf '.TP\n.I STATE_DIR/gpus.sim\nthe state file of simulated GPUs given without path=.\n'
		printf '.SH SEE ALSO\n.BR colloc (1),\n.BR collocd.conf (5);\n'
		printf 'docs/collocd.md, docs/api.md and docs/install.md in the source.\n'
	} >"$tmp"
	;;
conf)
	{
		printf '.TH COLLOCD.CONF 5 "" "colloc %s" "File Formats"\n' "$version"
		printf '.SH NAME\ncollocd.conf \\- configuration of the colloc daemon collocd\n'
		printf '.SH SYNOPSIS\n/etc/colloc/collocd.conf\n'
		# Markdown to man: headings, code blocks, tables, bullets, and
		# inline `code`, **bold** and [links](...).
		awk '
		function inline(s) {
			sub(/^ +/, "", s)
			gsub(/\\/, "\\e", s)
			gsub(/-/, "\\-", s)
			s = glyphs(s)
			while (match(s, /\[[^]]*\]\([^)]*\)/)) {
				t = substr(s, RSTART + 1, RLENGTH)
				sub(/\]\(.*/, "", t)
				s = substr(s, 1, RSTART - 1) t substr(s, RSTART + RLENGTH)
			}
			while (match(s, /`[^`]*`/))
				s = substr(s, 1, RSTART - 1) "\\fB" substr(s, RSTART + 1, RLENGTH - 2) "\\fR" substr(s, RSTART + RLENGTH)
			while (match(s, /\*\*[^*]*\*\*/))
				s = substr(s, 1, RSTART - 1) "\\fB" substr(s, RSTART + 2, RLENGTH - 4) "\\fR" substr(s, RSTART + RLENGTH)
			if (s ~ /^[.\047]/) s = "\\&" s
			return s
		}
		# troff reads bytes: the few non-ASCII characters the docs use.
		function glyphs(s) {
			gsub(/—/, "\\(em", s); gsub(/–/, "\\(en", s); gsub(/×/, "\\(mu", s)
			gsub(/→/, "\\(->", s); gsub(/≤/, "\\(<=", s); gsub(/≥/, "\\(>=", s)
			gsub(/…/, "...", s); gsub(/µ/, "\\(mc", s)
			return s
		}
		function trim(c) { gsub(/^ +| +$/, "", c); return c }
		NR == 1 && /^# / { next }
		/^```/ { if (code) { print ".fi"; code = 0 } else { print ".nf"; code = 1 }; next }
		code { l = $0; gsub(/\\/, "\\e", l); gsub(/-/, "\\-", l); l = glyphs(l); if (l ~ /^[.\047]/) l = "\\&" l; print l; next }
		/^### / { print ".SS " inline(substr($0, 5)); next }
		/^## / { t = toupper(substr($0, 4)); print ".SH " inline(t); next }
		/^\|/ {
			if ($0 ~ /^\|[-| ]+\|$/) next
			n = split($0, f, "|")
			if (!intable) { intable = 1; next } # the header row
			if (n >= 6)
				printf ".TP\n%s\n%s; default %s. %s\n", inline(trim(f[2])), inline(trim(f[3])), inline(trim(f[4])), inline(trim(f[5]))
			else
				printf ".TP\n%s\n%s\n", inline(trim(f[2])), inline(trim(f[3]))
			next
		}
		{ intable = 0 }
		/^$/ { print ".PP"; next }
		/^- / { print ".IP \\(bu 2"; print inline(substr($0, 3)); next }
		{ print inline($0) }
		' "$src"
		printf '.SH SEE ALSO\n.BR collocd (8),\n.BR colloc (1)\n'
	} >"$tmp"
	;;
*)
	echo "gen-man.sh: unknown page '$kind' (colloc, collocd or conf)" >&2
	exit 2
	;;
esac
rm -f "$tmp.help" "$tmp.cmds"
mv "$tmp" "$out"
trap - EXIT
