/*
 * config.h — collocd's configuration: defaults, the config file, and the
 * command-line overrides applied on top.
 *
 * The file is lines of `key = value`; `#` starts a comment; blank lines are
 * ignored; keys are the field names below (docs/collocd-config.md lists them
 * with units and defaults). Sizes take units (512MiB, 40GiB), durations too
 * (500ms, 1s, 30min). An unknown key, a bad value or a repeated key is an
 * error naming the file and line; nothing is partly applied: on error the
 * config is left as it was. Files over 64 KiB or lines over 1 KiB are
 * refused. Values may be double-quoted (\" and \\ escape inside quotes).
 *
 * Ownership: struct cd_config is caller-owned and holds everything inline.
 */
#ifndef COLLOC_DAEMON_CONFIG_H
#define COLLOC_DAEMON_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "colloc/error.h"
#include "colloc/sched.h"
#include "daemon/job.h"
#include "daemon/oom.h"

/* The longest `metrics` value: "[" IPv6 "]:" port, with room to spare. */
#define CD_LISTEN_MAX 64

enum cd_sharing {
	CD_SHARING_TIME_SLICING = 0, /* plain CUDA time-slicing */
	CD_SHARING_MPS, /* documented; needs the NVML backend (later) */
	CD_SHARING_MIG,
};

struct cd_config {
	char gpus[CD_PATH_MAX]; /* backend spec: "auto", "sim:4x40GiB", ... */
	bool allow_sim; /* "auto" may fall back to simulated GPUs when NVML
			 * is missing (cd_config_resolve_gpus) */
	char socket_path[CD_PATH_MAX];
	char db_path[CD_PATH_MAX];
	char state_dir[CD_PATH_MAX]; /* logs/ and status/ live here */
	struct colloc_sched_config sched; /* policy, headroom_bytes,
					   * util_bound, backfill, starve_ms */
	int sharing; /* enum cd_sharing */
	int64_t sample_ms; /* monitor interval */
	char admin_group[CD_USER_MAX]; /* members see and cancel all jobs;
					* "" = root only */
	uint64_t default_mem_bytes; /* need of a job nothing else sizes */
	double default_util; /* predicted activity when unknown, 0..1 */
	struct cd_oom_policy oom;
	int64_t kill_grace_ms; /* cancel: SIGTERM, then SIGKILL after */
	int64_t reserve_ms; /* a started job is assumed to reach its peak
			     * within this, or sooner if measured */
	char mps_control[CD_PATH_MAX]; /* sharing = mps: the control program */
	double mps_thread_share; /* sharing = mps: each job's share of SMs,
				  * 0..1; 0 = its predicted activity */
	char metrics[CD_LISTEN_MAX]; /* Prometheus endpoint "HOST:PORT";
				      * "" = none (cd_config_listen_parse) */
	int64_t retention_ms; /* finished jobs older than this are deleted
			       * (at start, then daily); 0 = kept forever */
	bool overuse_stop; /* time-slicing: a job using more than its need +
			    * headroom on a GPU it shares is stopped and
			    * queued again with its measured need */
	uint64_t user_max_queued; /* queued jobs one user may have; 0 = any */
	uint64_t log_max_bytes; /* a job's log is cut back to a note past
				 * this; 0 = no cap */
	bool job_cgroups; /* a cgroup v2 per job where collocd's own cgroup
			   * is delegated to it (cgroup.h) */
};

/* A TCP address to listen on, as cd_config_listen_parse() read it. */
struct cd_listen {
	int family; /* AF_INET or AF_INET6 */
	char host[48]; /* numeric: "127.0.0.1", "::1" (no brackets) */
	uint16_t port; /* 0: the kernel picks one */
	bool loopback; /* 127.0.0.0/8 or ::1 */
};

/*
 * Defaults: gpus "auto", socket $XDG_RUNTIME_DIR/collocd.sock (else
 * /tmp/colloc-UID/collocd.sock), db and state_dir under $XDG_STATE_HOME/collocd
 * (else ~/.local/state/collocd; /var/lib/collocd when root), policy
 * estimate-aware, headroom 512 MiB, util_bound 1.0, backfill on, starve
 * 30 min, time-slicing, sample 1 s, admin_group "", default_mem 8 GiB,
 * default_util 0.5, OOM policy per oom.h, kill_grace 10 s, reserve 60 s,
 * metrics "" (no TCP port opened), retention 0 (every job kept).
 */
