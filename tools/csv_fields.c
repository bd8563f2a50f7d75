/*
 * csv_fields.c — see csv_fields.h.
 */
#include "csv_fields.h"

#include <string.h>

static int end_of_field(char c)
{
	return c == ',' || c == '\0' || c == '\n' || c == '\r';
}

int tool_csv_split(char *line, char **f, int max)
{
	int n = 0;
	char *p = line;

	while (n < max) {
		if (*p == '"') {
			char *w = ++p;

			f[n++] = w;
			while (*p && !(*p == '"' && end_of_field(p[1])))
				p++;
			if (*p)
				*p++ = '\0';
		} else {
			f[n++] = p;
			while (!end_of_field(*p))
				p++;
		}
		if (*p != ',') {
			*p = '\0';
			break;
		}
		*p++ = '\0';
	}
	return n;
}

int tool_csv_col(char **hdr, int n, const char *name)
{
	for (int i = 0; i < n; i++)
		if (strcmp(hdr[i], name) == 0)
			return i;
	return -1;
}

const char *tool_csv_cols(char **hdr, int n, const char *const *names, int *idx,
			  int count)
{
	const char *missing = NULL;

	for (int k = 0; k < count; k++) {
		idx[k] = tool_csv_col(hdr, n, names[k]);
		if (idx[k] < 0 && !missing)
			missing = names[k];
	}
	return missing;
}

FILE *tool_csv_open(const char *path, char *hline, int hline_len, char **hdr, int max,
		    int *nh)
{
	FILE *f = fopen(path, "r");

	if (!f)
		return NULL;
	if (!fgets(hline, hline_len, f)) {
		fclose(f);
		return NULL;
	}
	*nh = tool_csv_split(hline, hdr, max);
	return f;
}
