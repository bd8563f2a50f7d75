/*
 * test_sim.c — the simulator on traces small enough to work out by hand,
 * plus determinism and "no job is ever lost" on a random trace with wrong
 * estimates (so that OOM crashes and recoveries happen).
 *
 * The hand-worked cases use the `dqn` job kind (no graph: 1.5 GiB, an
 * assumed activity of 0.15, docs/simulator.md) so they need no model zoo;
 * two such jobs sharing a GPU run at the interference model's speed for
 * their activity, which the test asks the model for. The kinds with graphs
 * take their activity from the predictor (colloc/perf.h): one test checks
 * it is the predictor's SM activity, one that 16 BERT jobs on one GPU
 * cannot together progress faster than the GPU allows. Heterogeneous
 * clusters read the node list and pod list excerpts of tests/data/traces
 * (found through COLLOC_TRACE_DIR): jobs land only on GPU models their
 * gpu_spec allows, and every GPU has its own model's memory.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "colloc/cost.h"
#include "colloc/estimate.h"
#include "colloc/interference.h"
#include "colloc/onnx.h"
#include "colloc/perf.h"
#include "colloc/platform.h"
#include "colloc/shape.h"
#include "colloc/sim.h"
#include "colloc/sim_fill.h"
#include "colloc/zoo.h"

static struct colloc_trace *parse(const char *text)
{
	struct colloc_trace *t = NULL;
	struct colloc_diag diag = {{0}};

	if (colloc_trace_parse("csv", "test.csv", text, strlen(text), NULL, &t, &diag))
		fail_msg("%s", diag.msg);
	return t;
}

static void run(const struct colloc_trace *t, const char *cluster, int policy,
		struct colloc_sim_result *r)
{
	struct colloc_sim_cluster c;
	struct colloc_sim_opts o;
	struct colloc_diag diag = {{0}};

	assert_int_equal(colloc_sim_cluster_parse(cluster, &c, &diag), 0);
	colloc_sim_opts_init(&o);
	o.sched.policy = policy;
	o.est_error = 0;
	if (colloc_sim_run(t, &c, &o, r, &diag))
		fail_msg("%s", diag.msg);
}

static const char two_jobs[] = "id,submit_s,duration_s,gpus,model\n"
			       "1,0,100,1,dqn\n"
			       "2,0,100,1,dqn\n";

static void test_exclusive_serialises(void **state)
{
	struct colloc_trace *t = parse(two_jobs);
	struct colloc_sim_result r;

	(void)state;
	run(t, "1x1x40GiB", COLLOC_POLICY_EXCLUSIVE, &r);
	/* one after the other: JCTs 100 s and 200 s, waits 0 and 100 s */
	assert_int_equal(r.finished, 2);
	assert_true(fabs(r.makespan_s - 200) < 1e-6);
	assert_true(fabs(r.mean_jct_s - 150) < 1e-6);
	assert_true(fabs(r.mean_wait_s - 50) < 1e-6);
	assert_int_equal(r.shared_jobs, 0);
	assert_int_equal(r.jobs_lost, 0);
	/* one GPU busy at activity 0.15 the whole time */
	assert_true(fabs(r.gpu_util - 0.15) < 1e-6);
	colloc_sim_result_fini(&r);
	colloc_trace_destroy(t);
}

static void test_sharing_slows_each(void **state)
{
	struct colloc_trace *t = parse(two_jobs);
	struct colloc_sim_result r;
	struct colloc_sim_cluster c;
	struct colloc_sim_kind k;
	struct colloc_diag diag = {{0}};
	const struct colloc_interference *im = colloc_interference_builtin();
	struct colloc_interference_job ij[2];
	double busy[2], sp[2];

	(void)state;
	assert_int_equal(colloc_sim_cluster_parse("1x1x40GiB", &c, &diag), 0);
	assert_int_equal(colloc_sim_kind_info("dqn", 0, &c, &k, &diag), 0);
	assert_false(k.predicted);
	assert_true(fabs(k.activity - 0.15) < 1e-12);
	assert_true(fabs(k.interference_activity - 0.15 * COLLOC_SIM_INTERFERENCE_SCALE) <
		    1e-12);
	for (int i = 0; i < 2; i++) {
		ij[i] = (struct colloc_interference_job){-1, k.interference_activity};
		busy[i] = k.activity;
	}
	colloc_interference_gpu_speeds(im, colloc_interference_worker("v100"), ij, busy,
				       2, sp);
	assert_true(sp[0] > 0 && sp[0] < 1 && sp[0] == sp[1]);
	run(t, "1x1x40GiB", COLLOC_POLICY_ESTIMATE_AWARE, &r);
	/* both start at 0 and share the GPU: each finishes at 100 s / speed
	 * (rounded up to the millisecond) */
	assert_int_equal(r.finished, 2);
	assert_int_equal(r.shared_jobs, 2);
	assert_true(fabs(r.makespan_s - ceil(100000 / sp[0]) / 1000) < 1e-6);
	assert_true(fabs(r.mean_wait_s) < 1e-9);
	assert_true(r.makespan_s < 200);
	/* the utilization metric reads the same activity, times the speed */
	assert_true(fabs(r.gpu_util - 2 * 0.15 * sp[0] * (100 / sp[0]) / r.makespan_s) <
		    1e-4);
	colloc_sim_result_fini(&r);
	colloc_trace_destroy(t);
}

