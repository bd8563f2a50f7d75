/*
 * trace_gavel.c — Gavel's (OSDI '20) Philly-derived per-VC traces
 * (scheduler/traces/msr/seed=N/<vc>.trace) as a colloc trace.
 *
 * The files are the 2019 format: no header, 7 tab-separated fields
 *   job_type, command, num_steps_arg, needs_data_dir, total_steps,
 *   arrival_time, scale_factor
 * with arrival_time in seconds and scale_factor the GPU count. A job is a
 * number of steps, not a time: its run time is total_steps divided by the
 * job type's isolated throughput (steps/s) on one V100 worker type in
 * Gavel's simulation_throughputs.json ("v100" -> "('<type>', <sf>)" ->
 * "null"), the reference worker type Gavel's own job generator uses to turn
 * run times into steps. The table has scale factors 1, 2, 4 and 8 and, for
 * A3C, CycleGAN and Recommendation, only 1; a job whose scale factor has no
 * entry uses the single-GPU throughput (its run time is then what it would
 * be on one GPU: an upper bound).
 *
 * The throughputs are built in (below) rather than read at run time, so that
 * a trace reads the same everywhere and from a buffer. Not mapped: command,
 * num_steps_arg, needs_data_dir (checked to be 0 or 1).
 */
#include <ctype.h>
#include <string.h>

#include "sim/trace_int.h"

enum {
	COL_JOB_TYPE,
	COL_COMMAND,
	COL_NUM_STEPS_ARG,
	COL_NEEDS_DATA_DIR,
	COL_TOTAL_STEPS,
	COL_ARRIVAL,
	COL_SCALE_FACTOR,
	N_COLS
};

static const char *const columns[N_COLS] = {
	[COL_JOB_TYPE] = "job_type",	       [COL_COMMAND] = "command",
	[COL_NUM_STEPS_ARG] = "num_steps_arg", [COL_NEEDS_DATA_DIR] = "needs_data_dir",
	[COL_TOTAL_STEPS] = "total_steps",     [COL_ARRIVAL] = "arrival_time",
	[COL_SCALE_FACTOR] = "scale_factor",
};

/*
 * Isolated throughputs in steps per second on "v100", for scale factors
 * 1, 2, 4, 8 (0: no entry), copied from gavel's
 * scheduler/simulation_throughputs.json at commit c4fa400 (MIT licence,
 * Copyright (c) 2020 Stanford Future Data Systems); docs/trace-format.md
 * has the command that prints this table from the JSON.
 */
static const struct {
	const char *type;
	double steps_per_s[4];
} v100[] = {
	{"ResNet-18 (batch size 16)",
	 {32.353384328946916, 100.14206200421837, 123.85376642692827, 382.5974422686407}},
	{"ResNet-18 (batch size 32)",
	 {29.947157347732464, 94.24893164660543, 114.73342037584995, 340.0383618985821}},
	{"ResNet-18 (batch size 64)",
	 {24.093231895382736, 74.13589143268821, 95.58814453205626, 255.82913926317391}},
	{"ResNet-18 (batch size 128)",
	 {17.994906225052176, 23.985353059276264, 69.95051765177759, 162.09160717942794}},
	{"ResNet-18 (batch size 256)",
	 {10.300256501360458, 15.882848624471642, 27.7820579015064, 81.5065873273903}},
	{"ResNet-50 (batch size 16)",
	 {11.396129065315943, 13.859757680196113, 23.195585654383645,
	  27.799094635512898}},
	{"ResNet-50 (batch size 32)",
	 {7.787264918596293, 10.834571175121209, 13.763229095099536, 24.067423556662327}},
	{"ResNet-50 (batch size 64)",
	 {4.394774823323071, 7.922054367597505, 9.451949566394442, 17.303172756892167}},
	{"ResNet-50 (batch size 128)",
	 {2.4967655780898292, 4.2230145549692715, 7.029294087316617, 10.293183147179176}},
	{"Transformer (batch size 16)",
	 {11.06408721300405, 14.153819944879553, 20.0849760042163, 71.65168021872898}},
	{"Transformer (batch size 32)",
	 {10.620893339463915, 13.328037548850137, 22.822511223673345, 63.97766004389649}},
	{"Transformer (batch size 64)",
	 {8.61775899193302, 15.876496488983058, 19.65962221663049, 49.650700211670745}},
	{"Transformer (batch size 128)",
	 {5.44610521981264, 10.069238394742342, 14.17451716526748, 30.88352104398441}},
	{"Transformer (batch size 256)",
	 {1.5951407072133263, 2.8852436298687203, 4.763045770199511, 9.71702368412533}},
	{"A3C", {7.175767179667988, 0.0, 0.0, 0.0}},
	{"LM (batch size 5)",
	 {109.16661771207029, 185.72383101933428, 126.71571815404346, 698.773292956699}},
	{"LM (batch size 10)",
	 {81.65163491883021, 163.12902048608936, 121.4776195889045, 615.0934647748222}},
	{"LM (batch size 20)",
	 {64.74245099960703, 132.17413449742747, 110.99685986392635, 497.2952582330656}},
	{"LM (batch size 40)",
	 {45.23737155222392, 91.59265730806288, 96.0312451685392, 359.30692492331696}},
	{"LM (batch size 80)",
	 {28.239955054085122, 58.09153801943523, 74.80729601169598, 231.17619885320647}},
	{"Recommendation (batch size 512)", {23.317634950657975, 0.0, 0.0, 0.0}},
	{"Recommendation (batch size 1024)", {13.2825697082565, 0.0, 0.0, 0.0}},
	{"Recommendation (batch size 2048)", {7.469632060833725, 0.0, 0.0, 0.0}},
	{"Recommendation (batch size 4096)", {3.9060505302376054, 0.0, 0.0, 0.0}},
	{"Recommendation (batch size 8192)", {2.841510364354536, 0.0, 0.0, 0.0}},
	{"CycleGAN", {4.426088263367452, 0.0, 0.0, 0.0}},
};

