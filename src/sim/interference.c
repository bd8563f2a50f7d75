/*
 * interference.c — slowdown of collocated jobs (colloc/interference.h):
 * Gavel's measured pairs, the activity model, its fit and the built-in
 * parameters. It reads and fits; the simulator (engine.c) decides what to
 * do with the speeds. Model and fit: docs/interference.md.
 */
#include "colloc/interference.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define N_WORKERS COLLOC_INTERFERENCE_N_WORKERS
#define MAX_TYPES COLLOC_INTERFERENCE_MAX_TYPES
#define NAME_MAX_ COLLOC_INTERFERENCE_NAME_MAX
#define SPEED_MAX 1.5
#define PAIR_INFEASIBLE (-1.0f)
#define ACT_SCALE 3.0

struct colloc_interference {
	int n_types;
	char type[MAX_TYPES][NAME_MAX_]; /* Gavel names, e.g. "LM (batch size 5)" */
	double params[3]; /* alpha, p, q */
	double act[N_WORKERS][MAX_TYPES]; /* derived activity, -1 unknown */
	float *pair; /* [w][a][b]: speed of a with b; 0 none; NULL builtin */
};

static const char *const worker_names[N_WORKERS] = {"v100", "p100", "k80"};

/* --- Gavel job types and model-name mapping ------------------------------ */

enum family { F_RESNET18, F_RESNET50, F_TRANSFORMER, F_LM, F_RECO, F_A3C, F_CYCLEGAN };

/* Gavel's 26 single-GPU job types, grouped by family in batch order; also
 * the type order of the builtin model. */
static const struct gavel_type {
	const char *name;
	enum family family;
	int batch;
} gavel_types[] = {
	{"ResNet-18 (batch size 16)", F_RESNET18, 16},
	{"ResNet-18 (batch size 32)", F_RESNET18, 32},
	{"ResNet-18 (batch size 64)", F_RESNET18, 64},
	{"ResNet-18 (batch size 128)", F_RESNET18, 128},
	{"ResNet-18 (batch size 256)", F_RESNET18, 256},
	{"ResNet-50 (batch size 16)", F_RESNET50, 16},
	{"ResNet-50 (batch size 32)", F_RESNET50, 32},
	{"ResNet-50 (batch size 64)", F_RESNET50, 64},
	{"ResNet-50 (batch size 128)", F_RESNET50, 128},
	{"Transformer (batch size 16)", F_TRANSFORMER, 16},
	{"Transformer (batch size 32)", F_TRANSFORMER, 32},
	{"Transformer (batch size 64)", F_TRANSFORMER, 64},
	{"Transformer (batch size 128)", F_TRANSFORMER, 128},
	{"Transformer (batch size 256)", F_TRANSFORMER, 256},
	{"A3C", F_A3C, 0},
	{"LM (batch size 5)", F_LM, 5},
	{"LM (batch size 10)", F_LM, 10},
	{"LM (batch size 20)", F_LM, 20},
	{"LM (batch size 40)", F_LM, 40},
	{"LM (batch size 80)", F_LM, 80},
	{"Recommendation (batch size 512)", F_RECO, 512},
	{"Recommendation (batch size 1024)", F_RECO, 1024},
	{"Recommendation (batch size 2048)", F_RECO, 2048},
	{"Recommendation (batch size 4096)", F_RECO, 4096},
	{"Recommendation (batch size 8192)", F_RECO, 8192},
	{"CycleGAN", F_CYCLEGAN, 0},
};
#define N_GAVEL_TYPES (sizeof(gavel_types) / sizeof(gavel_types[0]))

/* Model names (normalised: lower case, no '-', '_' or space) and the Gavel
 * family that trains most like them. Gavel's Transformer is a translation
 * model and LM an LSTM, so transformer LMs (gpt2) go with Transformer; the
 * RL jobs of the Philly-derived traces go with A3C. */