/* The predictor's SM activity for zoo graph zoo at batch on profile plat,
 * computed here as colloc estimate does, independently of the simulator. */
static double predicted_sm_activity(const char *zoo, int64_t batch, const char *plat)
{
	struct colloc_platform p;
	struct colloc_graph *g = NULL;
	struct colloc_bind_opts bo = {batch, NULL, 0};
	struct colloc_perf_opts po;
	struct colloc_perf pf;
	struct colloc_diag diag = {{0}};
	char path[4096];

	assert_int_equal(colloc_platform_load(plat, &p, &diag), 0);
	snprintf(path, sizeof(path), "%s/zoo/%s.onnx", colloc_data_dir(), zoo);
	if (colloc_onnx_load_file(path, NULL, &g, &diag) ||
	    colloc_graph_infer(g, &bo, &diag))
		fail_msg("%s", diag.msg);
	colloc_graph_cost(g, NULL);
	colloc_perf_opts_init(&po);
	po.batch = batch;
	po.platform = &p;
	if (colloc_perf_predict(g, &po, &pf, &diag))
		fail_msg("%s", diag.msg);
	colloc_graph_destroy(g);
	return pf.sm_activity;
}

/* The activity the simulator uses for resnet50 at batch 64 on an A100 is
 * the predictor's sm_activity for that graph, batch and platform; a job
 * alone on a GPU keeps it busy at exactly that activity. */
static void test_activity_is_predicted(void **state)
{
	static const char one[] = "id,submit_s,duration_s,gpus,model,batch\n"
				  "1,0,100,1,resnet50,64\n";
	struct colloc_sim_cluster c;
	struct colloc_sim_kind k;
	struct colloc_sim_result r;
	struct colloc_trace *t;
	struct colloc_diag diag = {{0}};
	double want = predicted_sm_activity("resnet50", 64, "a100-40gb-cu124-torch26");

	(void)state;
	assert_int_equal(colloc_sim_cluster_parse("2x8xA100-40GB", &c, &diag), 0);
	assert_string_equal(c.platform, "a100-40gb-cu124-torch26");
	if (colloc_sim_kind_info("ResNet-50", 64, &c, &k, &diag))
		fail_msg("%s", diag.msg);
	assert_true(k.predicted);
	assert_string_equal(k.kind, "resnet50");
	assert_int_equal(k.batch, 64);
	assert_true(want > 0 && want <= 1);
	assert_true(k.activity == want);
	assert_true(k.step_ms > 0 && k.gpu_util >= k.activity - 1e-9);
	/* The trace's batch is used; <= 0 is the kind's default (64). */
	assert_int_equal(colloc_sim_kind_info("resnet50", 0, &c, &k, &diag), 0);
	assert_true(k.activity == want);

	t = parse(one);
	run(t, "1x1xA100-40GB", COLLOC_POLICY_EXCLUSIVE, &r);
	assert_int_equal(r.finished, 1);
	assert_true(fabs(r.gpu_util - want) < 1e-9);
	colloc_sim_result_fini(&r);
	colloc_trace_destroy(t);

	/* another GPU, another prediction */
	assert_int_equal(colloc_sim_cluster_parse("1x4xV100-16GB", &c, &diag), 0);
	assert_int_equal(colloc_sim_kind_info("resnet50", 64, &c, &k, &diag), 0);
	assert_true(k.activity ==
		    predicted_sm_activity("resnet50", 64, "v100-16gb-cu124-torch26"));

	assert_int_equal(colloc_sim_kind_info("perceiver", 8, &c, &k, &diag),
			 COLLOC_ENOTFOUND);
	assert_non_null(strstr(diag.msg, "kinds: resnet18"));
}

/* Sixteen BERT jobs on one GPU (H200: room for all of them) cannot
 * progress faster together than the GPU allows: with activity a each, at
 * most min(16, 1/a) x one job's speed. The same bound holds for every
 * smaller group the model is asked about. */
