/* hash.c - the uint64 -> uint64 hash table (see hash.h). */
#include "tracer/base/hash.h"

#include <stdlib.h>
#include <string.h>

#define EMPTY 0u
#define DEAD  UINT64_MAX

/* Keys kept beside the slots: 0 -> side[0], UINT64_MAX -> side[1]. */
static int side_of(uint64_t key)
{
    return key == EMPTY ? 0 : key == DEAD ? 1 : -1;
}

/* MurmurHash3's 64-bit finaliser: addresses differ in their low bits only
 * by multiples of 16, sizes cluster; every input bit must reach the index. */
static size_t mix(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    k *= 0xc4ceb9fe1a85ec53ull;
    k ^= k >> 33;
    return (size_t)k;
}

static dmm_u64map_ent_t *find(const dmm_u64map_t *m, uint64_t key)
{
    if (!m->cap)
        return NULL;
    size_t mask = m->cap - 1;
    for (size_t j = mix(key) & mask;; j = (j + 1) & mask) {
        if (m->s[j].key == key)
            return &m->s[j];
        if (m->s[j].key == EMPTY)
            return NULL;
    }
}

/* Room for one more slot: double when 3/4 full, or rebuild at the same
 * size when most used slots are tombstones. */
static int grow(dmm_u64map_t *m)
{
    if ((m->used + 1) * 4 < m->cap * 3)
        return 0;
    size_t ncap = m->cap ? m->cap * 2 : 256;
    if (m->live * 4 < m->cap)
        ncap = m->cap;
    if (ncap > SIZE_MAX / sizeof(dmm_u64map_ent_t))
        return -1;
    dmm_u64map_ent_t *ns = calloc(ncap, sizeof *ns);
    if (!ns)
        return -1;
    for (size_t i = 0; i < m->cap; i++) {
        uint64_t k = m->s[i].key;
        if (k == EMPTY || k == DEAD)
            continue;
        size_t j = mix(k) & (ncap - 1);
        while (ns[j].key != EMPTY)
            j = (j + 1) & (ncap - 1);
        ns[j] = m->s[i];
    }
    free(m->s);
    m->s = ns;
    m->cap = ncap;
    m->used = m->live;
    return 0;
}

uint64_t *dmm_u64map_get(const dmm_u64map_t *m, uint64_t key)
{
    int sd = side_of(key);
    if (sd >= 0)
        return m->has[sd] ? (uint64_t *)&m->side[sd] : NULL;
    dmm_u64map_ent_t *e = find(m, key);
    return e ? &e->val : NULL;
}

uint64_t *dmm_u64map_slot(dmm_u64map_t *m, uint64_t key, int *added)
{
    if (added)
        *added = 0;
    int sd = side_of(key);
    if (sd >= 0) {
        if (!m->has[sd]) {
            m->has[sd] = 1;
            m->side[sd] = 0;
            if (added)
                *added = 1;
        }
        return &m->side[sd];
    }
    dmm_u64map_ent_t *e = find(m, key);
    if (e)
        return &e->val;
    if (grow(m) != 0)
        return NULL;
    size_t mask = m->cap - 1, j = mix(key) & mask;
    while (m->s[j].key != EMPTY && m->s[j].key != DEAD)
        j = (j + 1) & mask;
    if (m->s[j].key == EMPTY)
        m->used++;
    m->s[j].key = key;
    m->s[j].val = 0;
    m->live++;
    if (added)
        *added = 1;
    return &m->s[j].val;
}

int dmm_u64map_put(dmm_u64map_t *m, uint64_t key, uint64_t val)
{
    uint64_t *v = dmm_u64map_slot(m, key, NULL);
    if (!v)
        return -1;
    *v = val;
    return 0;
}

int dmm_u64map_take(dmm_u64map_t *m, uint64_t key, uint64_t *val)
{
    int sd = side_of(key);
    if (sd >= 0) {
        if (!m->has[sd])
            return 0;
        if (val)
            *val = m->side[sd];
        m->has[sd] = 0;
        return 1;
    }
    dmm_u64map_ent_t *e = find(m, key);
    if (!e)
        return 0;
    if (val)
        *val = e->val;
    e->key = DEAD;
    m->live--;
    return 1;
}

size_t dmm_u64map_count(const dmm_u64map_t *m)
{
    return m->live + m->has[0] + m->has[1];
}

int dmm_u64map_next(const dmm_u64map_t *m, size_t *pos, uint64_t *key, uint64_t *val)
{
    /* positions 0 and 1 are the side keys, then the slots */
    for (size_t i = *pos; i < m->cap + 2; i++) {
        uint64_t k, v;
        if (i < 2) {
            if (!m->has[i])
                continue;
            k = i == 0 ? EMPTY : DEAD;
            v = m->side[i];
        } else {
            k = m->s[i - 2].key;
            if (k == EMPTY || k == DEAD)
                continue;
            v = m->s[i - 2].val;
        }
        *pos = i + 1;
        if (key)
            *key = k;
        if (val)
            *val = v;
        return 1;
    }
    *pos = m->cap + 2;
    return 0;
}

void dmm_u64map_free(dmm_u64map_t *m)
{
    free(m->s);
    memset(m, 0, sizeof *m);
}