static const struct alias {
	const char *name;
	enum family family;
} aliases[] = {
	{"resnet18", F_RESNET18},
	{"resnet50", F_RESNET50},
	{"resnet101", F_RESNET50},
	{"resnext5032x4d", F_RESNET50},
	{"transformer", F_TRANSFORMER},
	{"bert", F_TRANSFORMER},
	{"bertbase", F_TRANSFORMER},
	{"gpt2", F_TRANSFORMER},
	{"distilgpt2", F_TRANSFORMER},
	{"lm", F_LM},
	{"lstm", F_LM},
	{"recommendation", F_RECO},
	{"ncf", F_RECO},
	{"a3c", F_A3C},
	{"a2c", F_A3C},
	{"dqn", F_A3C},
	{"cyclegan", F_CYCLEGAN},
};

const char *colloc_interference_gavel_type(const char *model, int64_t batch)
{
	char norm[NAME_MAX_];
	size_t n = 0, first = 0, count = 0, best;
	int fam = -1;

	if (!model)
		return NULL;
	for (const char *p = model; *p; p++) {
		if (*p == '-' || *p == '_' || *p == ' ')
			continue;
		if (n + 1 >= sizeof(norm))
			return NULL;
		norm[n++] = (char)tolower((unsigned char)*p);
	}
	norm[n] = '\0';
	for (size_t k = 0; k < sizeof(aliases) / sizeof(aliases[0]); k++)
		if (strcmp(norm, aliases[k].name) == 0)
			fam = (int)aliases[k].family;
	if (fam < 0)
		return NULL;
	for (size_t k = 0; k < N_GAVEL_TYPES; k++) {
		if ((int)gavel_types[k].family != fam)
			continue;
		if (count++ == 0)
			first = k;
	}
	best = first + count / 2;
	if (batch > 0 && gavel_types[first].batch > 0) {
		double want = log((double)batch), dbest = INFINITY;

		for (size_t k = first; k < first + count; k++) {
			double d = fabs(log((double)gavel_types[k].batch) - want);

			/* strict: on a tie the smaller batch wins */
			if (d < dbest - 1e-12) {
				dbest = d;
				best = k;
			}
		}
	}
	return gavel_types[best].name;
}

/* --- the builtin model ------------------------------------------------------ */

static const struct colloc_interference builtin = {
	.n_types = 26,
	.type = {"ResNet-18 (batch size 16)",
		 "ResNet-18 (batch size 32)",
		 "ResNet-18 (batch size 64)",
		 "ResNet-18 (batch size 128)",
		 "ResNet-18 (batch size 256)",
		 "ResNet-50 (batch size 16)",
		 "ResNet-50 (batch size 32)",
		 "ResNet-50 (batch size 64)",
		 "ResNet-50 (batch size 128)",
		 "Transformer (batch size 16)",
		 "Transformer (batch size 32)",
		 "Transformer (batch size 64)",
		 "Transformer (batch size 128)",
		 "Transformer (batch size 256)",
		 "A3C",
		 "LM (batch size 5)",
		 "LM (batch size 10)",
		 "LM (batch size 20)",
		 "LM (batch size 40)",
		 "LM (batch size 80)",
		 "Recommendation (batch size 512)",
		 "Recommendation (batch size 1024)",
		 "Recommendation (batch size 2048)",
		 "Recommendation (batch size 4096)",
		 "Recommendation (batch size 8192)",
		 "CycleGAN"},
	/* Fitted by `build/fit_interference
	 * /work/shared/data/gavel/simulation_throughputs.json` (Gavel commit
	 * c4fa400, 1881 measured pairs, 942 train / 939 held out). Held out:
	 * model MAE 0.1166, MAPE 22.3%; no interference 0.4138 / 92.2%;
	 * fair share 0.1543 / 27.7%. Activities: all pairs, after the fit. */
	.params = {3.6740, 0.0000, 1.0420},
	.act =
		{
			/* v100 */
			{0.054, 0.112, 0.171, 0.194, 0.400, 1.000, 0.843, 0.821, 0.520,
			 0.123, 0.122, 0.136, 0.169, 0.515, 0.151, 0.127, 0.134, 0.151,
			 0.189, 0.277, 0.339, 0.311, 0.308, 0.256, 0.289, 0.331},
			/* p100 */
			{0.240, 0.231, 0.321, 0.333, 0.385, 0.403, 0.412, 0.432, 0.420,
			 0.215, 0.278, 0.301, 0.300, 0.313, 0.320, 0.140, 0.148, 0.182,
			 0.218, 0.255, 0.096, 0.106, 0.126, 0.141, 0.145, 0.354},
			/* k80; ResNet-50 bs 128 never ran beside another job there */
			{0.379, 0.299, 0.299, 0.387, 0.431, 0.326, 0.397, 0.449, -1.000,
			 0.238, 0.265, 0.330, 0.378, 0.486, 0.505, 0.196, 0.199, 0.246,
			 0.296, 0.383, 0.136, 0.175, 0.221, 0.275, 0.328, 0.442},
		},
	.pair = NULL,
};

