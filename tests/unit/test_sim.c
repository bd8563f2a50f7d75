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
 * cannot together progress faster than the GPU allows.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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
	};

	return cmocka_run_group_tests_name("sim", tests, NULL, NULL);
}
