/*
 * fault.h — crash points for the tests of collocd's crash windows.
 *
 * cd_fault_point(NAME) ends the process at once (_exit(86), no cleanup, as
 * a kill -9 would) when the environment variable COLLOC_FAULT names NAME,
 * so a test can stop the daemon exactly between two steps that a crash
 * must not tear apart. Compiled in only with -DCOLLOC_FAULT_INJECTION=ON
 * (the asan preset, what the test suite builds); otherwise every point is
 * an empty inline function. The points: "launch-before-fork" (the launch is
 * committed, no supervisor yet), "launch-after-fork" (the supervisor runs
 * the job, its pid is not committed) and "submit-after-commit" (a submit is
 * committed, its answer not sent).
 */
#ifndef COLLOC_DAEMON_FAULT_H
#define COLLOC_DAEMON_FAULT_H

#ifdef COLLOC_FAULT_INJECTION
void cd_fault_point(const char *name);
#else
static inline void cd_fault_point(const char *name)
{
	(void)name;
}
#endif

#endif
