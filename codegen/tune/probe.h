/* probe.h - `dmm tune-glibc --probe`: what this process's glibc made of
 * the malloc settings in its environment, observed rather than read back
 * (the top pad of the first heap extension; whether a freed 200000-byte
 * mmapped block raised the dynamic mmap threshold), so that a test can
 * tell which forms of the settings glibc honours. */
#ifndef DMM_TUNE_PROBE_H
#define DMM_TUNE_PROBE_H

#include <stdio.h>

/* Print the observations as one JSON object on f; 0.  Must run first in a
 * fresh process, before anything else allocated. */
int dmm_tune_probe(FILE *f);

#endif
