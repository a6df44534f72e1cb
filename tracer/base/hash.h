/* hash.h - the one hash table of dmm's tools: uint64 keys to uint64 values,
 * open addressing with linear probing.
 *
 * Every key is allowed, 0 and UINT64_MAX included (they mark empty and
 * deleted slots inside the table, so those two keys are kept beside it).
 * Deleting leaves a tombstone; a table that fills with tombstones is
 * rebuilt at the same size.  Lookups are O(1) expected, so readers stay
 * linear in their input however it is shaped.  Not thread-safe; allocates
 * with malloc (tools only, never the preload libraries). */
#ifndef DMM_BASE_HASH_H
#define DMM_BASE_HASH_H

#include <stddef.h>
#include <stdint.h>

typedef struct dmm_u64map_ent {
    uint64_t key, val;
} dmm_u64map_ent_t;

typedef struct dmm_u64map {
    dmm_u64map_ent_t *s;
    size_t   cap;       /* slots, a power of two (0 before the first insert) */
    size_t   used;      /* live and deleted slots */
    size_t   live;      /* keys held in the slots */
    uint8_t  has[2];    /* keys 0 and UINT64_MAX, held beside the slots */
    uint64_t side[2];
} dmm_u64map_t;

/* A zeroed dmm_u64map_t is an empty map. */
#define DMM_U64MAP_INIT { 0 }

/* The value stored for key, or NULL when the key is absent. */
uint64_t *dmm_u64map_get(const dmm_u64map_t *m, uint64_t key);
/* The value stored for key, inserted as 0 when absent (*added, if not
 * NULL, tells which); NULL when out of memory.  The pointer is valid until
 * the next insertion. */
uint64_t *dmm_u64map_slot(dmm_u64map_t *m, uint64_t key, int *added);
/* Store val for key.  0, or -1 when out of memory. */
int dmm_u64map_put(dmm_u64map_t *m, uint64_t key, uint64_t val);
/* Remove key, its value into *val (if not NULL): 1, or 0 when absent. */
int dmm_u64map_take(dmm_u64map_t *m, uint64_t key, uint64_t *val);
/* Keys held. */
size_t dmm_u64map_count(const dmm_u64map_t *m);
/* Every entry once, in no particular order: start with *pos = 0; returns
 * 0 when there is none left. */
int dmm_u64map_next(const dmm_u64map_t *m, size_t *pos, uint64_t *key, uint64_t *val);
void dmm_u64map_free(dmm_u64map_t *m);

#endif
