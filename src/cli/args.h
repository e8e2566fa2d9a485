/* Reading the CLI's option values: one parser per kind of value, each naming the flag and
 * the text it was given in its error (INVALID_ARGUMENT). Outputs are written only on
 * success. Strings are borrowed; nothing here allocates. */
#ifndef RF_CLI_ARGS_H
#define RF_CLI_ARGS_H

#include <stdint.h>

#include "rowfuse/status.h"

/* A decimal integer in lo..hi (inclusive), nothing after it. */
rf_status_t rf_cli_parse_int64(const char *flag, const char *text, int64_t lo, int64_t hi,
                               int64_t *out);
/* The same for an int-sized value. */
rf_status_t rf_cli_parse_int(const char *flag, const char *text, int lo, int hi, int *out);
/* A finite decimal number strictly between lo and hi (pass +-INFINITY for no bound). */
rf_status_t rf_cli_parse_double(const char *flag, const char *text, double lo, double hi,
                                double *out);
/* A shape ROWSxCHANNELSxHIDDEN: three integers in 1..RF_MAX_DIM joined by 'x'. */
rf_status_t rf_cli_parse_shape(const char *flag, const char *text, int64_t dims[3]);
/* One of names (a NULL-terminated list): its index into *out. */
rf_status_t rf_cli_parse_choice(const char *flag, const char *text, const char *const *names,
                                int *out);

#endif
