/*
 * json_get.h — lenient reading of collocd's JSON answers, shared by the
 * commands that are its clients (the job commands, top_data.c, cmd_gpus.c).
 *
 * Lenient: a member that is missing, null or of another type reads as
 * absent (NULL or false), never as 0 and never as a crash, so that the
 * caller can print "-". Not a validator and not a writer (cli.h has
 * cli_json_u64() for that). Nothing here allocates: strings and arrays
 * point into the cJSON tree the caller owns.
 */
#ifndef COLLOC_CLI_JSON_GET_H
#define COLLOC_CLI_JSON_GET_H

#include <stdbool.h>
#include <stdint.h>

struct cJSON;

/* The string under key, or NULL. */
const char *cli_jstr(const struct cJSON *o, const char *key);

/* The array under key, or NULL (never another type: cJSON_ArrayForEach
 * would walk an object's members). */
const struct cJSON *cli_jarray(const struct cJSON *o, const char *key);

/* The object under key, or NULL (never another type). */
const struct cJSON *cli_jobject(const struct cJSON *o, const char *key);

/* The finite number under key into *out; false (out untouched) otherwise. */
bool cli_jnum(const struct cJSON *o, const char *key, double *out);

/* A non-negative integral number that fits in 64 bits. */
bool cli_ju64(const struct cJSON *o, const char *key, uint64_t *out);

/* An integral number within +-9e18 (a long long, exactly or nearly). */
bool cli_jint(const struct cJSON *o, const char *key, long long *out);

#endif
