/*
 * test_sched.c — the placement core against scenario files
 * (the .scn files of tests/sched: a cluster, running jobs, a queue, and the decisions
 * worked out by hand, as data), plus input validation, decisions on random
 * inputs against those recorded in tests/sched/random_golden.txt, and a
 * timing print of one pass over 10,000 queued jobs on 1,000 GPUs.
 *
 * Scenario format, one item per line, '#' comments:
 *   config policy=P headroom=SIZE util_bound=X backfill=0|1 starve=DUR now=DUR cursor=N
 *   gpu node=N total=SIZE [used=SIZE] [util=X] [usable=0|1] [type=T]
 *   run id=N gpus=G[,G...] need=SIZE [used=SIZE] [peak=0|1] [util=X] [exclusive=0|1]
 *   job id=N gpus=N need=SIZE [util=X] [prio=N] [submit=DUR] [exclusive=0|1]
 *       [types=T[,T...]]        the GPU types it may use (type_mask)
 *   start ID on G[,G...]        the expected decisions, in order
 * DUR is milliseconds, or seconds with an "s" suffix.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "colloc/sched.h"
#include "colloc/units.h"

#define MAX_ITEMS 64

struct scenario {
	struct colloc_sched_config cfg;
	struct colloc_sched_gpu gpus[MAX_ITEMS];
	int n_gpus;
	struct colloc_sched_running run[MAX_ITEMS];
	size_t n_run;
	struct colloc_sched_job jobs[MAX_ITEMS];
	size_t n_jobs;
	struct colloc_sched_decision want[MAX_ITEMS];
	size_t n_want;
	int64_t now_ms;
	int cursor;
};

static char scn_dir[4096];

static int64_t dur_ms(const char *v)
{
	char *end;
	double d = strtod(v, &end);

	if (end == v)
		fail_msg("bad duration '%s'", v);
	if (*end == 's')
		d *= 1000;
	return (int64_t)d;
}

static uint64_t size_of(const char *v)
{
	uint64_t b;

	if (colloc_parse_size(v, &b))
		fail_msg("bad size '%s'", v);
	return b;
}

static int gpu_list(const char *v, int *out)
{
	int n = 0;

	while (*v && n < COLLOC_SCHED_MAX_GPUS) {
		char *end;
		long g = strtol(v, &end, 10);

		if (end == v)
			fail_msg("bad GPU list '%s'", v);
		out[n++] = (int)g;
		v = *end == ',' ? end + 1 : end;
	}
	return n;
}

static void parse_line(struct scenario *s, char *line, const char *file, int lineno)
{
	char *save = NULL, *kind = strtok_r(line, " \t\n", &save), *kv;
	struct colloc_sched_gpu *g = NULL;
	struct colloc_sched_running *r = NULL;
	struct colloc_sched_job *j = NULL;

	if (!kind || kind[0] == '#')
		return;
	if (strcmp(kind, "gpu") == 0) {
		assert_true(s->n_gpus < MAX_ITEMS);
		g = &s->gpus[s->n_gpus++];
		g->usable = true;
	} else if (strcmp(kind, "run") == 0) {
		assert_true(s->n_run < MAX_ITEMS);
		r = &s->run[s->n_run++];
	} else if (strcmp(kind, "job") == 0) {
		assert_true(s->n_jobs < MAX_ITEMS);
		j = &s->jobs[s->n_jobs++];
		j->n_gpus = 1;
	} else if (strcmp(kind, "start") == 0) {
		struct colloc_sched_decision *d = &s->want[s->n_want++];
		char *id = strtok_r(NULL, " \t\n", &save),
		     *on = strtok_r(NULL, " \t\n", &save);
		char *list = strtok_r(NULL, " \t\n", &save);

		if (!id || !on || strcmp(on, "on") != 0 || !list)
			fail_msg("%s:%d: want 'start ID on G[,G]'", file, lineno);
		d->job_id = strtoull(id, NULL, 10);
		d->n_gpus = gpu_list(list, d->gpus);
		return;
	} else if (strcmp(kind, "config") != 0) {
		fail_msg("%s:%d: unknown line '%s'", file, lineno, kind);
	}
	while ((kv = strtok_r(NULL, " \t\n", &save)) != NULL) {
		char *v = strchr(kv, '=');

		if (kv[0] == '#')
			break;
		if (!v)
			fail_msg("%s:%d: '%s' is not key=value", file, lineno, kv);
		*v++ = '\0';
		if (g && strcmp(kv, "node") == 0)
			g->node = (int)strtol(v, NULL, 10);
		else if (g && strcmp(kv, "total") == 0)
			g->mem_total_bytes = size_of(v);
		else if (g && strcmp(kv, "used") == 0)
			g->mem_used_bytes = size_of(v);
		else if (g && strcmp(kv, "util") == 0)
			g->util = strtod(v, NULL);
		else if (g && strcmp(kv, "usable") == 0)
			g->usable = strcmp(v, "0") != 0;
		else if (g && strcmp(kv, "isolated") == 0)
			g->isolated = strcmp(v, "0") != 0;
		else if (g && strcmp(kv, "busy_until") == 0)
			g->busy_until_ms = dur_ms(v);
		else if (g && strcmp(kv, "type") == 0)
			g->type = (int)strtol(v, NULL, 10);
		else if (j && strcmp(kv, "types") == 0) {
			int t[COLLOC_SCHED_MAX_GPUS], n_t = gpu_list(v, t);

			for (int i = 0; i < n_t; i++)
				j->type_mask |= (uint64_t)1 << (t[i] & 63);
		} else if (j && strcmp(kv, "walltime") == 0)
			j->walltime_ms = dur_ms(v);
		else if ((r || j) && strcmp(kv, "id") == 0)
			*(r ? &r->job_id : &j->id) = strtoull(v, NULL, 10);
		else if (r && strcmp(kv, "gpus") == 0)
			r->n_gpus = gpu_list(v, r->gpus);
		else if (j && strcmp(kv, "gpus") == 0)
			j->n_gpus = (int)strtol(v, NULL, 10);
		else if ((r || j) && strcmp(kv, "need") == 0)
			*(r ? &r->mem_need_bytes : &j->mem_need_bytes) = size_of(v);
		else if (r && strcmp(kv, "used") == 0)
			r->mem_used_bytes = size_of(v);
		else if (r && strcmp(kv, "peak") == 0)
			r->at_peak = strcmp(v, "0") != 0;
		else if ((r || j) && strcmp(kv, "util") == 0)
			*(r ? &r->util_pred : &j->util_pred) = strtod(v, NULL);
		else if ((r || j) && strcmp(kv, "exclusive") == 0)
			*(r ? &r->exclusive : &j->exclusive) = strcmp(v, "0") != 0;
		else if ((r || j) && strcmp(kv, "milli") == 0)
			*(r ? &r->gpu_milli : &j->gpu_milli) = (int)strtol(v, NULL, 10);
		else if (j && strcmp(kv, "prio") == 0)
			j->priority = (int)strtol(v, NULL, 10);
		else if (j && strcmp(kv, "submit") == 0)
			j->submit_ms = dur_ms(v);
		else if (!g && !r && !j && strcmp(kv, "policy") == 0) {
			s->cfg.policy = colloc_policy_parse(v);
			if (s->cfg.policy < 0)
				fail_msg("%s:%d: unknown policy '%s'", file, lineno, v);
		} else if (!g && !r && !j && strcmp(kv, "headroom") == 0)
			s->cfg.headroom_bytes = size_of(v);
		else if (!g && !r && !j && strcmp(kv, "util_bound") == 0)
			s->cfg.util_bound = strtod(v, NULL);
		else if (!g && !r && !j && strcmp(kv, "soft") == 0)
			s->cfg.util_soft = strcmp(v, "0") != 0;
		else if (!g && !r && !j && strcmp(kv, "queue_wait") == 0)
			s->cfg.queue_wait = strcmp(v, "0") != 0;
		else if (!g && !r && !j && strcmp(kv, "backfill") == 0)
			s->cfg.backfill = strcmp(v, "0") != 0;
		else if (!g && !r && !j && strcmp(kv, "starve") == 0)
			s->cfg.starve_ms = dur_ms(v);
		else if (!g && !r && !j && strcmp(kv, "rule") == 0) {
			s->cfg.backfill_rule = colloc_backfill_parse(v);
			if (s->cfg.backfill_rule < 0)
				fail_msg("%s:%d: unknown backfill rule '%s'", file,
					 lineno, v);
		} else if (!g && !r && !j && strcmp(kv, "now") == 0)
			s->now_ms = dur_ms(v);
		else if (!g && !r && !j && strcmp(kv, "cursor") == 0)
			s->cursor = (int)strtol(v, NULL, 10);
		else
			fail_msg("%s:%d: unknown key '%s'", file, lineno, kv);
	}
}

static void run_scenario(void **state)
{
	const char *name = *state;
	struct scenario s;
	struct colloc_sched_decision got[MAX_ITEMS];
	struct colloc_sched_state st;
	struct colloc_diag diag = {{0}};
	char path[4200], line[512];
	size_t n = 0;
	int lineno = 0;
	FILE *f;

	memset(&s, 0, sizeof(s));
	colloc_sched_config_init(&s.cfg);
	snprintf(path, sizeof(path), "%s/%s", scn_dir, name);
	f = fopen(path, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		parse_line(&s, line, name, ++lineno);
	fclose(f);
	st.gpus = s.gpus;
	st.n_gpus = s.n_gpus;
	st.running = s.run;
	st.n_running = s.n_run;
	st.now_ms = s.now_ms;
	st.rr_cursor = s.cursor;
	assert_int_equal(colloc_sched_decide(&s.cfg, &st, s.jobs, s.n_jobs, got,
					     MAX_ITEMS, &n, NULL, &diag),
			 0);
	for (size_t k = 0; k < n || k < s.n_want; k++) {
		if (k >= n)
			fail_msg("%s: job %llu should start (decision %zu) but nothing "
				 "did",
				 name, (unsigned long long)s.want[k].job_id, k + 1);
		if (k >= s.n_want)
			fail_msg("%s: job %llu started on GPU %d, expected no more "
				 "decisions",
				 name, (unsigned long long)got[k].job_id, got[k].gpus[0]);
		if (got[k].job_id != s.want[k].job_id ||
		    got[k].n_gpus != s.want[k].n_gpus ||
		    memcmp(got[k].gpus, s.want[k].gpus,
			   sizeof(int) * (size_t)got[k].n_gpus) != 0)
			fail_msg("%s: decision %zu is job %llu on GPU %d (of %d), "
				 "expected job %llu "
				 "on GPU %d (of %d)",
				 name, k + 1, (unsigned long long)got[k].job_id,
				 got[k].gpus[0], got[k].n_gpus,
				 (unsigned long long)s.want[k].job_id, s.want[k].gpus[0],
				 s.want[k].n_gpus);
	}
}

static void test_invalid_input(void **state)
{
	struct colloc_sched_config cfg;
	struct colloc_sched_gpu gpu = {0, 40ull << 30, 0, 0, true, false, 0, 0};
	struct colloc_sched_running r = {1, 1, {3}, 1, 0, false, 0, false, 0};
	struct colloc_sched_job j = {2, 0, 1, 0, 0, 0, false, 0, 0, 0};
	struct colloc_sched_state st = {&gpu, 1, NULL, 0, 0, 0};
	struct colloc_sched_decision d[4];
	struct colloc_diag diag = {{0}};
	size_t n = 99;

	(void)state;
	colloc_sched_config_init(&cfg);
	assert_int_equal(colloc_sched_decide(&cfg, &st, &j, 1, d, 4, &n, NULL, &diag),
			 COLLOC_EUSAGE);
	assert_non_null(strstr(diag.msg, "job 2 asks for 0 GPUs"));
	assert_int_equal(n, 0);
	j.n_gpus = 1;
	st.running = &r;
	st.n_running = 1;
	assert_int_equal(colloc_sched_decide(&cfg, &st, &j, 1, d, 4, &n, NULL, &diag),
			 COLLOC_EUSAGE);
	assert_non_null(strstr(diag.msg, "GPU 3, which does not exist"));
	/* A full decision array stops the pass without error. */
	st.n_running = 0;
	assert_int_equal(colloc_sched_decide(&cfg, &st, &j, 1, d, 0, &n, NULL, &diag), 0);
	assert_int_equal(n, 0);
	assert_int_equal(colloc_sched_decide(&cfg, &st, &j, 1, d, 4, &n, NULL, &diag), 0);
	assert_int_equal(n, 1);
}