static void test_physical_ceiling(void **state)
{
	static char text[2048];
	size_t off = 0;
	struct colloc_sim_cluster c;
	struct colloc_sim_opts o;
	struct colloc_sim_kind k;
	struct colloc_sim_result r;
	struct colloc_trace *t;
	struct colloc_diag diag = {{0}};
	const struct colloc_interference *im = colloc_interference_builtin();
	double ceiling;

	(void)state;
	assert_int_equal(colloc_sim_cluster_parse("1x1xH200-141GB", &c, &diag), 0);
	if (colloc_sim_kind_info("bert", 0, &c, &k, &diag))
		fail_msg("%s", diag.msg);
	assert_true(k.predicted && k.activity > 0 && k.activity <= 1);
	for (int n = 2; n <= 16; n *= 2) {
		struct colloc_interference_job ij[16];
		double busy[16], sp[16], sum = 0, used = 0;

		for (int i = 0; i < n; i++) {
			ij[i] = (struct colloc_interference_job){-1,
								 k.interference_activity};
			busy[i] = k.activity;
		}
		colloc_interference_gpu_speeds(im, 0, ij, busy, n, sp);
		for (int i = 0; i < n; i++) {
			sum += sp[i];
			used += busy[i] * sp[i];
		}
		assert_true(used <= 1 + 1e-12);
		assert_true(sum <= fmin(n, 1 / k.activity) + 1e-12);
	}

	off += (size_t)snprintf(text + off, sizeof(text) - off,
				"id,submit_s,duration_s,gpus,model\n");
	for (int j = 0; j < 16; j++)
		off += (size_t)snprintf(text + off, sizeof(text) - off,
					"%d,0,100,1,bert\n", j + 1);
	t = parse(text);
	colloc_sim_opts_init(&o);
	o.sched.policy = COLLOC_POLICY_ESTIMATE_AWARE;
	o.sched.headroom_bytes = 0;
	o.sched.util_bound = 100; /* let all 16 share */
	o.est_error = 0;
	if (colloc_sim_run(t, &c, &o, &r, &diag))
		fail_msg("%s", diag.msg);
	assert_int_equal(r.finished, 16);
	assert_int_equal(r.shared_jobs, 16);
	assert_true(fabs(r.mean_wait_s) < 1e-9); /* all on the GPU at once */
	/* 16 x 100 s of work at a summed rate of at most the ceiling */
	ceiling = fmin(16, 1 / k.activity);
	assert_true(r.makespan_s >= 16 * 100 / ceiling - 1e-3);
	assert_true(r.gpu_util <= 1 + 1e-9);
	colloc_sim_result_fini(&r);
	colloc_trace_destroy(t);
}

static void test_too_big_fails_not_lost(void **state)
{
	/* a 1.5 GiB job on a 1 GiB GPU can never start: failed, not lost */
	struct colloc_trace *t = parse(two_jobs);
	struct colloc_sim_result r;

	(void)state;
	run(t, "1x1x1GiB", COLLOC_POLICY_ESTIMATE_AWARE, &r);
	assert_int_equal(r.failed, 2);
	assert_int_equal(r.jobs_lost, 0);
	colloc_sim_result_fini(&r);
	colloc_trace_destroy(t);
}

static void test_cluster_specs(void **state)
{
	struct colloc_sim_cluster c;
	struct colloc_diag diag = {{0}};

	(void)state;
	assert_int_equal(colloc_sim_cluster_parse("16x8xA100-40GB", &c, &diag), 0);
	assert_int_equal(c.n_nodes, 16);
	assert_int_equal(c.gpus_per_node, 8);
	assert_int_equal(c.gpu_mem_bytes, 42505273344ull);
	assert_int_equal(colloc_sim_cluster_parse("2x4x24GiB", &c, &diag), 0);
	assert_int_equal(c.gpu_mem_bytes, 24ull << 30);
	assert_int_equal(colloc_sim_cluster_parse("2x4", &c, &diag), COLLOC_EUSAGE);
	assert_non_null(strstr(diag.msg, "NODESxGPUSxTYPE"));
	/* an unknown type names the known ones */
	assert_int_equal(colloc_sim_cluster_parse("2x4xB200", &c, &diag), COLLOC_EUSAGE);
	assert_non_null(strstr(diag.msg, "'2x4xB200'"));
	assert_non_null(strstr(diag.msg, "A100-40GB, A100-80GB"));
	assert_non_null(strstr(diag.msg, "RTX4090"));
	assert_int_equal(colloc_sim_cluster_parse("0x4xA100-40GB", &c, &diag),
			 COLLOC_EUSAGE);
	assert_int_equal(colloc_sim_cluster_parse("1x99xA100-40GB", &c, &diag),
			 COLLOC_EUSAGE);
}

/* 200 jobs of no-graph kinds with 30% estimate error on 2 small GPUs:
 * crashes happen, every job still ends exactly once, and the same seed
 * gives the same numbers. */