const struct colloc_interference *colloc_interference_builtin(void)
{
	return &builtin;
}

/* --- queries ------------------------------------------------------------------- */

int colloc_interference_worker(const char *worker)
{
	for (int w = 0; worker && w < N_WORKERS; w++)
		if (strcasecmp(worker, worker_names[w]) == 0)
			return w;
	return -1;
}

int colloc_interference_type(const struct colloc_interference *m, const char *name)
{
	for (int t = 0; name && t < m->n_types; t++)
		if (strcmp(m->type[t], name) == 0)
			return t;
	return -1;
}

const char *colloc_interference_type_name(const struct colloc_interference *m, int t)
{
	return t >= 0 && t < m->n_types ? m->type[t] : NULL;
}

static int valid(const struct colloc_interference *m, int w, int t)
{
	return w >= 0 && w < N_WORKERS && t >= 0 && t < m->n_types;
}

double colloc_interference_activity(const struct colloc_interference *m, int w, int t)
{
	return valid(m, w, t) ? m->act[w][t] : -1.0;
}

static size_t pair_index(int w, int a, int b)
{
	return ((size_t)w * MAX_TYPES + (size_t)a) * MAX_TYPES + (size_t)b;
}

double colloc_interference_pair(const struct colloc_interference *m, int w, int a, int b)
{
	if (!m->pair || !valid(m, w, a) || !valid(m, w, b))
		return 0.0;
	return m->pair[pair_index(w, a, b)];
}

void colloc_interference_params(const struct colloc_interference *m, double params[3])
{
	memcpy(params, m->params, sizeof(m->params));
}

static double clamp01(double x)
{
	/* NaN also becomes 0: a job with no idea of its activity is not
	 * allowed to poison the sum */
	return x > 0.0 ? (x < 1.0 ? x : 1.0) : 0.0;
}

/* formula() with pow(act_a, params[1]) given: the same arithmetic. */
static double formula_pow(const double params[3], double pow_a, double pressure)
{
	double s = 1.0 / (1.0 + params[0] * pow_a * pressure);

	return s > 0.0 && s <= 1.0 ? s : (s > 1.0 ? 1.0 : 1e-9);
}

static double formula(const double params[3], double act_a, double pressure)
{
	return formula_pow(params, pow(act_a, params[1]), pressure);
}

/* pow(a, params[1]) and pow(a, params[2]) for the activities of one GPU's
 * jobs, computed once per distinct activity (jobs of a kind share one):
 * pow() was most of the time of a GPU packed with many jobs. */
#define POW_MEMO 8
struct pow_memo {
	double a[POW_MEMO], p1[POW_MEMO], p2[POW_MEMO];
	int n, next;
};

static void pow_of(struct pow_memo *pm, const double params[3], double a, double *p1,
		   double *p2)
{
	int k;

	for (k = 0; k < pm->n; k++)
		if (pm->a[k] == a) {
			*p1 = pm->p1[k];
			*p2 = pm->p2[k];
			return;
		}
	*p1 = pow(a, params[1]);
	*p2 = pow(a, params[2]);
	k = pm->n < POW_MEMO ? pm->n++ : pm->next;
	pm->next = (k + 1) % POW_MEMO;
	pm->a[k] = a;
	pm->p1[k] = *p1;
	pm->p2[k] = *p2;
}

