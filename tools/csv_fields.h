/*
 * csv_fields.h — splitting one line of a measurement CSV into fields, for
 * the benchmark and calibration tools (tools/bench_perf.c, tools/fit_perf.c).
 * Not a general CSV parser: double-quoted fields without embedded quotes or
 * newlines, which is what the measurement files hold.
 */
#ifndef COLLOC_TOOLS_CSV_FIELDS_H
#define COLLOC_TOOLS_CSV_FIELDS_H

#include <stdio.h>

/* Split line in place into at most max fields (pointers into line); a
 * trailing newline ends the last field. Returns the number of fields. */
int tool_csv_split(char *line, char **f, int max);

/* Index of the header field called name in hdr[0..n), or -1. */
int tool_csv_col(char **hdr, int n, const char *name);

/* idx[k] = tool_csv_col(hdr, n, names[k]) for k < count. Returns the
 * first name the header lacks, or NULL when it has them all. */
const char *tool_csv_cols(char **hdr, int n, const char *const *names, int *idx,
			  int count);

/* Open the CSV at path and split its header line (read into
 * hline[0..hline_len)) into hdr[0..max); *nh gets the field count. NULL
 * when the file cannot be opened or is empty. */
FILE *tool_csv_open(const char *path, char *hline, int hline_len, char **hdr, int max,
		    int *nh);

#endif
