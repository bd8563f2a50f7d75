/*
 * fuzz_api.c — libFuzzer target for collocd's API requests (daemon/api.h).
 *
 * The input is one request: a first line "METHOD PATH[?QUERY]" and the
 * body after it. It goes through cd_api_handle() without a daemon (valid
 * requests then answer 503, everything else its 4xx), and the body through
 * the submit validator directly. Any bytes must give an answer with a JSON
 * error body, never a crash; a validated submit must hold what it promises.
 */
#include <cjson/cJSON.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/api.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *text = (const char *)data;
	const char *nl = memchr(text, '\n', size);
	size_t head = nl ? (size_t)(nl - text) : size;
	char line[512], *sp, *q;
	struct cd_peer peer = {1000, 1000, 1};
	struct cd_api_response r;
	struct cd_submit req;
	struct colloc_diag diag = {{0}};
	const char *body = nl ? nl + 1 : "";
	size_t body_len = nl ? size - head - 1 : 0;

	if (head >= sizeof(line))
		head = sizeof(line) - 1;
	memcpy(line, text, head);
	line[head] = '\0';
	if (memchr(line, '\0', head))
		return 0; /* HTTP never hands us a NUL in a path */
	sp = strchr(line, ' ');
	if (sp) {
		*sp++ = '\0';
		q = strchr(sp, '?');
		if (q)
			*q++ = '\0';
		cd_api_handle(NULL, &peer, line, sp, q ? q : "", NULL, body, body_len,
			      &r);
		if (r.status < 400 || !r.body) /* no daemon: never a success */
			abort();
		{
			cJSON *j = cJSON_ParseWithLength(r.body, r.body_len);

			if (!j)
				abort(); /* errors are JSON */
			cJSON_Delete(j);
		}
		cd_api_response_fini(&r);
	}
	if (cd_api_parse_submit(body, body_len, &req, &diag) == 0) {
		if (!req.argv_json || !req.env_json || req.cwd[0] != '/' ||
		    req.n_gpus < 1 || req.n_gpus > COLLOC_SCHED_MAX_GPUS)
			abort();
		cd_submit_fini(&req);
	} else if (!diag.msg[0]) {
		abort();
	}
	return 0;
}