double colloc_interference_model_speed(const double params[3], double act_a,
				       const double *act_others, int n_others)
{
	double pressure = 0.0;

	if (n_others <= 0)
		return 1.0;
	for (int i = 0; i < n_others; i++)
		pressure += pow(clamp01(act_others[i]), params[2]);
	return formula(params, clamp01(act_a), pressure);
}

static double job_activity(const struct colloc_interference *m, int w,
			   const struct colloc_interference_job *j)
{
	if (valid(m, w, j->type) && m->act[w][j->type] >= 0.0)
		return m->act[w][j->type];
	return clamp01(j->activity);
}

double colloc_interference_speed(const struct colloc_interference *m, int w,
				 const struct colloc_interference_job *a,
				 const struct colloc_interference_job *others,
				 int n_others)
{
	double pressure = 0.0;

	if (n_others <= 0)
		return 1.0;
	if (n_others == 1) {
		double s = colloc_interference_pair(m, w, a->type, others[0].type);

		if (s > 0.0)
			return s < 1.0 ? s : 1.0;
	}
	for (int i = 0; i < n_others; i++)
		pressure += pow(job_activity(m, w, &others[i]), m->params[2]);
	return formula(m->params, job_activity(m, w, a), pressure);
}

/* Whether speed() answers a's speed beside b from a measurement. */
static bool measured(const struct colloc_interference *m, int w,
		     const struct colloc_interference_job *a,
		     const struct colloc_interference_job *b)
{
	return colloc_interference_pair(m, w, a->type, b->type) > 0;
}

void colloc_interference_gpu_speeds(const struct colloc_interference *m, int w,
				    const struct colloc_interference_job *jobs,
				    const double *busy, int n, double *speeds)
{
	double prefix = 0.0, suffix = 0.0, used = 0.0;

	if (n <= 0)
		return;
	if (n <= 2) {
		/* Where a measured pair applies, speed() has it. */
		for (int i = 0; i < n; i++)
			speeds[i] = colloc_interference_speed(m, w, &jobs[i],
							      &jobs[1 - i], n - 1);
		/* Both speeds measured: that is what the GPU did, within its
		 * ceiling by construction. Where the busy fractions handed in
		 * say otherwise, they are what is wrong (the predictor puts
		 * every Gavel type with a graph at 0.88..1.00; Gavel measured
		 * pairs of them at up to 1.5x together), so they do not scale
		 * a measurement down. */
		if (n == 2 && measured(m, w, &jobs[0], &jobs[1]) &&
		    measured(m, w, &jobs[1], &jobs[0]))
			return;
	} else {
		/* Each job's pressure is the sum over the others: the part
		 * after it is kept in speeds[] (no allocation), the part
		 * before it as the loop goes. */
		struct pow_memo pm;

		pm.n = pm.next = 0;
		for (int i = n; i-- > 0;) {
			double p1, p2;

			pow_of(&pm, m->params, job_activity(m, w, &jobs[i]), &p1, &p2);
			speeds[i] = suffix;
			suffix += p2;
		}
		for (int i = 0; i < n; i++) {
			double p1, own;

			pow_of(&pm, m->params, job_activity(m, w, &jobs[i]), &p1, &own);
			speeds[i] = formula_pow(m->params, p1, prefix + speeds[i]);
			prefix += own;
		}
	}
	/* A GPU cannot do more than all of its work: jobs that each keep it
	 * busy a fraction busy[i] of the time when alone cannot together
	 * keep it busier than always. The model alone does not know this
	 * (its parameters come from pairs, where it rarely binds). */
	for (int i = 0; i < n; i++)
		used += clamp01(busy ? busy[i] : jobs[i].activity) * speeds[i];
	if (used > 1.0)
		for (int i = 0; i < n; i++)
			speeds[i] /= used;
}

int colloc_interference_split(const char *worker, const char *type_a, const char *type_b)
{
	const char *parts[3] = {worker, type_a, type_b};
	uint32_t h = 2166136261u; /* FNV-1a */

	if (strcmp(type_a, type_b) > 0) {
		parts[1] = type_b;
		parts[2] = type_a;
	}
	for (int k = 0; k < 3; k++) {
		for (const char *p = parts[k]; *p; p++)
			h = (h ^ (unsigned char)*p) * 16777619u;
		h = (h ^ '|') * 16777619u;
	}
	return (int)((h ^ (h >> 16)) & 1u);
}

