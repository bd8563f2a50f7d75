/*
 * fuzz_status.c — libFuzzer target for the supervisor's status files
 * (cd_status_parse, daemon/launcher.h): any bytes must give a status or a
 * clear error, never a crash; a parsed status has a known kind, a code that
 * fits it and a NUL-terminated message.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/launcher.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cd_status st;
	struct colloc_diag diag = {{0}};

	if (cd_status_parse((const char *)data, size, "fuzz", &st, &diag) == 0) {
		if (strnlen(st.message, sizeof(st.message)) == sizeof(st.message) ||
		    st.kind < CD_STATUS_EXITED || st.kind > CD_STATUS_SETUP_FAILED ||
		    st.code < 0 || st.job_pid < 0 || st.start_ms < 0 || st.end_ms < 0)
			abort();
	} else if (diag.msg[0] == '\0') {
		abort(); /* every failure explains itself */
	}
	return 0;
}
