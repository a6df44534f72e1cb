/* registry.c - the registry of allocator classes: id -> ops and name (see
 * registry.h).
 * Each class's ops are declared weak here so that the registry links while
 * a class is still being written; a missing class reads as NULL. */
#include "allocators/classes/registry.h"

#include <stddef.h>

extern const dmm_class_ops_t dmm_class_buddy_binary __attribute__((weak));
extern const dmm_class_ops_t dmm_class_buddy_fib __attribute__((weak));
extern const dmm_class_ops_t dmm_class_segregated __attribute__((weak));
extern const dmm_class_ops_t dmm_class_sss __attribute__((weak));
extern const dmm_class_ops_t dmm_class_exact __attribute__((weak));
extern const dmm_class_ops_t dmm_class_kingsley __attribute__((weak));
extern const dmm_class_ops_t dmm_class_lea __attribute__((weak));
extern const dmm_class_ops_t dmm_class_tlsf __attribute__((weak));

static const char *const names[DMM_CLASS_COUNT] = {
    [DMM_CLASS_BUDDY_BINARY] = "buddy-binary",
    [DMM_CLASS_BUDDY_FIB] = "buddy-fib",
    [DMM_CLASS_SEGREGATED] = "segregated",
    [DMM_CLASS_SSS] = "sss",
    [DMM_CLASS_EXACT] = "exact",
    [DMM_CLASS_KINGSLEY] = "kingsley",
    [DMM_CLASS_LEA] = "lea",
    [DMM_CLASS_TLSF] = "tlsf",
};

const dmm_class_ops_t *dmm_class_ops(dmm_class_t c)
{
    switch (c) {
    case DMM_CLASS_BUDDY_BINARY: return &dmm_class_buddy_binary;
    case DMM_CLASS_BUDDY_FIB:    return &dmm_class_buddy_fib;
    case DMM_CLASS_SEGREGATED:   return &dmm_class_segregated;
    case DMM_CLASS_SSS:          return &dmm_class_sss;
    case DMM_CLASS_EXACT:        return &dmm_class_exact;
    case DMM_CLASS_KINGSLEY:     return &dmm_class_kingsley;
    case DMM_CLASS_LEA:          return &dmm_class_lea;
    case DMM_CLASS_TLSF:         return &dmm_class_tlsf;
    default:                     return NULL;
    }
}

/* The names of the paper's Table 1 and Figure 3, for maps and reports. */
static const char *const paper_names[DMM_CLASS_COUNT] = {
    [DMM_CLASS_BUDDY_BINARY] = "BuddySystemBinary",
    [DMM_CLASS_BUDDY_FIB] = "BuddySystemFibonacci",
    [DMM_CLASS_SEGREGATED] = "SegregatedFreeList",
    [DMM_CLASS_SSS] = "SimpleSegregatedStorage",
    [DMM_CLASS_EXACT] = "ExactSegregatedFit",
    [DMM_CLASS_KINGSLEY] = "Kingsley",
    [DMM_CLASS_LEA] = "Lea",
    [DMM_CLASS_TLSF] = "TLSF",   /* not the paper's: Masmano et al., 2004 */
};

const char *dmm_class_paper_name(dmm_class_t c)
{
    if ((unsigned)c < DMM_CLASS_COUNT && paper_names[c])
        return paper_names[c];
    return NULL;
}

const char *dmm_class_name(dmm_class_t c)
{
    if ((unsigned)c < DMM_CLASS_COUNT && names[c])
        return names[c];
    return NULL;
}