static void test_no_job_lost_and_deterministic(void **state)
{
	static char text[64 * 1024];
	static const char *const kinds[] = {"dqn", "a2c", "recommendation", "cyclegan"};
	size_t off = 0;
	struct colloc_trace *t;
	struct colloc_sim_cluster c;
	struct colloc_sim_opts o;
	struct colloc_sim_result a, b;
	struct colloc_diag diag = {{0}};

	(void)state;
	off += (size_t)snprintf(text + off, sizeof(text) - off,
				"id,submit_s,duration_s,gpus,model\n");
	for (int k = 0; k < 200; k++)
		off += (size_t)snprintf(
			text + off, sizeof(text) - off, "%d,%d,%d,%d,%s\n", k,
			k * 7 % 500, 60 + (k * 37) % 900, 1 + (k % 9 == 0), kinds[k % 4]);
	t = parse(text);
	assert_int_equal(colloc_sim_cluster_parse("1x2x12GiB", &c, &diag), 0);
	colloc_sim_opts_init(&o);
	o.est_error = 0.3;
	o.sched.headroom_bytes = 0;
	o.sched.util_bound = 4;
	for (int p = 0; p < COLLOC_POLICY_COUNT_; p++) {
		o.sched.policy = p;
		assert_int_equal(colloc_sim_run(t, &c, &o, &a, &diag), 0);
		assert_int_equal(colloc_sim_run(t, &c, &o, &b, &diag), 0);
		assert_int_equal(a.jobs_lost, 0);
		assert_int_equal(a.finished + a.failed, 200);
		assert_true(a.recoveries <= a.oom_crashes);
		assert_true(a.makespan_s == b.makespan_s &&
			    a.mean_jct_s == b.mean_jct_s && a.gpu_util == b.gpu_util &&
			    a.oom_crashes == b.oom_crashes && a.energy_j == b.energy_j);
		if (p == COLLOC_POLICY_ESTIMATE_AWARE)
			assert_true(a.oom_crashes > 0); /* 30% errors on packed GPUs */
		colloc_sim_result_fini(&a);
		colloc_sim_result_fini(&b);
	}
	colloc_trace_destroy(t);
}

/* The cluster-wide integrals, on one GPU and on two: each dqn job keeps a
 * generic GPU (idle 50 W, max 300 W) busy at 0.15 for 100 s, holding a
 * tenth of its 1.5 GiB for 60 s (until its ramp-up), then all of it. */
static void test_energy_and_memory(void **state)
{
	struct colloc_trace *t = parse(two_jobs);
	struct colloc_sim_result r;
	const char *clusters[] = {"1x1x40GiB", "1x2x40GiB"};
	double makespans[] = {200, 100};

	(void)state;
	for (int k = 0; k < 2; k++) {
		double gib_s = 2 * (60 * 0.15 + 40 * 1.5); /* both jobs */

		run(t, clusters[k], COLLOC_POLICY_EXCLUSIVE, &r);
		assert_true(fabs(r.makespan_s - makespans[k]) < 1e-9);
		assert_true(fabs(r.energy_j - 2 * 100 * (50 + 250 * 0.15)) < 1e-6);
		assert_true(fabs(r.gpu_util - 0.15) < 1e-9);
		assert_true(fabs(r.mem_util - gib_s / (makespans[k] * (k + 1) * 40)) <
			    1e-6);
		colloc_sim_result_fini(&r);
	}
	colloc_trace_destroy(t);
}

/*
 * The scheduler sees only the first `window` queued jobs, and every
 * instant with a job queued counts as a pass, also one whose outcome is
 * known without asking the scheduler (nothing changed since the last pass
 * that started nothing). A 5 GiB GPU (512 MiB kept free); jobs with exact
 * estimates: 1 and 2 are `recommendation` (3 GiB, activity 0.3, submitted
 * at 0 and 1 s), 3 is `dqn` (1.5 GiB, at 2 s), 100 s each alone. Job 2
 * never fits beside job 1; job 3 does (1.5 + 0.5 <= 5 - 3 GiB).
 *
 * Window 1: job 3 is behind job 2, unseen. Job 1 runs alone 0-100 s; job
 * 2 starts at 100 s; job 3 is seen and starts at the next instant, job 2's
 * ramp-up at 160 s. Waits 0, 99 and 158 s; passes at 0, 1, 2, 60 (job 1's
 * ramp-up), 100 and 160 s. Window 256: job 3 starts beside job 1 at once.
 */
static void test_window(void **state)
{
	static const char text[] = "id,submit_s,duration_s,gpus,model\n"
				   "1,0,100,1,recommendation\n"
				   "2,1,100,1,recommendation\n"
				   "3,2,100,1,dqn\n";
	struct colloc_trace *t = parse(text);
	struct colloc_sim_cluster c;
	struct colloc_sim_opts o;
	struct colloc_sim_result r;
	struct colloc_diag diag = {{0}};

	(void)state;
	assert_int_equal(colloc_sim_cluster_parse("1x1x5GiB", &c, &diag), 0);
	colloc_sim_opts_init(&o);
	o.est_error = 0;
	o.window = 1;
	assert_int_equal(colloc_sim_run(t, &c, &o, &r, &diag), 0);
	assert_int_equal(r.finished, 3);
	assert_int_equal(r.jobs_lost, 0);
	assert_int_equal(r.passes, 6);
	assert_true(fabs(r.mean_wait_s - (0 + 99 + 158) / 3.0) < 1e-9);
	assert_true(fabs(r.median_wait_s - 99) < 1e-9);
	assert_true(fabs(r.p99_wait_s - 158) < 1e-9);
	colloc_sim_result_fini(&r);
	/* The starvation rule: job 3 backfills beside job 1. (EASY would
	 * keep it off the GPU reserved for job 2: job 3 ends after job 1.) */
	o.window = 256;
	o.sched.backfill_rule = COLLOC_BACKFILL_STARVE;
	assert_int_equal(colloc_sim_run(t, &c, &o, &r, &diag), 0);
	assert_int_equal(r.finished, 3);
	assert_true(fabs(r.median_wait_s) < 1e-9);
	assert_true(r.mean_wait_s < (0 + 99 + 158) / 3.0);
	colloc_sim_result_fini(&r);
	colloc_trace_destroy(t);
}