/* The start-up reservation rule collocd and the simulator share. */
static void test_reserved_bytes(void **state)
{
	const uint64_t GB = 1ull << 30;
	const int64_t min = 60 * 1000;

	(void)state;
	/* short of its need and of the reserve time: the rest is held */
	assert_true(colloc_sched_reserved_bytes(10 * GB, 3 * GB, 0, 30000, min) ==
		    7 * GB);
	/* the reserve time lapses on the minute, not before */
	assert_true(colloc_sched_reserved_bytes(10 * GB, 3 * GB, 0, min - 1, min) ==
		    7 * GB);
	assert_true(colloc_sched_reserved_bytes(10 * GB, 3 * GB, 0, min, min) == 0);
	/* at its need (or above): nothing held, whatever the time */
	assert_true(colloc_sched_reserved_bytes(10 * GB, 10 * GB, 0, 0, min) == 0);
	assert_true(colloc_sched_reserved_bytes(10 * GB, 12 * GB, 0, 0, min) == 0);
	/* a clock before the start (never on a monotonic one): still held */
	assert_true(colloc_sched_reserved_bytes(10 * GB, 0, 5000, 1000, min) == 10 * GB);
	/* extreme clocks do not overflow */
	assert_true(colloc_sched_reserved_bytes(1, 0, INT64_MIN, INT64_MAX, min) == 0);
	assert_true(colloc_sched_reserved_bytes(1, 0, -min, 0, min) == 0);
	assert_string_equal(colloc_backfill_name(COLLOC_BACKFILL_EASY), "easy");
	assert_int_equal(colloc_backfill_parse("starve"), COLLOC_BACKFILL_STARVE);
	assert_int_equal(colloc_backfill_parse("fifo"), -1);
}

static void test_policy_names(void **state)
{
	(void)state;
	for (int k = 0; k < COLLOC_POLICY_COUNT_; k++)
		assert_int_equal(colloc_policy_parse(colloc_policy_name(k)), k);
	assert_int_equal(colloc_policy_parse("fifo"), -1);
	assert_int_equal(colloc_policy_parse(NULL), -1);
}

/* The benchmark's cluster and queue: 1,000 GPUs (125 nodes of 8), a third
 * of them busy, and 10,000 queued jobs of 1, 2 or 8 GPUs. */
#define BIG_G 1000
#define BIG_Q 10000

