/* file.h - files in and out, for every tool of dmm.
 *
 * dmm_read_file reads a whole file (or standard input) into memory.
 * dmm_outfile_t is an output that appears under its name only once it is
 * complete: the data goes to a temporary file in the same directory, which
 * is renamed (or, without force, linked, so that an existing file is never
 * replaced) on commit; a failed or abandoned output leaves nothing behind.
 * An existing device or FIFO (/dev/null, a named pipe) is written directly.
 * dmm_write_file does all of it for a buffer already in memory. */
#ifndef DMM_BASE_FILE_H
#define DMM_BASE_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tracer/base/err.h"

/* Read a whole file ("-" = standard input) into a malloc'd buffer. */
int dmm_read_file(const char *path, uint8_t **buf, size_t *len, dmm_err_t *err);

typedef struct dmm_outfile {
    FILE *fp;           /* write here */
    char *path;         /* the final name */
    char *tmp;          /* the temporary file's name; NULL when direct */
    int   force;
} dmm_outfile_t;

/* Open an output for path; without force an existing path is refused
 * ("exists; not replacing it (use --force)"). */
int dmm_out_open(dmm_outfile_t *o, const char *path, int force, dmm_err_t *err);
/* Flush and give the file its name; removes the temporary on failure. */
int dmm_out_commit(dmm_outfile_t *o, dmm_err_t *err);
/* Throw the output away. */
void dmm_out_abort(dmm_outfile_t *o);

/* len bytes of data as the file path, replacing it, whole or not at all. */
int dmm_write_file(const char *path, const void *data, size_t len, dmm_err_t *err);

#endif
