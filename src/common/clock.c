/*
 * clock.c — see clock.h.
 */
#include "common/clock.h"

#include <time.h>

static int64_t ms_of(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) != 0)
		return 0;
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t colloc__mono_ms(void)
{
	return ms_of(CLOCK_MONOTONIC);
}

int64_t colloc__wall_ms(void)
{
	return ms_of(CLOCK_REALTIME);
}