/* EASY backfill (the simulator's default) against the starvation rule, on
 * 2 GPUs, exclusive: job 2 wants both while job 1 holds one until 1000 s.
 * EASY reserves them for it: job 3 (2000 s, would end past 1000 s) waits
 * and job 4 (500 s) backfills, so job 2 starts at 1000 s. Under the
 * starvation rule job 3 takes the free GPU and job 2 starts at 2002 s. */
static void test_easy_backfill(void **state)
{
	static const char text[] = "id,submit_s,duration_s,gpus,model\n"
				   "1,0,1000,1,dqn\n"
				   "2,1,100,2,dqn\n"
				   "3,2,2000,1,dqn\n"
				   "4,3,500,1,dqn\n";
	struct colloc_trace *t = parse(text);
	struct colloc_sim_cluster c;
	struct colloc_sim_opts o;
	struct colloc_sim_result r;
	struct colloc_diag diag = {{0}};
	bool head_on_time = false;

	(void)state;
	assert_int_equal(colloc_sim_cluster_parse("1x2x40GiB", &c, &diag), 0);
	colloc_sim_opts_init(&o);
	assert_int_equal(o.sched.backfill_rule, COLLOC_BACKFILL_EASY);
	o.sched.policy = COLLOC_POLICY_EXCLUSIVE;
	o.est_error = 0;
	assert_int_equal(colloc_sim_run(t, &c, &o, &r, &diag), 0);
	assert_int_equal(r.finished, 4);
	/* JCTs: 1000 (job 1), 1099 (job 2), 500 (job 4), 3098 (job 3) */
	for (size_t k = 0; k < r.finished; k++)
		head_on_time |= fabs(r.jct_s[k] - 1099) < 1e-9;
	assert_true(head_on_time);
	assert_true(fabs(r.mean_wait_s - (0 + 999 + 0 + 1098) / 4.0) < 1e-9);
	assert_true(fabs(r.makespan_s - 3100) < 1e-9);
	colloc_sim_result_fini(&r);
	o.sched.backfill_rule = COLLOC_BACKFILL_STARVE;
	assert_int_equal(colloc_sim_run(t, &c, &o, &r, &diag), 0);
	assert_int_equal(r.finished, 4);
	head_on_time = false;
	for (size_t k = 0; k < r.finished; k++)
		head_on_time |= fabs(r.jct_s[k] - 2101) < 1e-9;
	assert_true(head_on_time);
	colloc_sim_result_fini(&r);
	colloc_trace_destroy(t);
}

/* Every GPU type a cluster may name has a platform profile of that GPU with
 * the compute facts the activity predictor needs. */
static void test_gpu_type_profiles(void **state)
{
	static const char *const types[] = {
		"A100-40GB", "A100-80GB", "H100-80GB", "H200-141GB", "V100-32GB",
		"V100-16GB", "P100-16GB", "K80",       "T4",	     "L4",
		"A10",	     "RTX3060",	  "RTX3090",   "RTX4090",
	};
	struct colloc_sim_cluster c;
	struct colloc_platform p;
	struct colloc_diag diag = {{0}};

	(void)state;
	for (size_t k = 0; k < sizeof(types) / sizeof(types[0]); k++) {
		char spec[64];

		snprintf(spec, sizeof(spec), "1x1x%s", types[k]);
		assert_int_equal(colloc_sim_cluster_parse(spec, &c, &diag), 0);
		assert_non_null(c.platform);
		if (colloc_platform_load(c.platform, &p, &diag))
			fail_msg("%s: %s", types[k], diag.msg);
		assert_true(p.fp32_tflops > 0 && p.sm_count > 0);
		/* within 2% of the profile's memory (SXM/PCIe variants) */
		assert_true(fabs((double)c.gpu_mem_bytes - (double)p.gpu_memory_bytes) <
			    0.02 * (double)p.gpu_memory_bytes);
	}
}

/*
 * request trusts declarations: two jobs declaring half a GPU each share it
 * (and start at once), a third declaring 0.6 waits; exclusive gives each a
 * GPU of its own. fgd runs the same gates. Declared memory is the trace's
 * (or the share of the GPU's): with a declaration below the true peak the
 * job crashes, as a wrong request does.
 */
