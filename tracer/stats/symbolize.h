/* symbolize.h - offline symbols for the return addresses in a trace.
 *
 * The tracer records raw return addresses and the executable mappings of
 * the traced process (dmm_trace_t.modules); the names are found later, here,
 * by reading each module's ELF file (.symtab, else .dynsym).  Nothing read
 * from a module file is trusted: a missing, changed or corrupt file gives a
 * "module+0xoffset" answer, never a crash.
 */
#ifndef DMM_SYMBOLIZE_H
#define DMM_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>

#include "tracer/format/trace.h"

/* Write a name for ip, a return address in the traced process, to out:
 *   "function+0xoff (module)"  the function that holds the call before ip
 *   "module+0xoff"             the module's file, but no symbol for it
 *   "0xip"                     no module maps ip
 * module is the file's base name and off in the second form is the offset
 * in that file.  Only absolute module paths are opened (never a name such as
 * "linux-vdso.so.1" relative to the current directory).  Always NUL-terminates out (when outlen > 0).  Returns 1
 * when a function name was found, 0 otherwise.  Opened module files are
 * cached (mapped read-only) for later calls; the cache is guarded by a lock. */
int dmm_symbolize(const dmm_trace_t *t, uint64_t ip, char *out, size_t outlen);

/* Unmap every cached module file (for tests and leak checkers). */
void dmm_symbolize_reset(void);

#endif