/* --- loader -------------------------------------------------------------------- */

/* "('Name', 1)" -> name and scale; 0, or COLLOC_EFORMAT. */
static int parse_key(const char *key, char name[NAME_MAX_], long *scale,
		     struct colloc_diag *diag)
{
	const char *p = key, *end;
	long s = 0;

	if (strncmp(p, "('", 2) != 0)
		goto bad;
	p += 2;
	end = strchr(p, '\'');
	if (!end || end == p)
		goto bad;
	if ((size_t)(end - p) >= NAME_MAX_)
		return colloc_diag_set(diag, COLLOC_ELIMIT,
				       "job type name in \"%s\" is longer than %d bytes",
				       key, NAME_MAX_ - 1);
	for (const char *c = p; c < end; c++)
		if (!isprint((unsigned char)*c))
			goto bad;
	memcpy(name, p, (size_t)(end - p));
	name[end - p] = '\0';
	p = end + 1;
	if (strncmp(p, ", ", 2) != 0)
		goto bad;
	p += 2;
	if (!isdigit((unsigned char)*p))
		goto bad;
	while (isdigit((unsigned char)*p) && s < 1000000)
		s = s * 10 + (*p++ - '0');
	if (strcmp(p, ")") != 0 || s < 1)
		goto bad;
	*scale = s;
	return 0;
bad:
	return colloc_diag_set(diag, COLLOC_EFORMAT,
			       "key \"%s\" is not of the form \"('Name', scale)\"", key);
}

static int type_id(struct colloc_interference *m, const char *name,
		   struct colloc_diag *diag)
{
	int t = colloc_interference_type(m, name);

	if (t >= 0)
		return t;
	if (m->n_types == MAX_TYPES)
		return colloc_diag_set(diag, COLLOC_ELIMIT, "more than %d job types",
				       MAX_TYPES);
	snprintf(m->type[m->n_types], NAME_MAX_, "%s", name);
	return m->n_types++;
}

static int check_key(const cJSON *v, struct colloc_diag *diag)
{
	if (strlen(v->string) >= COLLOC_INTERFERENCE_KEY_MAX)
		return colloc_diag_set(diag, COLLOC_ELIMIT,
				       "key \"%.40s...\" is over %d bytes", v->string,
				       COLLOC_INTERFERENCE_KEY_MAX - 1);
	return 0;
}

static int finite_nonneg(const cJSON *v)
{
	return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble >= 0.0;
}

/* One job type of one worker: {"null": thr, "('B', s)": [thr, thr], ...}. w is
 * -1 for a worker that is checked but not kept. */