static void test_request_shares(void **state)
{
	struct colloc_trace *t = parse("id,submit_s,duration_s,gpus,gpu_milli,model,mem\n"
				       "1,0,100,1,500,dqn,8GiB\n"
				       "2,0,100,1,500,dqn,8GiB\n"
				       "3,0,100,1,600,dqn,8GiB\n");
	struct colloc_trace *wrong =
		parse("id,submit_s,duration_s,gpus,gpu_milli,model,mem\n"
		      "1,0,100,1,500,dqn,1GiB\n");
	struct colloc_sim_result r;

	(void)state;
	run(t, "1x1x40GiB", COLLOC_POLICY_REQUEST, &r);
	assert_int_equal(r.finished, 3);
	assert_int_equal(r.shared_jobs, 2);
	assert_int_equal(r.oom_crashes, 0);
	/* 1 and 2 share from 0 s; 3 waits for both */
	assert_true(r.mean_wait_s > 0 && r.median_wait_s == 0);
	colloc_sim_result_fini(&r);
	run(t, "1x1x40GiB", COLLOC_POLICY_FGD, &r);
	assert_int_equal(r.shared_jobs, 2);
	assert_int_equal(r.jobs_lost, 0);
	colloc_sim_result_fini(&r);
	run(t, "1x1x40GiB", COLLOC_POLICY_EXCLUSIVE, &r);
	assert_int_equal(r.shared_jobs, 0);
	assert_true(fabs(r.makespan_s - 300) < 1e-6);
	colloc_sim_result_fini(&r);
	/* dqn's true peak is 1.5 GiB, above its 1 GiB declaration: alone it
	 * still fits the GPU, so it does not crash (the GPU, not the
	 * declaration, runs out) */
	run(wrong, "1x1x40GiB", COLLOC_POLICY_REQUEST, &r);
	assert_int_equal(r.finished, 1);
	assert_int_equal(r.oom_crashes, 0);
	colloc_sim_result_fini(&r);
	colloc_trace_destroy(wrong);
	colloc_trace_destroy(t);
}

/* --- heterogeneous clusters: node lists ---------------------------------- */

#define MAX_GPUS 64
#define MAX_JOBS 64

static const char *trace_dir(void)
{
	const char *d = getenv("COLLOC_TRACE_DIR");

	return d ? d : "tests/data/traces";
}

static struct colloc_sim_nodes *read_nodes(const char *file)
{
	struct colloc_sim_nodes *n = NULL;
	struct colloc_diag diag = {{0}};
	char path[4096];

	snprintf(path, sizeof(path), "%s/%s", trace_dir(), file);
	if (colloc_sim_nodes_read(path, &n, &diag))
		fail_msg("%s", diag.msg);
	return n;
}

/*
 * Every start of a run on a node list, checked as it happens: a job's GPUs
 * are on one node, whose model its gpu_spec names (when it has one). The
 * GPU -> node map is worked out here from the list (GPUs numbered node by
 * node, nodes without GPUs skipped), not asked of the simulator.
 */
struct starts {
	const struct colloc_trace *t;
	const struct colloc_sim_nodes *nl;
	int node_of[MAX_GPUS];
	int64_t start_ms[MAX_JOBS]; /* the last start of each job, -1: none */
	int node[MAX_JOBS]; /* its node in the list */
	int bad;
	char why[256];
};

static void starts_init(struct starts *st, const struct colloc_trace *t,
			const struct colloc_sim_nodes *nl)
{
	int g = 0;

	memset(st, 0, sizeof(*st));
	st->t = t;
	st->nl = nl;
	assert_true(t->n_jobs <= MAX_JOBS);
	for (size_t n = 0; n < nl->n; n++)
		for (int i = 0; i < nl->node[n].n_gpus; i++) {
			assert_true(g < MAX_GPUS);
			st->node_of[g++] = (int)n;
		}
	for (int j = 0; j < MAX_JOBS; j++)
		st->start_ms[j] = st->node[j] = -1;
}

/* Whether spec ("V100M16|V100M32", "" any) names model. */
static bool spec_names(const char *spec, const char *model)
{
	size_t len = strlen(model);

	if (!spec[0])
		return true;
	for (const char *p = spec; *p;) {
		const char *bar = strchr(p, '|');
		size_t n = bar ? (size_t)(bar - p) : strlen(p);

		if (n == len && memcmp(p, model, n) == 0)
			return true;
		p += n + (bar ? 1 : 0);
	}
	return false;
}

static void on_start(void *arg, int64_t now_ms, size_t job, const int *gpus, int n_gpus)
{
	struct starts *st = arg;
	const struct colloc_trace_job *tj = &st->t->jobs[job];
	int node = st->node_of[gpus[0]];

	st->start_ms[job] = now_ms;
	st->node[job] = node;
	for (int i = 0; i < n_gpus && !st->bad; i++) {
		const struct colloc_sim_node *nd = &st->nl->node[st->node_of[gpus[i]]];

		if (st->node_of[gpus[i]] != node ||
		    !spec_names(tj->gpu_spec, nd->gpu_type)) {
			st->bad++;
			snprintf(st->why, sizeof(st->why),
				 "job %llu (gpu_spec '%s') on GPU %d of node %s (%s)",
				 (unsigned long long)tj->id, tj->gpu_spec, gpus[i],
				 nd->name, nd->gpu_type);
		}
	}
}

