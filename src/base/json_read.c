/* Reading a JSON document from a file (json_read.h). */
#include "base/json_read.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

rf_status_t rf_json_read_file(const char *path, long max_bytes, cJSON **out) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f)
        return RF_ERR(errno == ENOENT ? RF_CODE_NOT_FOUND : RF_CODE_IO_ERROR, "%s: %s", path,
                      strerror(errno));
    long n = -1;
    if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || n > max_bytes ||
        fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return RF_ERR(RF_CODE_PARSE_ERROR, "%s: unreadable or larger than %ld bytes", path,
                      max_bytes);
    }
    char *text = malloc((size_t)n + 1);
    if (!text) {
        fclose(f);
        return RF_ERR(RF_CODE_OUT_OF_MEMORY, "%s: %ld bytes", path, n);
    }
    size_t got = fread(text, 1, (size_t)n, f);
    int failed = ferror(f);
    fclose(f);
    if (failed || got != (size_t)n) {
        free(text);
        return RF_ERR(RF_CODE_IO_ERROR, "%s: short read (%zu of %ld bytes)", path, got, n);
    }
    text[got] = '\0';
    *out = cJSON_ParseWithLength(text, got);
    free(text);
    return *out ? RF_OK : RF_ERR(RF_CODE_PARSE_ERROR, "%s: not valid JSON", path);
}
