/* Reading a JSON document from a file, for every reader of rowfuse's own files (plan.json,
 * kernels.json, a lab's index.json): one place that bounds the size, reads the whole file
 * and parses it with cJSON. Internal to rowfuse (not an installed header). */
#ifndef RF_BASE_JSON_READ_H
#define RF_BASE_JSON_READ_H

#include <cjson/cJSON.h>

#include "rowfuse/status.h"

/* The document at `path`, at most max_bytes long, parsed into *out (the caller deletes it
 * with cJSON_Delete; NULL on any error). Errors name the path: NOT_FOUND when it does not
 * exist, IO_ERROR when it cannot be opened or read, PARSE_ERROR when it is larger than
 * max_bytes or not valid JSON, OUT_OF_MEMORY. */
rf_status_t rf_json_read_file(const char *path, long max_bytes, cJSON **out);

#endif