static void run_nodes(const struct colloc_trace *t, const struct colloc_sim_nodes *nl,
		      int policy, struct starts *st, struct colloc_sim_result *r)
{
	struct colloc_sim_cluster c;
	struct colloc_sim_opts o;
	struct colloc_diag diag = {{0}};

	assert_int_equal(colloc_sim_cluster_nodes(nl, &c, &diag), 0);
	colloc_sim_opts_init(&o);
	o.sched.policy = policy;
	o.est_error = 0;
	starts_init(st, t, nl);
	o.on_start = on_start;
	o.on_start_arg = st;
	if (colloc_sim_run(t, &c, &o, r, &diag))
		fail_msg("%s", diag.msg);
	if (st->bad)
		fail_msg("%s: %s", colloc_policy_name(policy), st->why);
}

/* The excerpt node list as a cluster: its types, their memory (the
 * simulator's own types, G2 as FGD's simulator has it), the reference type;
 * and what a node list the simulator cannot take is told. */
static void test_node_list_cluster(void **state)
{
	static const char unknown[] = "sn,cpu_milli,memory_mib,gpu,model\n"
				      "a,1000,1024,2,B200\n";
	static const char cpu_only[] = "sn,cpu_milli,memory_mib,gpu,model\n"
				       "a,1000,1024,0,\n";
	struct colloc_sim_nodes *nl = read_nodes("alibaba2023_types_nodes.csv"),
				*bad = NULL;
	struct colloc_sim_cluster c, one;
	struct colloc_diag diag = {{0}};

	(void)state;
	assert_int_equal(colloc_sim_cluster_nodes(nl, &c, &diag), 0);
	assert_int_equal(c.n_nodes, 4); /* the CPU-only node is no part of it */
	assert_int_equal(c.gpus_per_node, 4);
	assert_int_equal(c.n_types, 3);
	assert_string_equal(c.types[0].name, "T4");
	assert_string_equal(c.types[1].name, "V100M32");
	assert_string_equal(c.types[2].name, "G2");
	assert_int_equal(c.types[0].n_gpus, 4);
	assert_int_equal(c.types[0].max_node_gpus, 2);
	assert_int_equal(colloc_sim_cluster_parse("1x1xT4", &one, &diag), 0);
	assert_true(c.types[0].mem_bytes == one.gpu_mem_bytes);
	assert_string_equal(c.types[0].platform, one.platform);
	assert_int_equal(colloc_sim_cluster_parse("1x1xV100-32GB", &one, &diag), 0);
	assert_true(c.types[1].mem_bytes == one.gpu_mem_bytes);
	assert_true(c.gpu_mem_bytes == one.gpu_mem_bytes);
	assert_string_equal(c.types[1].sim_type, "V100-32GB");
	assert_true(c.types[2].mem_bytes == 20971520000ull);
	assert_null(c.types[2].platform);
	/* T4 and G2 have 4 GPUs each: the first is the reference */
	assert_string_equal(c.gpu_type, "T4");
	assert_string_equal(c.platform, c.types[0].platform);
	assert_ptr_equal(c.nodes, nl);
	colloc_sim_nodes_destroy(nl);

	assert_int_equal(
		colloc_sim_nodes_parse("x.csv", unknown, strlen(unknown), &bad, &diag),
		0);
	assert_int_equal(colloc_sim_cluster_nodes(bad, &c, &diag), COLLOC_EUSAGE);
	assert_non_null(strstr(diag.msg, "'B200'"));
	assert_non_null(strstr(diag.msg, "V100M16"));
	assert_non_null(strstr(diag.msg, "A100-40GB"));
	colloc_sim_nodes_destroy(bad);
	assert_int_equal(
		colloc_sim_nodes_parse("x.csv", cpu_only, strlen(cpu_only), &bad, &diag),
		0);
	assert_int_equal(colloc_sim_cluster_nodes(bad, &c, &diag), COLLOC_EUSAGE);
	assert_non_null(strstr(diag.msg, "no GPUs"));
	colloc_sim_nodes_destroy(bad);
}

/*
 * The excerpt pod list on the excerpt node list: under every policy no pod
 * runs on a GPU model its gpu_spec does not name, the pod that names only
 * a model the cluster lacks (A10) fails, and none is lost. A T4-only pod
 * waits for a T4 while GPUs of other models are free: t-pod-04 arrives at
 * 2 s, when four T4 pods hold the four T4s and the V100M32 and G2 nodes run
 * nothing; without the constraints it starts at once.
 */