/*
 * "ResNet-18 (batch size 64)" -> model "resnet18", batch 64; "A3C" -> "a3c",
 * batch 0. Only called on a type from the table, so the text is known.
 */
static void split_type(const char *type, char *model, int64_t *batch)
{
	const char *paren = strstr(type, " (batch size ");
	const char *end = paren ? paren : type + strlen(type);
	size_t n = 0;

	for (const char *p = type; p < end && n + 1 < COLLOC_TRACE_MODEL_MAX; p++) {
		if (isalnum((unsigned char)*p))
			model[n++] = (char)tolower((unsigned char)*p);
	}
	model[n] = '\0';
	*batch = 0;
	if (paren) {
		for (const char *p = paren + strlen(" (batch size ");
		     isdigit((unsigned char)*p); p++)
			*batch = *batch * 10 + (*p - '0');
	}
}

static int gavel_row(const struct colloc__trace_row *row, struct colloc_trace_job *job,
		     enum colloc__trace_verdict *verdict)
{
	const char *type = row->val[COL_JOB_TYPE];
	int64_t steps, sf, flag;
	double thr;
	size_t k = 0;
	int rc;

	while (k < sizeof(v100) / sizeof(v100[0]) && strcmp(type, v100[k].type) != 0)
		k++;
	if (k == sizeof(v100) / sizeof(v100[0]))
		return colloc__trace_fail(row, COL_JOB_TYPE,
					  "'%.40s' is not a Gavel job type with a known "
					  "throughput",
					  type);
	rc = colloc__trace_int(row, COL_NEEDS_DATA_DIR, 0, 1, &flag);
	if (!rc)
		rc = colloc__trace_int(row, COL_TOTAL_STEPS, 1, COLLOC__TRACE_MS_MAX,
				       &steps);
	if (!rc)
		rc = colloc__trace_time_ms(row, COL_ARRIVAL, 1000, false,
					   &job->submit_ms);
	if (!rc)
		rc = colloc__trace_int(row, COL_SCALE_FACTOR, 1, COLLOC__TRACE_GPUS_MAX,
				       &sf);
	if (rc)
		return rc;
	thr = v100[k].steps_per_s[0];
	for (int i = 1; i < 4; i++) {
		if (sf == (int64_t)1 << i && v100[k].steps_per_s[i] > 0)
			thr = v100[k].steps_per_s[i];
	}
	rc = colloc__trace_seconds_to_ms(row, COL_TOTAL_STEPS, (double)steps / thr,
					 &job->duration_ms);
	if (rc)
		return rc;
	split_type(type, job->model, &job->batch);
	/* Gavel numbers jobs by their row */
	job->id = row->index;
	job->n_gpus = (int)sf;
	job->gpu_milli = 1000;
	*verdict = COLLOC__ROW_JOB;
	return 0;
}

const struct colloc__trace_format colloc__trace_gavel = {
	.kind = "gavel",
	.sep = '\t',
	.header = false,
	.strict = true,
	.comments = false,
	.columns = columns,
	.n_columns = N_COLS,
	.required = 0,
	.missing_hint = NULL,
	.row = gavel_row,
};
