/*
 * json_get.c — lenient accessors for collocd's JSON answers (json_get.h).
 */
#include "cli/json_get.h"

#include <cjson/cJSON.h>
#include <math.h>

const char *cli_jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

const cJSON *cli_jarray(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsArray(v) ? v : NULL;
}

const cJSON *cli_jobject(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsObject(v) ? v : NULL;
}

bool cli_jnum(const cJSON *o, const char *key, double *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	if (!cJSON_IsNumber(v) || !isfinite(v->valuedouble))
		return false;
	*out = v->valuedouble;
	return true;
}

bool cli_ju64(const cJSON *o, const char *key, uint64_t *out)
{
	double d;

	/* 2^64 itself is a double but not a uint64_t. */
	if (!cli_jnum(o, key, &d) || d < 0 || d >= 18446744073709551616.0 ||
	    d != floor(d))
		return false;
	*out = (uint64_t)d;
	return true;
}

bool cli_jint(const cJSON *o, const char *key, long long *out)
{
	double d;

	if (!cli_jnum(o, key, &d) || d < -9.0e18 || d > 9.0e18 || d != floor(d))
		return false;
	*out = (long long)d;
	return true;
}