static int parse_job(struct colloc_interference *m, int w, const cJSON *job,
		     size_t *entries, struct colloc_diag *diag)
{
	const cJSON *alone = NULL, *v;
	char name[NAME_MAX_];
	long scale;
	int a = -1, rc;

	if ((rc = check_key(job, diag)) ||
	    (rc = parse_key(job->string, name, &scale, diag)))
		return rc;
	if (!cJSON_IsObject(job))
		return colloc_diag_set(diag, COLLOC_EFORMAT, "\"%s\": expected an object",
				       job->string);
	cJSON_ArrayForEach(v, job)
	{
		if (++*entries > COLLOC_INTERFERENCE_MAX_ENTRIES)
			return colloc_diag_set(diag, COLLOC_ELIMIT,
					       "more than %d entries",
					       COLLOC_INTERFERENCE_MAX_ENTRIES);
		if ((rc = check_key(v, diag)))
			return rc;
		if (strcmp(v->string, "null") == 0) {
			if (!finite_nonneg(v))
				return colloc_diag_set(
					diag, COLLOC_EFORMAT,
					"\"%s\": \"null\" (alone throughput) must be a "
					"number >= 0",
					job->string);
			alone = v;
		}
	}
	if (w >= 0 && scale == 1 && alone && alone->valuedouble > 0.0 &&
	    (a = type_id(m, name, diag)) < 0)
		return a;
	cJSON_ArrayForEach(v, job)
	{
		char other[NAME_MAX_];
		const cJSON *x, *y;
		long oscale;
		int b;
		double s;

		if (strcmp(v->string, "null") == 0)
			continue;
		if ((rc = parse_key(v->string, other, &oscale, diag)))
			return colloc_diag_prefix(diag, rc, "\"%s\"", job->string);
		x = cJSON_GetArrayItem(v, 0);
		y = cJSON_GetArrayItem(v, 1);
		if (!cJSON_IsArray(v) || cJSON_GetArraySize(v) != 2 ||
		    !finite_nonneg(x) || !finite_nonneg(y))
			return colloc_diag_set(
				diag, COLLOC_EFORMAT,
				"\"%s\" with \"%s\": expected [throughput, "
				"throughput], numbers >= 0",
				job->string, v->string);
		if (a < 0 || oscale != 1)
			continue;
		if ((b = type_id(m, other, diag)) < 0)
			return b;
		s = x->valuedouble / alone->valuedouble;
		m->pair[pair_index(w, a, b)] =
			s > 0.0 ? (float)(s < SPEED_MAX ? s : SPEED_MAX)
				: PAIR_INFEASIBLE;
	}
	return 0;
}

static int parse_root(struct colloc_interference *m, const cJSON *root,
		      struct colloc_diag *diag)
{
	const cJSON *worker, *job;
	size_t entries = 0;
	int rc;

	if (!cJSON_IsObject(root))
		return colloc_diag_set(diag, COLLOC_EFORMAT,
				       "not a JSON object of worker types");
	cJSON_ArrayForEach(worker, root)
	{
		int w = colloc_interference_worker(worker->string);

		if ((rc = check_key(worker, diag)))
			return rc;
		if (!cJSON_IsObject(worker))
			return colloc_diag_set(
				diag, COLLOC_EFORMAT,
				"worker \"%s\": expected an object of job types",
				worker->string);
		cJSON_ArrayForEach(job, worker)
		{
			if ((rc = parse_job(m, w, job, &entries, diag)))
				return colloc_diag_prefix(diag, rc, "worker \"%s\"",
							  worker->string);
		}
	}
	return 0;
}

/* The builtin parameters stand until colloc_interference_fit(). */
static struct colloc_interference *model_new(void)
{
	struct colloc_interference *m = calloc(1, sizeof(*m));

	if (!m)
		return NULL;
	m->pair = calloc((size_t)N_WORKERS * MAX_TYPES * MAX_TYPES, sizeof(*m->pair));
	if (!m->pair) {
		free(m);
		return NULL;
	}
	memcpy(m->params, builtin.params, sizeof(m->params));
	for (int w = 0; w < N_WORKERS; w++)
		for (int t = 0; t < MAX_TYPES; t++)
			m->act[w][t] = -1.0;
	return m;
}

int colloc_interference_parse_gavel(const char *text, size_t len,
				    struct colloc_interference **out,
				    struct colloc_diag *diag)
{
	struct colloc_interference *m;
	cJSON *root;
	int rc;

	if (len > COLLOC_INTERFERENCE_MAX_BYTES)
		return colloc_diag_set(diag, COLLOC_ELIMIT, "larger than %zu bytes",
				       COLLOC_INTERFERENCE_MAX_BYTES);
	root = cJSON_ParseWithLength(text, len);
	if (!root)
		return colloc_diag_set(diag, COLLOC_EFORMAT, "not valid JSON");
	m = model_new();
	if (!m) {
		cJSON_Delete(root);
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	}
	rc = parse_root(m, root, diag);
	cJSON_Delete(root);
	if (rc) {
		colloc_interference_destroy(m);
		return rc;
	}
	*out = m;
	return 0;
}

int colloc_interference_load_gavel(const char *json_path,
				   struct colloc_interference **out,
				   struct colloc_diag *diag)
{
	FILE *f = fopen(json_path, "rb");
	char *text;
	size_t len;
	int rc;

