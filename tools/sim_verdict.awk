# One (trace, load) cell against issue 13's quality bar: policy e against
# the strongest other policy (the lowest mean JCT, failed jobs counted, of
# the policies not named estimate-aware*) in a stats CSV of `colloc sim
# --seeds A-B --csv`: makespan <= 1.01x, mean JCT <= 1.02x, p99 JCT <=
# 1.05x. Used by tools/sim_report.sh (md=1: a markdown row of name, load,
# e, the strongest, the three ratios, e's mean JCT against exclusive and
# yes/**no**) and tools/sim_quality.sh (a text line of name, the strongest,
# the four ratios and yes/NO).
#   awk -F, -v name=NAME -v load=RHO -v e=POLICY [-v md=1] -f tools/sim_verdict.awk FILE
NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
$2 != "mean" { next }
{ mk[$1] = $(c["makespan_s"]); j[$1] = $(c["mean_jct_all_s"]); p99[$1] = $(c["p99_jct_all_s"]) }
$1 !~ /^estimate-aware/ && (best == "" || $(c["mean_jct_all_s"]) < j[best]) { best = $1 }
END {
	rm = mk[e] / mk[best]; rj = j[e] / j[best]; rp = p99[e] / p99[best]
	ok = rm <= 1.01 && rj <= 1.02 && rp <= 1.05
	if (md)
		printf "| %s | %s | %s | %s | %.3f | %.3f | %.3f | %.3f | %s |\n", name, load, e, best,
		       rm, rj, rp, j[e] / j["exclusive"], ok ? "yes" : "**no**"
	else
		printf "%-24s %-16s %.3f %.3f %.3f %.3f %s\n", name, best, rm, rj, rp,
		       j[e] / j["exclusive"], ok ? "yes" : "NO"
}