static void big_fill(struct colloc_sched_gpu *gpus, struct colloc_sched_job *jobs)
{
	uint64_t x = 12345;

	for (int g = 0; g < BIG_G; g++) {
		gpus[g].node = g / 8;
		gpus[g].mem_total_bytes = 80ull << 30;
		gpus[g].mem_used_bytes = g % 3 == 0 ? 60ull << 30 : 0;
		gpus[g].util = g % 3 == 0 ? 0.7 : 0;
		gpus[g].usable = true;
	}
	for (int k = 0; k < BIG_Q; k++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		jobs[k].id = (uint64_t)k + 1;
		jobs[k].n_gpus = (x >> 60) < 12 ? 1 : (x >> 60) < 15 ? 2 : 8;
		jobs[k].mem_need_bytes = ((x >> 20) % 40 + 1) << 30;
		jobs[k].util_pred = (double)((x >> 40) % 100) / 100.0;
		jobs[k].submit_ms = k;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* One pass over the big queue, timed (median and best of five; issue
 * target: under 10 ms), and its decisions checked never to overcommit a GPU
 * or to split a job across nodes. */
static void test_big_pass(void **state)
{
	enum { RUNS = 5 };
	static struct colloc_sched_gpu gpus[BIG_G];
	static struct colloc_sched_job jobs[BIG_Q];
	static struct colloc_sched_decision d[BIG_Q];
	static uint64_t committed[BIG_G];
	struct colloc_sched_config cfg;
	struct colloc_sched_state st = {gpus, BIG_G, NULL, 0, 0, 0};
	struct colloc_diag diag = {{0}};
	double ms[RUNS];
	size_t n = 0;

	(void)state;
	colloc_sched_config_init(&cfg);
	big_fill(gpus, jobs);
	for (int g = 0; g < BIG_G; g++)
		committed[g] = gpus[g].mem_used_bytes;
	for (int r = 0; r < RUNS; r++) {
		struct timespec t0, t1;

		clock_gettime(CLOCK_MONOTONIC, &t0);
		assert_int_equal(colloc_sched_decide(&cfg, &st, jobs, BIG_Q, d, BIG_Q, &n,
						     NULL, &diag),
				 0);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		ms[r] = (double)(t1.tv_sec - t0.tv_sec) * 1e3 +
			(double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
	}
	qsort(ms, RUNS, sizeof(ms[0]), cmp_double);
	print_message("sched: one pass, %d queued jobs on %d GPUs: %zu started in "
		      "%.2f ms median, %.2f ms best of %d (target < 10 ms, release "
		      "build)\n",
		      BIG_Q, BIG_G, n, ms[RUNS / 2], ms[0], RUNS);
	assert_true(n > 0);
	for (size_t k = 0; k < n; k++) {
		const struct colloc_sched_job *j = &jobs[d[k].job_id - 1];

		for (int i = 0; i < d[k].n_gpus; i++) {
			int g = d[k].gpus[i];

			assert_int_equal(gpus[g].node, gpus[d[k].gpus[0]].node);
			committed[g] += j->mem_need_bytes;
			assert_true(committed[g] + cfg.headroom_bytes <=
				    gpus[g].mem_total_bytes);
		}
	}
}

/*
 * Equivalence with recorded decisions: random small clusters and queues
 * (all five policies, multi-GPU and exclusive jobs, running jobs with
 * reservations, unusable GPUs, starvation, a short decision array), a few
 * large ones, the benchmark's, and small ones with odd numbers (NaN,
 * infinities, negative predictions, memory sizes near 2^64), generated from
 * fixed seeds. tests/sched/random_golden.txt holds the decisions the
 * scheduler made on them before its search was made fast (the plain scan of
 * every GPU the rules describe); a change to the scheduler's speed must not
 * change one of them. After a deliberate change of the rules, regenerate it
 * with
 *   COLLOC_SCHED_WRITE_GOLDEN=tests/sched/random_golden.txt test_sched
 * and review the difference.
 */
#define GOLDEN_SMALL 400
#define GOLDEN_LARGE 15
/* The policies the golden file was recorded with (request and fgd came
 * later: test_ctx_equivalence and the scenarios cover them). */
#define GOLDEN_POLICIES 5
#define GOLDEN_BIG GOLDEN_POLICIES /* the benchmark's, once per policy */
#define GOLDEN_ODD 60 /* small, with odd numbers: see rcase_oddify */
#define GOLDEN_ODD_AT (GOLDEN_SMALL + GOLDEN_LARGE + GOLDEN_BIG)
#define GOLDEN_ALL (GOLDEN_ODD_AT + GOLDEN_ODD)

struct rcase {
	struct colloc_sched_config cfg;
	struct colloc_sched_state st;
	struct colloc_sched_gpu *gpus;
	struct colloc_sched_running *run;
	struct colloc_sched_job *jobs;
	size_t n_jobs, cap;
};

static uint64_t rng_next(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static int rng_below(uint64_t *x, int n)
{
	return (int)(rng_next(x) % (uint64_t)n);
}

/* Memory sizes on a coarse grid, so that ties are common. */
static uint64_t rng_gib(uint64_t *x, int max_gib)
{
	return (uint64_t)rng_below(x, 2 * max_gib + 1) << 29;
}

/* Numbers at the edges: negative predictions, zero and overflowing memory
 * needs, GPUs of 2^64 - 1 bytes, headroom of half that; and with wild, NaN,
 * infinities and absurd magnitudes. */
static void rcase_oddify(struct rcase *c, uint64_t *x, bool wild)
{
	static const double wild_vals[] = {(double)NAN, (double)INFINITY,
					   -(double)INFINITY, 1e7, -1e7};

	for (int g = 0; g < c->st.n_gpus; g++) {
		if (rng_below(x, 8) == 0)
			c->gpus[g].util = wild ? wild_vals[rng_below(x, 5)] : -0.3;
		if (rng_below(x, 10) == 0)
			c->gpus[g].mem_total_bytes = UINT64_MAX;
		if (rng_below(x, 20) == 0)
			c->gpus[g].mem_used_bytes =
				UINT64_MAX - (uint64_t)rng_below(x, 3);
	}
	for (size_t r = 0; r < c->st.n_running; r++)
		if (rng_below(x, 8) == 0)
			c->run[r].util_pred = wild ? wild_vals[rng_below(x, 5)]
						   : -0.2 * (1 + rng_below(x, 3));
	for (size_t j = 0; j < c->n_jobs; j++) {
		struct colloc_sched_job *jp = &c->jobs[j];

		if (rng_below(x, 8) == 0)
			jp->util_pred = wild ? wild_vals[rng_below(x, 5)]
					     : -0.1 * (1 + rng_below(x, 5));
		if (rng_below(x, 10) == 0)
			jp->mem_need_bytes = UINT64_MAX - (uint64_t)rng_below(x, 3);
		else if (rng_below(x, 10) == 0)
			jp->mem_need_bytes = 0;
	}
	if (rng_below(x, 8) == 0)
		c->cfg.headroom_bytes = UINT64_MAX / 2;
	if (rng_below(x, 4) == 0)
		c->cfg.util_bound = wild ? (double)NAN : rng_below(x, 2) ? 1e9 : -1;
}

static void rcase_free(struct rcase *c)
{
	free(c->gpus);
	free(c->run);
	free(c->jobs);
}

/* Case k: small (k < GOLDEN_SMALL), large, the benchmark's, or small with
 * odd numbers. The arrays are allocated; free them with rcase_free. */
static void rcase_make(struct rcase *c, int k)
{
	static const uint64_t totals[] = {16ull << 30, 24ull << 30, 40ull << 30,
					  80ull << 30};
	static const int job_gpus[] = {1, 1, 1, 1, 1, 1, 2, 2, 3, 4, 8, 16};
	uint64_t x;
	bool large = k >= GOLDEN_SMALL && k < GOLDEN_ODD_AT, odd = k >= GOLDEN_ODD_AT;
	int n_gpus, n_run, node = 0, left = 0;
	int64_t now;

	x = 0xc0110c00ull + (uint64_t)k * 7919u;
	memset(c, 0, sizeof(*c));
	colloc_sched_config_init(&c->cfg);
	c->cfg.policy = k % GOLDEN_POLICIES;
	c->cfg.headroom_bytes = (uint64_t)rng_below(&x, 3) << 29;
	c->cfg.util_bound = 0.6 + 0.2 * rng_below(&x, 5);
	c->cfg.backfill = rng_below(&x, 5) != 0;
	/* A third of the cases have jobs that starve and hold the line. */
	c->cfg.starve_ms = rng_below(&x, 3) == 0
				   ? 1000 * (int64_t)(1 + rng_below(&x, 100))
				   : INT64_C(1) << 50;
	now = 1000 * (int64_t)rng_below(&x, 120);
	n_gpus = large ? 64 + rng_below(&x, 400) : 1 + rng_below(&x, 24);
	n_run = large ? rng_below(&x, n_gpus / 2) : rng_below(&x, n_gpus + 2);
	c->n_jobs =
		large ? 500 + (size_t)rng_below(&x, 3000) : 1 + (size_t)rng_below(&x, 40);
	if (odd) { /* enough that a pass builds its search tree */
		n_gpus += 64;
		c->n_jobs += 40;
	}
	c->gpus = calloc((size_t)n_gpus, sizeof(*c->gpus));
	c->run = calloc((size_t)n_run + 1, sizeof(*c->run));
	c->jobs = calloc(c->n_jobs + 1, sizeof(*c->jobs));
	assert_non_null(c->gpus);
	assert_non_null(c->run);
	assert_non_null(c->jobs);
	for (int g = 0; g < n_gpus; g++) {
		struct colloc_sched_gpu *gp = &c->gpus[g];

		/* Nodes of 1..8 GPUs; now and then a node's GPUs are not
		 * contiguous or its id is reused out of order. */
		if (left == 0) {
			node = rng_below(&x, 4) == 0 ? rng_below(&x, 1 + n_gpus / 4)
						     : node + 1;
			left = 1 + rng_below(&x, 8);
		}
		left--;
		gp->node = rng_below(&x, 10) == 0 ? rng_below(&x, 1 + n_gpus / 4) : node;
		gp->mem_total_bytes = totals[rng_below(&x, 4)];
		gp->mem_used_bytes = rng_below(&x, 3) == 0 ? rng_gib(&x, 90) : 0;
		gp->util = 0.05 * rng_below(&x, 21);
		gp->usable = rng_below(&x, 12) != 0;
	}
	for (int r = 0; r < n_run; r++) {
		struct colloc_sched_running *rp = &c->run[r];

		rp->job_id = 100000 + (uint64_t)r;
		rp->n_gpus = rng_below(&x, 4) == 0 ? 1 + rng_below(&x, 3) : 1;
		for (int i = 0; i < rp->n_gpus; i++)
			rp->gpus[i] = rng_below(&x, n_gpus);
		rp->mem_need_bytes = rng_gib(&x, 40);
		rp->mem_used_bytes = rng_below(&x, 2) ? rng_gib(&x, 40) : 0;
		rp->at_peak = rng_below(&x, 2);
		rp->util_pred = 0.1 * rng_below(&x, 11);
		rp->exclusive = rng_below(&x, 10) == 0;
	}
	for (size_t j = 0; j < c->n_jobs; j++) {
		struct colloc_sched_job *jp = &c->jobs[j];

		jp->id = 1 + (uint64_t)rng_below(&x, 1000000);
		jp->n_gpus = job_gpus[rng_below(&x, 12)];
		jp->mem_need_bytes = rng_gib(&x, 40);
		jp->util_pred = 0.1 * rng_below(&x, 11);
		jp->priority = rng_below(&x, 3);
		jp->submit_ms = 1000 * (int64_t)rng_below(&x, 120);
		jp->exclusive = rng_below(&x, 10) == 0;
	}
	c->st.gpus = c->gpus;
	c->st.n_gpus = n_gpus;
	c->st.running = c->run;
	c->st.n_running = (size_t)n_run;
	c->st.now_ms = now;
	c->st.rr_cursor = rng_below(&x, 2 * n_gpus + 2) - 1;
	c->cap = rng_below(&x, 6) == 0 ? (size_t)rng_below(&x, 6) : c->n_jobs;
	if (odd)
		rcase_oddify(c, &x, k % 2 == 1);
	if (k >= GOLDEN_SMALL + GOLDEN_LARGE && !odd) {
		rcase_free(c);
		memset(c, 0, sizeof(*c));
		colloc_sched_config_init(&c->cfg);
		c->cfg.policy = k % GOLDEN_POLICIES;
		c->gpus = calloc(BIG_G, sizeof(*c->gpus));
		c->jobs = calloc(BIG_Q, sizeof(*c->jobs));
		assert_non_null(c->gpus);
		assert_non_null(c->jobs);
		big_fill(c->gpus, c->jobs);
		c->st.gpus = c->gpus;
		c->st.n_gpus = BIG_G;
		c->n_jobs = c->cap = BIG_Q;
	}
}

/* Case k if it has GPUs enough for the core's search tree (64), made;
 * else nothing is left allocated and false. */
static bool rcase_large(struct rcase *c, int k)
{
	rcase_make(c, k);
	if (c->st.n_gpus >= 64)
		return true;
	rcase_free(c);
	return false;
}

/* One line of decisions (small and odd cases) or their hash (large ones). */
static void rcase_line(int k, char *buf, size_t len)
{
	struct rcase c;
	struct colloc_sched_decision *d;
	struct colloc_diag diag = {{0}};
	size_t n = 0, at;
	int cursor = -2;
	bool hash = k >= GOLDEN_SMALL && k < GOLDEN_ODD_AT;
	uint64_t h = 0xcbf29ce484222325ull;

	rcase_make(&c, k);
	d = calloc(c.n_jobs + 1, sizeof(*d));
	assert_non_null(d);
	assert_int_equal(colloc_sched_decide(&c.cfg, &c.st, c.jobs, c.n_jobs, d, c.cap,
					     &n, &cursor, &diag),
			 0);
	at = (size_t)snprintf(buf, len, "case %d policy=%s n=%zu cursor=%d", k,
			      colloc_policy_name(c.cfg.policy), n, cursor);
	for (size_t i = 0; i < n; i++) {
		if (hash) {
			uint64_t v[2 + COLLOC_SCHED_MAX_GPUS] = {d[i].job_id,
								 (uint64_t)d[i].n_gpus};

			for (int g = 0; g < d[i].n_gpus; g++)
				v[2 + g] = (uint64_t)d[i].gpus[g];
			for (int w = 0; w < 2 + d[i].n_gpus; w++)
				for (int b = 0; b < 8; b++)
					h = (h ^ ((v[w] >> (8 * b)) & 0xff)) *
					    0x100000001b3ull;
			continue;
		}
		at += (size_t)snprintf(buf + at, len - at, " %llu@",
				       (unsigned long long)d[i].job_id);
		for (int g = 0; g < d[i].n_gpus && at < len; g++)
			at += (size_t)snprintf(buf + at, len - at, g ? ",%d" : "%d",
					       d[i].gpus[g]);
		assert_true(at < len);
	}
	if (hash)
		snprintf(buf + at, len - at, " hash=%016llx", (unsigned long long)h);
	free(d);
	rcase_free(&c);
}

static void test_random_golden(void **state)
{
	const char *write = getenv("COLLOC_SCHED_WRITE_GOLDEN");
	static char got[16384], want[16384];
	char path[4200];
	FILE *f;
	int k;

	(void)state;
	if (write) {
		f = fopen(write, "w");
		assert_non_null(f);
		fprintf(f,
			"# Decisions of colloc_sched_decide on the random cases of "
			"test_sched.c\n# (test_random_golden); regenerate only after a "
			"deliberate change of the rules.\n");
		for (k = 0; k < GOLDEN_ALL; k++) {
			rcase_line(k, got, sizeof(got));
			fprintf(f, "%s\n", got);
		}
		assert_int_equal(fclose(f), 0);
		return;
	}
	snprintf(path, sizeof(path), "%s/random_golden.txt", scn_dir);
	f = fopen(path, "r");
	assert_non_null(f);
	k = 0;
	while (fgets(want, sizeof(want), f)) {
		want[strcspn(want, "\n")] = '\0';
		if (want[0] == '#' || want[0] == '\0')
			continue;
		rcase_line(k, got, sizeof(got));
		if (strcmp(got, want) != 0) {
			fclose(f);
			fail_msg("random case %d differs:\n got: %s\nwant: %s", k, got,
				 want);
		}
		k++;
	}
	fclose(f);
	assert_int_equal(k, GOLDEN_ALL);
}

/* GPU g's load from the running list, in its order (as the caller of a
 * context sums it). */
static void load_of(const struct colloc_sched_running *run, size_t n_run, int g,
		    struct colloc_sched_load *l)
{
	memset(l, 0, sizeof(*l));
	for (size_t r = 0; r < n_run; r++)
		for (int i = 0; i < run[r].n_gpus; i++)
			if (run[r].gpus[i] == g)
				colloc_sched_load_add(l, &run[r]);
}

/* A context over case c's GPUs, each set with the load of its running jobs. */
static struct colloc_sched_ctx *ctx_of_case(const struct rcase *c)
{
	struct colloc_sched_ctx *ctx = NULL;
	struct colloc_diag diag = {{0}};

	assert_int_equal(
		colloc_sched_ctx_create(&c->cfg, c->gpus, c->st.n_gpus, &ctx, &diag), 0);
	for (int g = 0; g < c->st.n_gpus; g++) {
		struct colloc_sched_load l;

		load_of(c->run, c->st.n_running, g, &l);
		assert_int_equal(colloc_sched_ctx_set_gpu(ctx, g, &c->gpus[g], &l, &diag),
				 0);
	}
	return ctx;
}

static void ctx_mark(bool *dirty, const struct colloc_sched_running *r)
{
	for (int i = 0; i < r->n_gpus; i++)
		dirty[r->gpus[i]] = true;
}

/* Both ways on one state: the same decisions and cursor. */
static void ctx_compare(int k, int round, struct colloc_sched_ctx *ctx,
			const struct rcase *c, const struct colloc_sched_job *q,
			size_t n_q, size_t cap, struct colloc_sched_decision *d1,
			struct colloc_sched_decision *d2, size_t *n_dec)
{
	struct colloc_diag diag = {{0}};
	size_t n1 = 0, n2 = 0;
	int cur1 = -2, cur2 = -2;

	assert_int_equal(
		colloc_sched_decide(&c->cfg, &c->st, q, n_q, d1, cap, &n1, &cur1, &diag),
		0);
	assert_int_equal(colloc_sched_ctx_decide(ctx, c->st.now_ms, c->st.rr_cursor, q,
						 n_q, d2, cap, &n2, &cur2, &diag),
			 0);
	if (n1 != n2 || cur1 != cur2)
		fail_msg("case %d round %d: %zu decisions, cursor %d; context: %zu, %d",
			 k, round, n1, cur1, n2, cur2);
	for (size_t i = 0; i < n1; i++)
		if (d1[i].job_id != d2[i].job_id || d1[i].n_gpus != d2[i].n_gpus ||
		    memcmp(d1[i].gpus, d2[i].gpus, sizeof(int) * (size_t)d1[i].n_gpus) !=
			    0)
			fail_msg("case %d round %d: decision %zu differs (job %llu / "
				 "%llu)",
				 k, round, i, (unsigned long long)d1[i].job_id,
				 (unsigned long long)d2[i].job_id);
	*n_dec = n1;
}

/*
 * The context decides what colloc_sched_decide does: every random case of
 * test_random_golden, then rounds of a cluster that changes between passes
 * as the simulator's does (decided jobs start, running jobs reach their
 * peak or stop -- swap-removed from the running list --, GPUs change
 * activity or usability, queues of a few jobs as of many), with only the
 * changed GPUs set in the context.
 */
/* A random case under a policy that reads declared shares: every job and
 * running job declares one (0: a whole GPU), from a generator of its own
 * so that the case is otherwise the golden one. */
static void rcase_shares(struct rcase *c, int k, int policy)
{
	uint64_t y = 0x5a4e5ull + (uint64_t)k;

	c->cfg.policy = policy;
	for (size_t r = 0; r < c->st.n_running; r++)
		c->run[r].gpu_milli = rng_below(&y, 3) == 0 ? 0 : 50 * rng_below(&y, 21);
	for (size_t j = 0; j < c->n_jobs; j++)
		c->jobs[j].gpu_milli = rng_below(&y, 3) == 0 ? 0 : 50 * rng_below(&y, 21);
}

static void test_ctx_equivalence(void **state)
{
	enum { ROUNDS = 12, SHARE_CASES = 240 };

	(void)state;
	/* The golden cases, then a share-reading policy over the first ones. */
	for (int kk = 0; kk < GOLDEN_ALL + 2 * SHARE_CASES; kk++) {
		int k = kk < GOLDEN_ALL ? kk : (kk - GOLDEN_ALL) / 2;
		struct rcase c;
		struct colloc_sched_ctx *ctx = NULL;
		struct colloc_diag diag = {{0}};
		struct colloc_sched_running *run;
		struct colloc_sched_decision *d1, *d2;
		struct colloc_sched_job *q;
		size_t n_run, cap_run, n_q, n_dec = 0;
		bool *dirty;
		uint64_t x = 0x5eedull + (uint64_t)k;

		rcase_make(&c, k);
		if (kk >= GOLDEN_ALL)
			rcase_shares(&c, k,
				     kk % 2 ? COLLOC_POLICY_FGD : COLLOC_POLICY_REQUEST);
		cap_run = c.st.n_running + c.n_jobs + 1;
		run = calloc(cap_run, sizeof(*run));
		d1 = calloc(c.n_jobs + 1, sizeof(*d1));
		d2 = calloc(c.n_jobs + 1, sizeof(*d2));
		q = calloc(c.n_jobs + 1, sizeof(*q));
		dirty = calloc((size_t)c.st.n_gpus + 1, sizeof(*dirty));
		assert_true(run && d1 && d2 && q && dirty);
		n_run = c.st.n_running;
		if (n_run)
			memcpy(run, c.run, n_run * sizeof(*run));
		memcpy(q, c.jobs, c.n_jobs * sizeof(*q));
		n_q = c.n_jobs;
		assert_int_equal(
			colloc_sched_ctx_create(&c.cfg, c.gpus, c.st.n_gpus, &ctx, &diag),
			0);
		for (int g = 0; g < c.st.n_gpus; g++)
			dirty[g] = true;
		for (int round = 0; round < ROUNDS; round++) {
			size_t window = n_q;

			for (int g = 0; g < c.st.n_gpus; g++) {
				struct colloc_sched_load l;

				if (!dirty[g])
					continue;
				dirty[g] = false;
				load_of(run, n_run, g, &l);
				assert_int_equal(colloc_sched_ctx_set_gpu(
							 ctx, g, &c.gpus[g], &l, &diag),
						 0);
			}
			c.st.running = run;
			c.st.n_running = n_run;
			/* Mostly the simulator's passes: a few jobs. */
			if (round > 0 && rng_below(&x, 3) != 0)
				window = n_q < 3 ? n_q : (size_t)(1 + rng_below(&x, 3));
			ctx_compare(k, round, ctx, &c, q, window,
				    round == 0 ? c.cap : window, d1, d2, &n_dec);
			/* Start what was decided; the queue loses those jobs. */
			for (size_t i = 0; i < n_dec; i++) {
				struct colloc_sched_running *r = &run[n_run++];
				size_t at = 0;

				while (q[at].id != d1[i].job_id)
					at++;
				memset(r, 0, sizeof(*r));
				r->job_id = q[at].id;
				r->n_gpus = d1[i].n_gpus;
				memcpy(r->gpus, d1[i].gpus,
				       sizeof(int) * (size_t)r->n_gpus);
				r->mem_need_bytes = q[at].mem_need_bytes;
				r->util_pred = q[at].util_pred;
				r->exclusive = q[at].exclusive;
				r->gpu_milli = q[at].gpu_milli;
				ctx_mark(dirty, r);
				memmove(&q[at], &q[at + 1], (n_q - at - 1) * sizeof(*q));
				n_q--;
			}
			/* Some reach their peak, some stop. */
			for (size_t r = 0; r < n_run; r++) {
				if (rng_below(&x, 4) == 0 && !run[r].at_peak) {
					run[r].at_peak = true;
					run[r].mem_used_bytes = run[r].mem_need_bytes / 2;
					ctx_mark(dirty, &run[r]);
				} else if (rng_below(&x, 5) == 0) {
					ctx_mark(dirty, &run[r]);
					run[r] = run[--n_run];
					/* Moved: its GPUs' sums add in another order. */
					if (r < n_run)
						ctx_mark(dirty, &run[r]);
				}
			}
			/* And a GPU or two changes. */
			for (int m = rng_below(&x, 3); m > 0 && c.st.n_gpus > 0; m--) {
				int g = rng_below(&x, c.st.n_gpus);

				c.gpus[g].util = 0.05 * rng_below(&x, 21);
				c.gpus[g].usable = rng_below(&x, 12) != 0;
				c.gpus[g].mem_used_bytes = rng_gib(&x, 20);
				dirty[g] = true;
			}
			c.st.now_ms += (int64_t)1000 * rng_below(&x, 60);
			c.st.rr_cursor = rng_below(&x, 2 * c.st.n_gpus + 2) - 1;
			if (n_q == 0)
				break;
		}
		colloc_sched_ctx_destroy(ctx);
		free(dirty);
		free(q);
		free(d2);
		free(d1);
		free(run);
		rcase_free(&c);
	}
}

/* The context's own errors. */
/*
 * request and fgd search the tree on large clusters; their decisions must
 * be the plain scan's. A prediction out of range on one running job (read
 * by neither policy) forces the plain scan on the same case.
 */
static void test_share_tree_is_scan(void **state)
{
	struct colloc_sched_class classes[6];

	(void)state;
	for (int kk = 0; kk < 2 * GOLDEN_ALL; kk++) {
		int k = kk / 2;
		struct rcase c;
		struct colloc_sched_decision *d1, *d2;
		struct colloc_sched_gpu *plain_gpus;
		struct colloc_diag diag = {{0}};
		size_t n1 = 0, n2 = 0;
		int rr1 = 0, rr2 = 0;

		if (!rcase_large(&c, k))
			continue;
		rcase_shares(&c, k, kk % 2 ? COLLOC_POLICY_FGD : COLLOC_POLICY_REQUEST);
		/* fgd with an expected workload of its own (the case where
		 * its scores have bounds in the tree), on every other case */
		if (kk % 4 == 3) {
			uint64_t y = 0xc1a55ull + (uint64_t)k;

			for (int m = 0; m < 6; m++)
				classes[m] = (struct colloc_sched_class){
					m < 3 ? 1 : 1 << (m - 2),
					m < 3 ? 100 + 300 * m : 1000,
					(uint32_t)(1 + rng_below(&y, 50))};
			c.cfg.classes = classes;
			c.cfg.n_classes = 6;
		}
		d1 = calloc(c.n_jobs + 1, sizeof(*d1));
		d2 = calloc(c.n_jobs + 1, sizeof(*d2));
		plain_gpus = calloc((size_t)c.st.n_gpus, sizeof(*plain_gpus));
		assert_true(d1 && d2 && plain_gpus);
		assert_int_equal(colloc_sched_decide(&c.cfg, &c.st, c.jobs, c.n_jobs, d1,
						     c.n_jobs, &n1, &rr1, &diag),
				 0);
		memcpy(plain_gpus, c.gpus, (size_t)c.st.n_gpus * sizeof(*plain_gpus));
		plain_gpus[0].util = (double)NAN;
		c.st.gpus = plain_gpus;
		assert_int_equal(colloc_sched_decide(&c.cfg, &c.st, c.jobs, c.n_jobs, d2,
						     c.n_jobs, &n2, &rr2, &diag),
				 0);
		c.st.gpus = c.gpus;
		if (n1 != n2)
			fail_msg("case %d (%s): %zu decisions by the tree, %zu by the "
				 "scan",
				 k, colloc_policy_name(c.cfg.policy), n1, n2);
		for (size_t i = 0; i < n1; i++) {
			assert_true(d1[i].job_id == d2[i].job_id);
			assert_int_equal(d1[i].n_gpus, d2[i].n_gpus);
			assert_memory_equal(d1[i].gpus, d2[i].gpus,
					    sizeof(int) * (size_t)d1[i].n_gpus);
		}
		assert_int_equal(rr1, rr2);
		free(d1);
		free(d2);
		free(plain_gpus);
		rcase_free(&c);
	}
}

/* One pass of a context over c's state against colloc_sched_decide(). */
static void ctx_vs_decide(struct colloc_sched_ctx *ctx, const struct rcase *c, int k,
			  const char *what)
{
	struct colloc_sched_decision *d1 = calloc(c->n_jobs + 1, sizeof(*d1)),
				     *d2 = calloc(c->n_jobs + 1, sizeof(*d2));
	struct colloc_diag diag = {{0}};
	size_t n1 = 0, n2 = 0;
	int rr1 = 0, rr2 = 0;

	assert_true(d1 && d2);
	assert_int_equal(colloc_sched_decide(&c->cfg, &c->st, c->jobs, c->n_jobs, d1,
					     c->n_jobs, &n1, &rr1, &diag),
			 0);
	assert_int_equal(colloc_sched_ctx_decide(ctx, c->st.now_ms, c->st.rr_cursor,
						 c->jobs, c->n_jobs, d2, c->n_jobs, &n2,
						 &rr2, &diag),
			 0);
	if (n1 != n2)
		fail_msg(
			"EASY case %d, %s: %zu decisions by the scan, %zu by the context",
			k, what, n1, n2);
	for (size_t i = 0; i < n1; i++) {
		assert_true(d1[i].job_id == d2[i].job_id);
		assert_memory_equal(d1[i].gpus, d2[i].gpus,
				    sizeof(int) * (size_t)d1[i].n_gpus);
	}
	free(d1);
	free(d2);
}

/*
 * EASY backfill through a context (its reservation index) decides as the
 * scan of every node does: the large golden cases with expected ends on
 * the busy GPUs and walltimes on the jobs, then again after some ends
 * moved.
 */
static void test_easy_index_is_scan(void **state)
{
	(void)state;
	for (int k = 0; k < GOLDEN_ALL; k++) {
		struct rcase c;
		struct colloc_sched_ctx *ctx = NULL;
		struct colloc_diag diag = {{0}};
		uint64_t x = 0xea5eull + (uint64_t)k;

		if (!rcase_large(&c, k))
			continue;
		c.cfg.backfill = true;
		c.cfg.backfill_rule = COLLOC_BACKFILL_EASY;
		for (int g = 0; g < c.st.n_gpus; g++)
			c.gpus[g].busy_until_ms =
				c.st.now_ms + 1000 * (int64_t)rng_below(&x, 50);
		for (size_t j = 0; j < c.n_jobs; j++)
			c.jobs[j].walltime_ms = 1000 * (int64_t)rng_below(&x, 60);
		ctx = ctx_of_case(&c);
		ctx_vs_decide(ctx, &c, k, "first pass");
		for (int round = 0; round < 3; round++) {
			for (int m = 0; m < 12; m++) {
				int g = rng_below(&x, c.st.n_gpus);
				struct colloc_sched_load l;

				c.gpus[g].busy_until_ms =
					c.st.now_ms + 1000 * (int64_t)rng_below(&x, 50);
				load_of(c.run, c.st.n_running, g, &l);
				assert_int_equal(colloc_sched_ctx_set_gpu(
							 ctx, g, &c.gpus[g], &l, &diag),
						 0);
			}
			c.st.now_ms += 1000 * (int64_t)rng_below(&x, 20);
			ctx_vs_decide(ctx, &c, k, "after ends moved");
		}
		colloc_sched_ctx_destroy(ctx);
		rcase_free(&c);
	}
}

/* estimate-aware's soft bound where every node is one bucket of eight GPUs
 * (the layout whose multi-GPU search prunes by the gate keys of each class
 * of busy GPUs): the context's tree finds what the scan finds, on the large
 * random cases with walltimes, ends and two to four jobs on some GPUs; with
 * GPUs of one size, and with every other node of 24 GiB, so that some jobs
 * fit only the larger nodes (the context memoizes each pass's earliest
 * empty times by need: within the least GPU's memory as one). */
static void test_soft_nodes_are_scan(void **state)
{
	static const int job_gpus[] = {1, 2, 2, 4, 4, 8};

	(void)state;
	for (int k = 0; k < 2 * GOLDEN_ALL; k++) {
		struct rcase c;
		struct colloc_sched_ctx *ctx = NULL;
		uint64_t x = 0x50f7ull + (uint64_t)(k % GOLDEN_ALL);
		bool two_sizes = k >= GOLDEN_ALL;

		if (!rcase_large(&c, k % GOLDEN_ALL))
			continue;
		c.cfg.policy = COLLOC_POLICY_ESTIMATE_AWARE;
		c.cfg.util_soft = true;
		c.cfg.util_bound = 0.8 + 0.1 * rng_below(&x, 3);
		c.cfg.backfill = true;
		c.cfg.backfill_rule = COLLOC_BACKFILL_EASY;
		for (int g = 0; g < c.st.n_gpus; g++) {
			c.gpus[g].node = g / 8;
			c.gpus[g].isolated = false;
			c.gpus[g].type = 0;
			c.gpus[g].usable = true;
			bool small = two_sizes && g / 8 % 2;

			c.gpus[g].mem_total_bytes = small ? 24ull << 30 : 80ull << 30;
			c.gpus[g].mem_used_bytes = 0;
			/* the small nodes empty first: a job too large for them
			 * waits longer than one they fit */
			c.gpus[g].busy_until_ms =
				c.st.now_ms +
				1000 * (int64_t)rng_below(&x, small ? 5 : 50);
		}
		/* running jobs on one GPU each, so that GPUs carry 1..4 */
		for (size_t r = 0; r < c.st.n_running; r++) {
			c.run[r].n_gpus = 1;
			c.run[r].gpus[0] = rng_below(&x, c.st.n_gpus / 4 + 1);
			c.run[r].exclusive = false;
			c.run[r].util_pred = 0.05 * rng_below(&x, 13);
		}
		for (size_t j = 0; j < c.n_jobs; j++) {
			c.jobs[j].n_gpus = job_gpus[rng_below(&x, 6)];
			c.jobs[j].walltime_ms = 1000 * (int64_t)rng_below(&x, 60);
			c.jobs[j].type_mask = 0;
			c.jobs[j].exclusive = false;
		}
		/* no GPU empty now, or the wait for empty GPUs is nil and the
		 * bound hard: a GPU without jobs is out of service */
		for (int g = 0; g < c.st.n_gpus; g++) {
			struct colloc_sched_load l;

			load_of(c.run, c.st.n_running, g, &l);
			c.gpus[g].usable = l.n_jobs > 0;
		}
		ctx = ctx_of_case(&c);
		ctx_vs_decide(ctx, &c, k % GOLDEN_ALL,
			      two_sizes ? "soft bound, nodes of 8, two sizes"
					: "soft bound, nodes of 8");
		c.st.now_ms += 1000 * (int64_t)rng_below(&x, 20);
		ctx_vs_decide(ctx, &c, k % GOLDEN_ALL,
			      two_sizes ? "soft bound, later, two sizes"
					: "soft bound, later");
		colloc_sched_ctx_destroy(ctx);
		rcase_free(&c);
	}
}

/*
 * A context's tree chooses its levels of free memory again from time to
 * time (every few thousand passes) and summarises itself again when they
 * change: through thousands of passes over one state, whose queue asks for
 * other amounts of memory halfway, the context still decides what the scan
 * does, under both policies that read levels.
 */
static void test_relevel_is_scan(void **state)
{
	static const int policies[] = {COLLOC_POLICY_ESTIMATE_AWARE,
				       COLLOC_POLICY_LEAST_UTILIZED};

	(void)state;
	for (int pi = 0; pi < 2; pi++) {
		struct rcase c;
		struct colloc_sched_ctx *ctx = NULL;
		struct colloc_sched_decision *d = NULL;
		struct colloc_diag diag = {{0}};
		int k = 0;

		/* the first golden case large enough for a tree */
		for (;; k++) {
			assert_true(k < GOLDEN_ALL);
			if (!rcase_large(&c, k))
				continue;
			if (c.n_jobs >= 8)
				break;
			rcase_free(&c);
		}
		c.cfg.policy = policies[pi];
		if (c.n_jobs > 12)
			c.n_jobs = 12; /* thousands of passes: a short queue */
		ctx = ctx_of_case(&c);
		d = calloc(c.n_jobs + 1, sizeof(*d));
		assert_non_null(d);
		for (int pass = 0; pass < 4400; pass++) {
			size_t n = 0;
			int rr = 0;

			if (pass == 2200)
				for (size_t j = 0; j < c.n_jobs; j++)
					c.jobs[j].mem_need_bytes =
						c.jobs[j].mem_need_bytes / 3 +
						(j % 5) * (256ull << 20);
			if (pass % 400 == 0 || pass == 4399) {
				ctx_vs_decide(ctx, &c, k, "through re-levelling");
				continue;
			}
			assert_int_equal(colloc_sched_ctx_decide(
						 ctx, c.st.now_ms, c.st.rr_cursor, c.jobs,
						 c.n_jobs, d, c.n_jobs, &n, &rr, &diag),
					 0);
		}
		free(d);
		colloc_sched_ctx_destroy(ctx);
		rcase_free(&c);
	}
}

/* GPU types on a random case, from a generator of its own: each node's
 * GPUs are of one of four types (now and then a GPU of a type outside
 * 0..63, which only unconstrained jobs may use), and about a third of the
 * jobs may use one or two of the types only. */
static void rcase_types(struct rcase *c, int k)
{
	uint64_t y = 0x7e9e5ull + (uint64_t)k;

	for (int g = 0; g < c->st.n_gpus; g++) {
		c->gpus[g].type = (int)((unsigned)c->gpus[g].node % 4);
		if (rng_below(&y, 40) == 0)
			c->gpus[g].type = rng_below(&y, 2) ? 64 : -1;
	}
	for (size_t j = 0; j < c->n_jobs; j++) {
		uint64_t m = 0;

		if (rng_below(&y, 3) == 0) {
			m = (uint64_t)1 << rng_below(&y, 4);
			if (rng_below(&y, 2))
				m |= (uint64_t)1 << rng_below(&y, 4);
		}
		c->jobs[j].type_mask = m;
	}
}

/* Whether job j may use GPU g of c by the rule of sched.h. */
static bool type_allows(const struct rcase *c, const struct colloc_sched_job *j, int g)
{
	int t = c->gpus[g].type;

	return j->type_mask == 0 || (t >= 0 && t < 64 && (j->type_mask >> t & 1u));
}

/*
 * c's state after the decisions d[0..n) started (not yet at their peak),
 * into run[] (room for the running jobs and n more); returns its length.
 * c's job ids are 1 + their index.
 */
static size_t started_state(const struct rcase *c, const struct colloc_sched_decision *d,
			    size_t n, struct colloc_sched_running *run)
{
	size_t n_run = c->st.n_running;

	if (n_run)
		memcpy(run, c->run, n_run * sizeof(*run));
	for (size_t i = 0; i < n; i++) {
		const struct colloc_sched_job *j;
		struct colloc_sched_running *r = &run[n_run++];

		assert_true(d[i].job_id >= 1 && d[i].job_id <= c->n_jobs);
		j = &c->jobs[d[i].job_id - 1];
		memset(r, 0, sizeof(*r));
		r->job_id = j->id;
		r->n_gpus = d[i].n_gpus;
		memcpy(r->gpus, d[i].gpus, sizeof(int) * (size_t)r->n_gpus);
		r->mem_need_bytes = j->mem_need_bytes;
		r->util_pred = j->util_pred;
		r->exclusive = j->exclusive;
		r->gpu_milli = j->gpu_milli;
	}
	return n_run;
}

/*
 * GPU types, on the random cases with types (rcase_types) and backfill:
 * a context (its search tree from the first search on the large cases,
 * its reservation index and memo with EASY) decides what
 * colloc_sched_decide does; no job lands on a GPU of a type it may not
 * use; and, under the starvation rule (no reservation), no job is left
 * waiting that could start once the pass is over (placements only take
 * room, so such a job could have started when its turn came): what a
 * failure wrongly taken to cover a job of other types would do.
 */
static void test_types(void **state)
{
	enum { MAX_CHECKED = 150 };

	(void)state;
	for (int k = 0; k < GOLDEN_SMALL + GOLDEN_LARGE; k++) {
		struct rcase c;
		struct colloc_sched_ctx *ctx = NULL;
		struct colloc_sched_decision *d1, *d2, one[1];
		struct colloc_sched_running *run;
		struct colloc_diag diag = {{0}};
		size_t n1 = 0, n2 = 0, n_one = 0, checked = 0;
		int rr1 = 0, rr2 = 0;
		bool easy = k % 2 == 1;
		uint64_t x = 0x7e9e5eedull + (uint64_t)k;

		rcase_make(&c, k);
		rcase_types(&c, k);
		/* Ids of their own: a decision names its job by id. */
		for (size_t j = 0; j < c.n_jobs; j++)
			c.jobs[j].id = 1 + (uint64_t)j;
		c.cfg.backfill = true;
		c.cfg.starve_ms = INT64_C(1) << 50;
		if (easy) {
			c.cfg.backfill_rule = COLLOC_BACKFILL_EASY;
			for (int g = 0; g < c.st.n_gpus; g++)
				c.gpus[g].busy_until_ms =
					c.st.now_ms + 1000 * (int64_t)rng_below(&x, 50);
			for (size_t j = 0; j < c.n_jobs; j++)
				c.jobs[j].walltime_ms = 1000 * (int64_t)rng_below(&x, 60);
		}
		d1 = calloc(c.n_jobs + 1, sizeof(*d1));
		d2 = calloc(c.n_jobs + 1, sizeof(*d2));
		run = calloc(c.st.n_running + c.n_jobs + 1, sizeof(*run));
		assert_true(d1 && d2 && run);
		ctx = ctx_of_case(&c);
		assert_int_equal(colloc_sched_decide(&c.cfg, &c.st, c.jobs, c.n_jobs, d1,
						     c.n_jobs, &n1, &rr1, &diag),
				 0);
		assert_int_equal(colloc_sched_ctx_decide(ctx, c.st.now_ms, c.st.rr_cursor,
							 c.jobs, c.n_jobs, d2, c.n_jobs,
							 &n2, &rr2, &diag),
				 0);
		if (n1 != n2 || rr1 != rr2)
			fail_msg("types case %d: %zu decisions, cursor %d; context: "
				 "%zu, %d",
				 k, n1, rr1, n2, rr2);
		for (size_t i = 0; i < n1; i++) {
			const struct colloc_sched_job *j;

			if (d1[i].job_id != d2[i].job_id ||
			    memcmp(d1[i].gpus, d2[i].gpus,
				   sizeof(int) * (size_t)d1[i].n_gpus) != 0)
				fail_msg("types case %d: decision %zu differs", k, i);
			assert_true(d1[i].job_id >= 1 && d1[i].job_id <= c.n_jobs);
			j = &c.jobs[d1[i].job_id - 1];
			for (int g = 0; g < d1[i].n_gpus; g++)
				if (!type_allows(&c, j, d1[i].gpus[g]))
					fail_msg("types case %d: job %llu (types %#llx) "
						 "on GPU %d of type %d",
						 k, (unsigned long long)j->id,
						 (unsigned long long)j->type_mask,
						 d1[i].gpus[g],
						 c.gpus[d1[i].gpus[g]].type);
		}
		c.st.running = run;
		c.st.n_running = started_state(&c, d1, n1, run);
		for (size_t q = 0; q < c.n_jobs && !easy && checked < MAX_CHECKED; q++) {
			bool started = false;

			for (size_t i = 0; i < n1 && !started; i++)
				started = d1[i].job_id == c.jobs[q].id;
			if (started)
				continue;
			checked++;
			assert_int_equal(colloc_sched_decide(&c.cfg, &c.st, &c.jobs[q], 1,
							     one, 1, &n_one, NULL, &diag),
					 0);
			if (n_one)
				fail_msg("types case %d: job %llu (types %#llx, %d GPUs) "
					 "waits, but GPU %d takes it after the pass",
					 k, (unsigned long long)c.jobs[q].id,
					 (unsigned long long)c.jobs[q].type_mask,
					 c.jobs[q].n_gpus, one[0].gpus[0]);
		}
		colloc_sched_ctx_destroy(ctx);
		free(run);
		free(d2);
		free(d1);
		rcase_free(&c);
	}
}

static void test_ctx_errors(void **state)
{
	struct colloc_sched_config cfg;
	struct colloc_sched_gpu gpus[2] = {{0, 1 << 30, 0, 0, true, false, 0, 0},
					   {0, 1 << 30, 0, 0, true, false, 0, 0}};
	struct colloc_sched_gpu moved = gpus[0];
	struct colloc_sched_job bad = {1, 0, 0, 0, 0, 0, false, 0, 0, 0};
	struct colloc_sched_decision d[1];
	struct colloc_sched_ctx *ctx = NULL;
	struct colloc_diag diag = {{0}};
	size_t n = 7;

	(void)state;
	colloc_sched_config_init(&cfg);
	colloc_sched_ctx_destroy(NULL);
	assert_int_equal(colloc_sched_ctx_create(&cfg, NULL, 2, &ctx, &diag),
			 COLLOC_EUSAGE);
	assert_null(ctx);
	assert_int_equal(colloc_sched_ctx_create(&cfg, gpus, 2, &ctx, &diag), 0);
	assert_int_equal(colloc_sched_ctx_set_gpu(ctx, 2, gpus, NULL, &diag),
			 COLLOC_EUSAGE);
	moved.node = 1;
	assert_int_equal(colloc_sched_ctx_set_gpu(ctx, 0, &moved, NULL, &diag),
			 COLLOC_EUSAGE);
	assert_int_equal(
		colloc_sched_ctx_decide(ctx, 0, 0, &bad, 1, d, 1, &n, NULL, &diag),
		COLLOC_EUSAGE);
	assert_int_equal(n, 0);
	colloc_sched_ctx_destroy(ctx);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	static char *names[128];
	static struct CMUnitTest tests[134];
	struct dirent *de;
	size_t n = 0, t = 0;
	DIR *d;
	int failed;

	snprintf(scn_dir, sizeof(scn_dir), "%s",
		 argc > 1 ? argv[1] : COLLOC_SCHED_SCENARIOS);
	d = opendir(scn_dir);
	if (!d) {
		fprintf(stderr, "test_sched: cannot open %s: %s\n", scn_dir,
			strerror(errno));
		return 1;
	}
	while ((de = readdir(d)) != NULL && n < 128) {
		size_t l = strlen(de->d_name);

		if (l > 4 && strcmp(de->d_name + l - 4, ".scn") == 0)
			names[n++] = strdup(de->d_name);
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_str);
	for (size_t k = 0; k < n; k++) {
		tests[t].name = names[k];
		tests[t].test_func = run_scenario;
		tests[t].initial_state = names[k];
		t++;
	}
	tests[t++] = (struct CMUnitTest)cmocka_unit_test(test_invalid_input);
	tests[t++] = (struct CMUnitTest)cmocka_unit_test(test_policy_names);
	tests[t++] = (struct CMUnitTest)cmocka_unit_test(test_reserved_bytes);
	tests[t++] = (struct CMUnitTest)cmocka_unit_test(test_random_golden);
	tests[t++] = (struct CMUnitTest)cmocka_unit_test(test_big_pass);
	tests[t++] = (struct CMUnitTest)cmocka_unit_test(test_ctx_equivalence);
	tests[t++] = (struct CMUnitTest)cmocka_unit_test(test_ctx_errors);
	tests[t++] = (struct CMUnitTest)cmocka_unit_test(test_share_tree_is_scan);
	tests[t++] = (struct CMUnitTest)cmocka_unit_test(test_easy_index_is_scan);
	tests[t++] = (struct CMUnitTest)cmocka_unit_test(test_soft_nodes_are_scan);
	tests[t++] = (struct CMUnitTest)cmocka_unit_test(test_relevel_is_scan);
	tests[t++] = (struct CMUnitTest)cmocka_unit_test(test_types);
	failed = _cmocka_run_group_tests("sched", tests, t, NULL, NULL);
	for (size_t k = 0; k < n; k++)
		free(names[k]);
	return failed;
}
