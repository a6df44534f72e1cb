/* err.h - the one error type of dmm's tools: a message of one line that
 * names the file, the byte offset or line, and the fault.
 *
 * Functions that can fail return 0 on success and -1 on failure (or NULL),
 * with the message in a dmm_err_t the caller passed (NULL: no message
 * wanted).  The message is formatted into the struct itself, allocating
 * nothing, so libdmm.so reports a bad DMM_CONFIG with it before it has a
 * heap. */
#ifndef DMM_BASE_ERR_H
#define DMM_BASE_ERR_H

typedef struct dmm_err {
    char msg[768];
} dmm_err_t;

/* Fill err (if not NULL) with a printf-style message; returns -1, so that
 * `return dmm_err_set(err, ...)` reports and fails in one statement. */
int dmm_err_set(dmm_err_t *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

#endif
