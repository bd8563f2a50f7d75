/*
 * clock.h — milliseconds from the two clocks colloc reads (internal to
 * libcolloc and the programs built on it). The scheduler core never calls
 * these: it is handed the time.
 */
#ifndef COLLOC_CLOCK_H
#define COLLOC_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in ms: for intervals and deadlines. */
int64_t colloc__mono_ms(void);

/* CLOCK_REALTIME in ms since the epoch: for timestamps people read. */
int64_t colloc__wall_ms(void);

#endif
