/* payload.h - what dmm replay writes into every block and checks.
 *
 * Each block id has its own 8-byte word (a splitmix64 of the id), repeated
 * from the block's start: byte o of the block is byte o%8 of the word.  So
 * every byte is written (resident memory is honest) and a block that
 * overlaps another, or lost its contents in a realloc, shows up at the
 * first byte that differs. */
#ifndef DMM_REPLAY_PAYLOAD_H
#define DMM_REPLAY_PAYLOAD_H

#include <stdint.h>

/* The word of block id. */
uint64_t dmm_payload_word(uint32_t id);

/* Write bytes [from, to) of block p with word w. */
void dmm_payload_fill(unsigned char *p, uint64_t from, uint64_t to, uint64_t w);

/* The first offset in [from, to) of block p that does not hold word w's
 * pattern, or -1. */
int64_t dmm_payload_check(const unsigned char *p, uint64_t from, uint64_t to, uint64_t w);

/* The first of n bytes of p that is not zero, or -1. */
int64_t dmm_payload_check_zero(const unsigned char *p, uint64_t n);

#endif