	if (!f) {
		rc = -errno;
		return colloc_diag_set(diag, rc == -ENOENT ? COLLOC_ENOTFOUND : rc,
				       "%s: cannot open: %s", json_path, strerror(-rc));
	}
	text = malloc(COLLOC_INTERFERENCE_MAX_BYTES + 1);
	if (!text) {
		fclose(f);
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	}
	len = fread(text, 1, COLLOC_INTERFERENCE_MAX_BYTES + 1, f);
	rc = ferror(f) ? -EIO : 0;
	fclose(f);
	if (rc == 0)
		rc = colloc_interference_parse_gavel(text, len, out, diag);
	else
		colloc_diag_printf(diag, "read error");
	free(text);
	if (rc)
		return colloc_diag_prefix(diag, rc, "%s", json_path);
	return 0;
}

void colloc_interference_destroy(struct colloc_interference *m)
{
	if (!m || m == &builtin)
		return;
	free(m->pair);
	free(m);
}

/* --- fit ----------------------------------------------------------------------- */

struct obs {
	int w, a, b;
	double speed;
	int test; /* colloc_interference_split() */
};

/* Activity of a type = mean extra time (1/speed - 1) it inflicts on its
 * partners, divided by ACT_SCALE and clamped to [0, 1]. 1/speed - 1 inverts
 * the formula with alpha = 1, p = 0, q = 1 (0: harmless, 1: halves every
 * partner); the heaviest Gavel type, ResNet-50 at batch 16 on a V100, leaves
 * its partners a quarter of their speed (3), so ACT_SCALE = 3 keeps the
 * scale from saturating. Only observations with test == use_test, or all
 * when use_test < 0, count. */
static void derive_activities(double act[N_WORKERS][MAX_TYPES], const struct obs *o,
			      size_t n, int use_test)
{
	double sum[N_WORKERS][MAX_TYPES] = {{0}};
	int cnt[N_WORKERS][MAX_TYPES] = {{0}};

	for (size_t i = 0; i < n; i++) {
		if (use_test >= 0 && o[i].test != use_test)
			continue;
		sum[o[i].w][o[i].b] += 1.0 / o[i].speed - 1.0;
		cnt[o[i].w][o[i].b]++;
	}
	for (int w = 0; w < N_WORKERS; w++)
		for (int t = 0; t < MAX_TYPES; t++)
			act[w][t] = cnt[w][t] ? clamp01(sum[w][t] / cnt[w][t] / ACT_SCALE)
					      : -1.0;
}

/* Observations of one half whose two types both have an activity, with
 * those activities looked up once (the fit evaluates them many times). */
struct sample {
	double aa, ab, speed;
};

/* Sum of squared relative errors: a simulator turns speeds into durations,
 * so an error of 0.1 at speed 0.2 matters more than at speed 0.9 (and the
 * MAPE reported is the matching measure). */
static double sse(const double params[3], const struct sample *s, size_t n)
{
	double e = 0.0;

	for (size_t i = 0; i < n; i++) {
		double d =
			formula(params, s[i].aa, pow(s[i].ab, params[2])) / s[i].speed -
			1.0;

		e += d * d;
	}
	return e;
}

/* Grid search, then three rounds of a finer grid around the best point. A
 * 3-parameter least-squares problem of ~1000 points does not need more, and
 * a grid cannot fall into the degenerate corners Nelder-Mead can. */
static void fit_params(const struct sample *s, size_t n, double best[3])
{
	double lo[3] = {0.05, 0.0, 0.0}, hi[3] = {16.0, 3.0, 3.0};
	double step[3] = {0.1, 0.25, 0.25}, ebest = INFINITY;

	best[0] = 1.0;
	best[1] = 0.0;
	best[2] = 1.0;
	for (int round = 0; round < 4; round++) {
		double c[3] = {best[0], best[1], best[2]}, p[3], from[3];
		int count[3];

		for (int k = 0; k < 3; k++) {
			double to = round ? fmin(hi[k], c[k] + 5 * step[k]) : hi[k];

			from[k] = round ? fmax(lo[k], c[k] - 5 * step[k]) : lo[k];
			count[k] = (int)floor((to - from[k]) / step[k] + 1e-9) + 1;
		}
		for (int i = 0; i < count[0]; i++)
			for (int j = 0; j < count[1]; j++)
				for (int k = 0; k < count[2]; k++) {
					double e;

					p[0] = from[0] + i * step[0];
					p[1] = from[1] + j * step[1];
					p[2] = from[2] + k * step[2];
					e = sse(p, s, n);
					if (e < ebest) {
						ebest = e;
						memcpy(best, p, sizeof(p));
					}
				}
		for (int k = 0; k < 3; k++)
			step[k] /= 5.0;
	}
}

