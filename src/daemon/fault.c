/*
 * fault.c — crash points for tests (fault.h). Empty unless built with
 * COLLOC_FAULT_INJECTION.
 */
#include "daemon/fault.h"

#ifdef COLLOC_FAULT_INJECTION
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

void cd_fault_point(const char *name)
{
	const char *want = getenv("COLLOC_FAULT");

	if (want && strcmp(want, name) == 0)
		_exit(86);
}
#else
/* ISO C wants a translation unit to declare something. */
typedef int cd_fault_unused;
#endif