static void test_node_list_types(void **state)
{
	struct colloc_sim_nodes *nl = read_nodes("alibaba2023_types_nodes.csv");
	struct colloc_trace *t = NULL;
	struct colloc_diag diag = {{0}};
	struct colloc_sim_result r;
	struct starts st;
	char path[4096];

	(void)state;
	snprintf(path, sizeof(path), "%s/alibaba2023_types_pods.csv", trace_dir());
	if (colloc_trace_read("alibaba2023", path, NULL, &t, &diag))
		fail_msg("%s", diag.msg);
	assert_int_equal(t->n_jobs, 20); /* t-pod-18 is CPU-only */
	for (int policy = 0; policy < COLLOC_POLICY_COUNT_; policy++) {
		run_nodes(t, nl, policy, &st, &r);
		assert_int_equal(r.failed, 1);
		assert_int_equal(r.finished, 19);
		assert_int_equal(r.jobs_lost, 0);
		for (size_t j = 0; j < t->n_jobs; j++)
			if (strcmp(t->jobs[j].gpu_spec, "A10") == 0)
				assert_true(st.start_ms[j] < 0);
		colloc_sim_result_fini(&r);
	}
	run_nodes(t, nl, COLLOC_POLICY_EXCLUSIVE, &st, &r);
	assert_int_equal(t->jobs[4].id, 4);
	assert_true(st.start_ms[4] > t->jobs[4].submit_ms);
	colloc_sim_result_fini(&r);
	for (size_t j = 0; j < t->n_jobs; j++)
		t->jobs[j].gpu_spec[0] = '\0';
	run_nodes(t, nl, COLLOC_POLICY_EXCLUSIVE, &st, &r);
	assert_true(st.start_ms[4] == t->jobs[4].submit_ms);
	assert_int_equal(r.failed, 0);
	colloc_sim_result_fini(&r);
	colloc_trace_destroy(t);
	colloc_sim_nodes_destroy(nl);
}

/*
 * Each GPU has its model's memory: jobs declaring 20 GiB (request) fit only
 * the V100M32s (31.7 GiB; a T4 has 15 GiB, a G2 19.5 GiB), so two run at a
 * time there and the third after them; one declaring 40 GiB fits no GPU
 * and fails. And a GPU runs out of its own memory: eleven jobs declaring
 * 1 GiB and 0.09 of a GPU each go to the first GPU (a T4) together, and
 * at their peaks (dqn: 1.5 GiB) the last to allocate crash there.
 */
static void test_node_list_memory(void **state)
{
	static char packed[1024];
	size_t off = 0;

	struct colloc_sim_nodes *nl = read_nodes("alibaba2023_types_nodes.csv");
	struct colloc_trace *t = parse("id,submit_s,duration_s,gpus,model,mem\n"
				       "1,0,100,1,dqn,20GiB\n"
				       "2,0,100,1,dqn,20GiB\n"
				       "3,0,100,1,dqn,20GiB\n"
				       "4,0,100,1,dqn,40GiB\n");
	struct colloc_sim_result r;
	struct starts st;

	(void)state;
	run_nodes(t, nl, COLLOC_POLICY_REQUEST, &st, &r);
	assert_int_equal(r.finished, 3);
	assert_int_equal(r.failed, 1);
	assert_true(fabs(r.makespan_s - 200) < 1e-6);
	for (int j = 0; j < 3; j++)
		assert_string_equal(nl->node[st.node[j]].gpu_type, "V100M32");
	assert_true(st.start_ms[3] < 0);
	colloc_sim_result_fini(&r);
	colloc_trace_destroy(t);

	off = (size_t)snprintf(packed, sizeof(packed),
			       "id,submit_s,duration_s,gpus,gpu_milli,model,mem\n");
	for (int j = 1; j <= 11; j++)
		off += (size_t)snprintf(packed + off, sizeof(packed) - off,
					"%d,0,1000,1,90,dqn,1GiB\n", j);
	t = parse(packed);
	run_nodes(t, nl, COLLOC_POLICY_REQUEST, &st, &r);
	assert_int_equal(r.finished, 11);
	assert_true(r.oom_crashes > 0);
	colloc_sim_result_fini(&r);
	colloc_trace_destroy(t);
	colloc_sim_nodes_destroy(nl);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exclusive_serialises),
		cmocka_unit_test(test_sharing_slows_each),
		cmocka_unit_test(test_activity_is_predicted),
		cmocka_unit_test(test_physical_ceiling),
		cmocka_unit_test(test_easy_backfill),
		cmocka_unit_test(test_gpu_type_profiles),
		cmocka_unit_test(test_too_big_fails_not_lost),
		cmocka_unit_test(test_cluster_specs),
		cmocka_unit_test(test_no_job_lost_and_deterministic),
		cmocka_unit_test(test_energy_and_memory),
		cmocka_unit_test(test_window),
		cmocka_unit_test(test_request_shares),
		cmocka_unit_test(test_node_list_cluster),
		cmocka_unit_test(test_node_list_types),
		cmocka_unit_test(test_node_list_memory),
	};

	return cmocka_run_group_tests_name("sim", tests, NULL, NULL);
}