static void add_err(double pred, double speed, double *mae, double *mape)
{
	*mae += fabs(pred - speed);
	*mape += fabs(pred - speed) / speed;
}

int colloc_interference_fit(struct colloc_interference *m,
			    struct colloc_interference_report *rep,
			    struct colloc_diag *diag)
{
	struct colloc_interference_report r = {0};
	double act[N_WORKERS][MAX_TYPES];
	struct sample *train = NULL;
	struct obs *o = NULL;
	size_t n = 0, cap = (size_t)N_WORKERS * MAX_TYPES * MAX_TYPES;

	if (!m->pair)
		return colloc_diag_set(diag, COLLOC_ENOTFOUND,
				       "no measured pairs to fit");
	o = malloc(cap * sizeof(*o));
	train = malloc(cap * sizeof(*train));
	if (!o || !train) {
		free(o);
		free(train);
		return colloc_diag_set(diag, -ENOMEM, "out of memory");
	}
	for (int w = 0; w < N_WORKERS; w++)
		for (int a = 0; a < m->n_types; a++)
			for (int b = 0; b < m->n_types; b++) {
				float s = m->pair[pair_index(w, a, b)];

				if (s == PAIR_INFEASIBLE)
					r.n_infeasible++;
				if (s <= 0.0f)
					continue;
				o[n].w = w;
				o[n].a = a;
				o[n].b = b;
				o[n].speed = s;
				o[n].test = colloc_interference_split(
					worker_names[w], m->type[a], m->type[b]);
				n++;
			}
	r.n_pairs = n;
	derive_activities(act, o, n, 0);
	for (size_t i = 0; i < n; i++) {
		double aa = act[o[i].w][o[i].a], ab = act[o[i].w][o[i].b];

		if (aa < 0.0 || ab < 0.0)
			continue; /* a type never seen as a partner in training */
		if (!o[i].test) {
			train[r.n_train].aa = aa;
			train[r.n_train].ab = ab;
			train[r.n_train++].speed = o[i].speed;
		}
	}
	if (r.n_train < 3) {
		free(o);
		free(train);
		return colloc_diag_set(diag, COLLOC_ENOTFOUND,
				       "%zu usable training pairs; need at least 3",
				       r.n_train);
	}
	fit_params(train, r.n_train, r.params);
	r.train_rmsre = sqrt(sse(r.params, train, r.n_train) / (double)r.n_train);
	for (size_t i = 0; i < n; i++) {
		double aa = act[o[i].w][o[i].a], ab = act[o[i].w][o[i].b];

		if (!o[i].test || aa < 0.0 || ab < 0.0)
			continue;
		r.n_test++;
		add_err(colloc_interference_model_speed(r.params, aa, &ab, 1), o[i].speed,
			&r.test_mae, &r.test_mape);
		add_err(1.0, o[i].speed, &r.none_mae, &r.none_mape);
		add_err(0.5, o[i].speed, &r.fair_mae, &r.fair_mape);
	}
	if (r.n_test) {
		double k = (double)r.n_test;

		r.test_mae /= k;
		r.test_mape /= k;
		r.none_mae /= k;
		r.none_mape /= k;
		r.fair_mae /= k;
		r.fair_mape /= k;
	}
	memcpy(m->params, r.params, sizeof(m->params));
	derive_activities(m->act, o, n, -1);
	free(o);
	free(train);
	if (rep)
		*rep = r;
	return 0;
}