void cd_config_defaults(struct cd_config *cfg);

/*
 * Apply the config text buf[0..len) to cfg; name ("collocd.conf") is used in
 * messages: "collocd.conf:7: unknown key 'polcy'". Returns 0, or
 * COLLOC_EFORMAT (malformed line, repeated key) / COLLOC_ELIMIT (file, line
 * or value too long) / COLLOC_EUSAGE (unknown key, bad value) with cfg
 * unchanged. buf need not be NUL-terminated; a NUL byte in it is an error.
 */
int cd_config_parse(struct cd_config *cfg, const char *buf, size_t len, const char *name,
		    struct colloc_diag *diag);

/* Read path and cd_config_parse() it. -errno when it cannot be read. */
int cd_config_load(struct cd_config *cfg, const char *path, struct colloc_diag *diag);

/*
 * Set one key as the file would (`key`, `value` without the '='); for
 * command-line overrides. The value is taken as is: no quotes or comments
 * (the shell has dealt with those). Returns 0 or COLLOC_EUSAGE naming the
 * key, with cfg unchanged.
 */
int cd_config_set(struct cd_config *cfg, const char *key, const char *value,
		  struct colloc_diag *diag);

/*
 * Read a `metrics` value: "HOST:PORT" where HOST is a numeric IPv4 address
 * (127.0.0.1, 0.0.0.0), a bracketed numeric IPv6 address ([::1], [::]) or
 * "localhost" (taken as 127.0.0.1, never looked up), and PORT a decimal
 * 0..65535 (0: any free port). Fills *out. Returns 0, or COLLOC_EUSAGE with
 * the reason in diag. "" is not an address: callers treat it as "off".
 */
int cd_config_listen_parse(const char *value, struct cd_listen *out,
			   struct colloc_diag *diag);

/* The config file collocd reads when --config is not given (and it
 * exists). */
#ifndef CD_CONFIG_DEFAULT_PATH
#define CD_CONFIG_DEFAULT_PATH "/etc/colloc/collocd.conf"
#endif

/* The simulated GPUs "auto" falls back to when allow_sim is set. */
#define CD_SIM_FALLBACK "sim:4x40GiB"

/* The state file of simulated GPUs without path=, inside state_dir. */
#define CD_SIM_STATE_NAME "gpus.sim"

/*
 * Turn cfg->gpus into the concrete spec cd_daemon_create() should open, so
 * that what collocd serves is decided here and said, never guessed:
 *  - "auto": "nvml" when nvml_ok (the caller opened NVML and saw a GPU);
 *    otherwise COLLOC_ENOTFOUND saying why (nvml_why) and how to ask for
 *    simulated GPUs, unless cfg->allow_sim, which gives CD_SIM_FALLBACK;
 *  - "auto:SPEC": "nvml" when nvml_ok, else SPEC (named on purpose);
 *  - "sim:ARGS" without path= (and "sim"): path=STATE_DIR/gpus.sim added,
 *    so that two collocds never book the same simulated GPUs, unless
 *    $COLLOC_SIM_STATE names the file;
 *  - anything else is left as it is.
 * note (note_len bytes, may be NULL) says what was chosen and why, for the
 * log. Returns 0, COLLOC_ENOTFOUND (cfg unchanged) or COLLOC_ELIMIT (the
 * spec would be too long).
 */
int cd_config_resolve_gpus(struct cd_config *cfg, bool nvml_ok, const char *nvml_why,
			   char *note, size_t note_len, struct colloc_diag *diag);

/* True when spec ("auto", "auto:SPEC") needs the NVML probe that
 * cd_config_resolve_gpus() is given. */
bool cd_config_gpus_is_auto(const char *spec);

/* Write cfg as a config file (every key, with its current value) to f;
 * `collocd --print-config`. What cd_config_parse() accepted always writes
 * and parses back to the same values. Returns 0 or -errno: -EINVAL or
 * -ENAMETOOLONG, with nothing written, when a value cannot be a line of the
 * file (a control character, a string over 1 KiB, an unknown enum value);
 * -EIO when f fails. */
int cd_config_write(const struct cd_config *cfg, FILE *f);

#endif
