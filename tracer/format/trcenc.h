/* trcenc.h - one compact record of a version-2, -3 or -4 .trc
 * (trcfmt.h), encoded and decoded.  Header-only, no allocation, no libc call: the recorder in the
 * traced process (preload/recorder/recorder.c) and dmm convert
 * (trc_write.c) encode with it, the reader (trc_read.c) decodes.
 *
 * The encoder writes each field as 8 bytes and moves on by its length, so
 * it may write up to 8 bytes past the record's end: a buffer needs
 * DMM_TRC2_MAX_REC bytes of room for any record (its frames or path
 * apart).  The decoder never reads past the n bytes it is given. */
#ifndef DMM_FORMAT_TRCENC_H
#define DMM_FORMAT_TRCENC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tracer/format/trcfmt.h"

#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "trcenc.h stores fields with host-order memcpy: a big-endian host needs byte stores here"
#endif

/* The op byte. */
#define DMM_TRC2_OP_MASK  0x1fu
#define DMM_TRC2_FAILED   0x20u
#define DMM_TRC2_SEQ_NEXT 0x40u
#define DMM_TRC2_STACK    0x80u
_Static_assert(DMM_TRC_OP_END <= 32, "an op fits in the op byte's five bits");
/* Version 4's op value for a FREE with DMM_TRC_RF_RESIDENT (below). */
#define DMM_TRC4_FREE_RESIDENT 19u

/* The fields an op stores beside seq and time. */
#define DMM_TRC2_SIZE 1u
#define DMM_TRC2_ARG  2u
#define DMM_TRC2_IN   4u
#define DMM_TRC2_OUT  8u
#define DMM_TRC2_ALL  15u

static inline unsigned dmm_trc2_fields(unsigned op)
{
    switch (op) {
    case DMM_TRC_MALLOC: return DMM_TRC2_SIZE | DMM_TRC2_OUT;
    case DMM_TRC_CALLOC: return DMM_TRC2_SIZE | DMM_TRC2_ARG | DMM_TRC2_OUT;
    case DMM_TRC_REALLOC: return DMM_TRC2_SIZE | DMM_TRC2_IN | DMM_TRC2_OUT;
    case DMM_TRC_FREE:
    case DMM_TRC_RELEASE: return DMM_TRC2_IN;
    case DMM_TRC4_FREE_RESIDENT:
    case DMM_TRC_RESIDENT: return DMM_TRC2_IN | DMM_TRC2_ARG;
    case DMM_TRC_MEMALIGN:
    case DMM_TRC_POSIX_MEMALIGN:
    case DMM_TRC_ALIGNED_ALLOC:
    case DMM_TRC_VALLOC:
    case DMM_TRC_PVALLOC: return DMM_TRC2_SIZE | DMM_TRC2_ARG | DMM_TRC2_OUT;
    default: return DMM_TRC2_ALL;   /* reallocarray and the rare ones */
    }
}

/* Bytes a record takes at most, with the encoder's 8 bytes of slack: the
 * op byte, 4 length bytes, 8 fields of 8 bytes. */
#define DMM_TRC2_MAX_REC (1u + 4u + 8u * 8u + 8u)

/* A thread's stream: the values its last record left, which the next one's
 * differences start from (all 0 at a block that does not continue). */
typedef struct dmm_trc2_state {
    uint64_t seq, time, ptr;
} dmm_trc2_state_t;

static inline uint64_t dmm_trc2_zz(uint64_t now, uint64_t before)
{
    int64_t d = (int64_t)(now - before);
    return ((uint64_t)d << 1) ^ (uint64_t)(d >> 63);
}

static inline uint64_t dmm_trc2_unzz(uint64_t z, uint64_t before)
{
    return before + ((z >> 1) ^ (uint64_t)-(int64_t)(z & 1));
}

/* Bytes v needs (0 for 0), without a branch. */
static inline unsigned dmm_trc2_len(uint64_t v)
{
    __asm__("" : "+r"(v));   /* test v itself for 0 (cmp, sbb), not what it was made of */
    unsigned top = 63u ^ (unsigned)__builtin_clzll(v | 1);   /* v's highest bit, 0 for 0 and 1 */
    return ((top + 8u) >> 3) - (v == 0);
}

/* The bit count of a value below 2^63 (0 for 0): the highest bit of
 * 2v + 1.  On x86-64 the bsr instruction itself, whose 64-bit result
 * indexes a table as it is (the builtin's int is widened again first). */
static inline uint64_t dmm_trc2_bits63(uint64_t v)
{
#if defined(__x86_64__)
    uint64_t b;
    __asm__("bsr %1, %0" : "=r"(b) : "r"(2 * v + 1) : "cc");
    return b;
#else
    return 63u ^ (unsigned)__builtin_clzll(2 * v + 1);
#endif
}

/* A field of len bytes (0 to 8) at p, little-endian: the decoders' read,
 * which never looks past p + len. */
static inline uint64_t dmm_trc2_load(const uint8_t *p, unsigned len)
{
    uint64_t x = 0;
    for (unsigned k = 0; k < len; k++)
        x |= (uint64_t)p[k] << (8 * k);
    return x;
}

/* One field at *q; its length into lens at nibble *sh. */
static inline __attribute__((always_inline)) void dmm_trc2_put(uint8_t **q, uint32_t *lens,
                                                               unsigned *sh, uint64_t v)
{
    unsigned len = dmm_trc2_len(v);
    memcpy(*q, &v, 8);
    *q += len;
    *lens |= len << *sh;
    *sh += 4;
}

/* dmm_trc2_encode for a record whose SEQ_NEXT, FAILED and STACK are next,
 * failed and stack (0 or 1): constants where it is inlined below. */
static inline __attribute__((always_inline)) size_t
dmm_trc2_encode_as(uint8_t *p, dmm_trc2_state_t *stp, const dmm_trc_rec_t *rp, unsigned next,
                   unsigned failed, unsigned stack)
{
    /* local copies: the byte stores below may alias anything, and would
     * make the compiler load the state and the record again after each */
    dmm_trc2_state_t stl = *stp, *st = &stl;
    const dmm_trc_rec_t rl = *rp, *r = &rl;
    unsigned f = dmm_trc2_fields(r->op);
    unsigned n = 1 + !next + !!(f & DMM_TRC2_SIZE) + !!(f & DMM_TRC2_ARG) + !!(f & DMM_TRC2_IN) +
                 !!(f & DMM_TRC2_OUT) + failed + stack;
    p[0] = (uint8_t)(r->op | (next ? DMM_TRC2_SEQ_NEXT : 0) | (failed ? DMM_TRC2_FAILED : 0) |
                     (stack ? DMM_TRC2_STACK : 0));
    uint8_t *q = p + 1 + (n + 1) / 2;
    uint32_t lens = 0;
    unsigned sh = 0;
    if (!next)
        dmm_trc2_put(&q, &lens, &sh, dmm_trc2_zz(r->seq, st->seq));
    st->seq = r->seq;
    if (r->time == st->time)   /* the clock was not read: the usual case */
        sh += 4;
    else
        dmm_trc2_put(&q, &lens, &sh, dmm_trc2_zz(r->time, st->time));
    st->time = r->time;
    if (f & DMM_TRC2_SIZE)
        dmm_trc2_put(&q, &lens, &sh, r->size);
    if (f & DMM_TRC2_ARG)
        dmm_trc2_put(&q, &lens, &sh, r->arg);
    if (f & DMM_TRC2_IN) {
        dmm_trc2_put(&q, &lens, &sh, dmm_trc2_zz(r->ptr_in, st->ptr));
        st->ptr = r->ptr_in;
    }
    if (f & DMM_TRC2_OUT) {
        dmm_trc2_put(&q, &lens, &sh, dmm_trc2_zz(r->ptr_out, st->ptr));
        st->ptr = r->ptr_out;
    }
    if (failed)
        dmm_trc2_put(&q, &lens, &sh, r->errnum);
    if (stack)
        dmm_trc2_put(&q, &lens, &sh, r->stack);
    for (unsigned k = 0; k < (n + 1) / 2; k++)
        p[1 + k] = (uint8_t)(lens >> (8 * k));
    *stp = stl;
    return (size_t)(q - p);
}

/* Encode r at p (DMM_TRC2_MAX_REC bytes of room) after the record that
 * left st, and update st: the bytes the record takes.  r->reserved is not
 * kept (no writer sets it).  The usual record (the next seq, no failure,
 * with or without a stack) has a copy of its own, in which, where the op
 * is a constant too (the recorder's calls), the field count and every test
 * fold away. */
static inline __attribute__((always_inline)) size_t
dmm_trc2_encode(uint8_t *p, dmm_trc2_state_t *st, const dmm_trc_rec_t *r)
{
    unsigned next = r->seq == st->seq + 1, failed = !!(r->flags & DMM_TRC_RF_FAILED);
    unsigned stack = r->stack != 0;
    if (__builtin_expect(next && !failed, 1)) {
        if (stack)
            return dmm_trc2_encode_as(p, st, r, 1, 0, 1);
        return dmm_trc2_encode_as(p, st, r, 1, 0, 0);
    }
    return dmm_trc2_encode_as(p, st, r, next, failed, stack);
}

/* ---- version 3: short forms of the two usual records ------------------
 *
 * A MALLOC or FREE whose seq is the next, whose time is the last record's,
 * that did not fail and has no stack, and whose address difference is under
 * 8 bytes long takes one op byte whose op bits (0-4) hold a value no op
 * has, then its fields as the long form stores them:
 *   MALLOC  op bits DMM_TRC3_MALLOC + the size's length (0-8), bits 5-7
 *           the address difference's length; the size, the difference
 *   FREE    op bits DMM_TRC3_FREE, bits 5-7 the address difference's
 *           length; the difference
 * Two bytes fewer than version 2 gives a malloc, one fewer a free. */
#define DMM_TRC3_FREE   18u
#define DMM_TRC3_MALLOC 23u   /* to 31 */
_Static_assert(DMM_TRC_OP_MAX <= DMM_TRC3_FREE, "version 3's short forms take the op values "
               "from 18: a new op needs a new version");

/* dmm_trc2_encode, with version 3's short forms where they apply. */
static inline __attribute__((always_inline)) size_t
dmm_trc3_encode(uint8_t *p, dmm_trc2_state_t *st, const dmm_trc_rec_t *r)
{
    if ((r->op == DMM_TRC_MALLOC || r->op == DMM_TRC_FREE) && r->seq == st->seq + 1 &&
        r->time == st->time && !(r->flags & DMM_TRC_RF_FAILED) && !r->stack) {
        int m = r->op == DMM_TRC_MALLOC;
        uint64_t a = m ? r->ptr_out : r->ptr_in, z = dmm_trc2_zz(a, st->ptr);
        unsigned la = dmm_trc2_len(z), ls = m ? dmm_trc2_len(r->size) : 0;
        if (la < 8) {
            uint64_t size = r->size;
            if (m)
                memcpy(p + 1, &size, 8);
            memcpy(p + 1 + ls, &z, 8);
            p[0] = (uint8_t)((m ? DMM_TRC3_MALLOC + ls : DMM_TRC3_FREE) | la << 5);
            st->seq++;
            st->ptr = a;
            return 1 + ls + la;
        }
    }
    return dmm_trc2_encode(p, st, r);
}

/* ---- version 4: how much of a block was resident ----------------------
 *
 * DMM_TRC_FREE with DMM_TRC_RF_RESIDENT: version 2's long form under op
 * value 19 (version 3's short forms leave 19 to 22 unused), with the
 * fields ptr_in and arg (the resident bytes).  Versions 2 and 3 have no
 * way to say it: their encoders drop the flag.  DMM_TRC_RESIDENT (20) is
 * the long form as any op's; only version 4 holds it. */
_Static_assert(DMM_TRC4_FREE_RESIDENT > DMM_TRC3_FREE && DMM_TRC_RESIDENT > DMM_TRC3_FREE &&
               DMM_TRC4_FREE_RESIDENT < DMM_TRC3_MALLOC && DMM_TRC_RESIDENT < DMM_TRC3_MALLOC &&
               DMM_TRC4_FREE_RESIDENT != DMM_TRC_RESIDENT,
               "version 4's op values lie between version 3's short forms");

/* dmm_trc3_encode, and version 4's resident FREE. */
static inline __attribute__((always_inline)) size_t
dmm_trc4_encode(uint8_t *p, dmm_trc2_state_t *st, const dmm_trc_rec_t *r)
{
    if (__builtin_expect(r->op == DMM_TRC_FREE && (r->flags & DMM_TRC_RF_RESIDENT), 0)) {
        dmm_trc_rec_t rl = *r;
        rl.op = DMM_TRC4_FREE_RESIDENT;
        return dmm_trc2_encode(p, st, &rl);
    }
    return dmm_trc3_encode(p, st, r);
}

/* Version 3's usual records by table, indexed by a value's bit count (0
 * to 63, dmm_trc2_bits63): its length in bytes; the short MALLOC's op
 * byte for an address difference of that many bits, less the size's
 * length (which the op value adds); the short FREE's op byte; and 1 + the
 * length, the bytes a short FREE takes, a short MALLOC besides its size
 * (32 bits: an add takes the entry as its operand).  A load each, where
 * the arithmetic takes two instructions or three.  A difference of more
 * than DMM_TRC3_SHORT_BITS takes the long form: its op entries are unused. */
#define DMM_TRC3_BYBITS(f)                                                             \
    f(0), f(1), f(2), f(3), f(4), f(5), f(6), f(7), f(8), f(9), f(10), f(11), f(12),   \
    f(13), f(14), f(15), f(16), f(17), f(18), f(19), f(20), f(21), f(22), f(23), f(24), \
    f(25), f(26), f(27), f(28), f(29), f(30), f(31), f(32), f(33), f(34), f(35), f(36), \
    f(37), f(38), f(39), f(40), f(41), f(42), f(43), f(44), f(45), f(46), f(47), f(48), \
    f(49), f(50), f(51), f(52), f(53), f(54), f(55), f(56), f(57), f(58), f(59), f(60), \
    f(61), f(62), f(63)
#define DMM_TRC3_LEN(b)  (((b) + 7) >> 3)
#define DMM_TRC3_MOP(b)  (DMM_TRC3_MALLOC | (DMM_TRC3_LEN(b) & 7) << 5)
#define DMM_TRC3_FOP(b)  (DMM_TRC3_FREE | (DMM_TRC3_LEN(b) & 7) << 5)
#define DMM_TRC3_LEN1(b) (1 + DMM_TRC3_LEN(b))
static const struct {
    uint8_t  len[64], malloc_op[64], free_op[64];
    uint32_t len1[64];
} dmm_trc3_bybits = {
    { DMM_TRC3_BYBITS(DMM_TRC3_LEN) },
    { DMM_TRC3_BYBITS(DMM_TRC3_MOP) },
    { DMM_TRC3_BYBITS(DMM_TRC3_FOP) },
    { DMM_TRC3_BYBITS(DMM_TRC3_LEN1) },
};
#undef DMM_TRC3_BYBITS
#undef DMM_TRC3_LEN
#undef DMM_TRC3_MOP
#undef DMM_TRC3_FOP
#undef DMM_TRC3_LEN1
#define DMM_TRC3_SHORT_BITS 56u   /* 7 bytes, the most bits 5-7 say */

/* dmm_trc3_encode of the two records a traced program writes most, MALLOC
 * and FREE as the recorder writes them the usual way (the next seq, no
 * failure, no stack, the time of the previous record: the clock was not
 * read), from the values: the same bytes.  The caller makes sure of seq and
 * time, and that the size and the address's difference from st->ptr in
 * zigzag form are below 2^63 (a size malloc gave, user addresses: 57 bits
 * at most).  Each updates st, before the byte stores (which as far as the
 * compiler knows may alias it).  dmm_trc3_put_*_same: the record at p, pos
 * bytes into its buffer; returns pos + the bytes it takes, added in each
 * form, where the add takes a len1 entry as its operand.
 * dmm_trc3_encode_*_same: the record at p; returns the bytes it takes. */
static inline __attribute__((always_inline)) uint32_t
dmm_trc3_put_malloc_same(uint8_t *p, uint32_t pos, dmm_trc2_state_t *st, uint64_t size,
                         uint64_t out)
{
    uint64_t z = dmm_trc2_zz(out, st->ptr);
    uint64_t bo = dmm_trc2_bits63(z);
    size_t ls = dmm_trc3_bybits.len[dmm_trc2_bits63(size)];
    st->seq++;
    st->ptr = out;
    if (__builtin_expect(bo <= DMM_TRC3_SHORT_BITS, 1)) {
        memcpy(p + 1, &size, 8);
        memcpy(p + 1 + ls, &z, 8);
        p[0] = (uint8_t)(dmm_trc3_bybits.malloc_op[bo] + ls);
        return pos + (uint32_t)ls + dmm_trc3_bybits.len1[bo];
    }
    /* the long form, version 2's: 8 bytes of difference */
    memcpy(p + 3, &size, 8);
    memcpy(p + 3 + ls, &z, 8);
    p[0] = DMM_TRC_MALLOC | DMM_TRC2_SEQ_NEXT;
    p[1] = (uint8_t)(ls << 4);
    p[2] = 8;
    return pos + 3 + (uint32_t)ls + 8;
}

static inline __attribute__((always_inline)) size_t
dmm_trc3_encode_malloc_same(uint8_t *p, dmm_trc2_state_t *st, uint64_t size, uint64_t out)
{
    return dmm_trc3_put_malloc_same(p, 0, st, size, out);
}

static inline __attribute__((always_inline)) uint32_t
dmm_trc3_put_free_same(uint8_t *p, uint32_t pos, dmm_trc2_state_t *st, uint64_t in)
{
    uint64_t z = dmm_trc2_zz(in, st->ptr);
    uint64_t bi = dmm_trc2_bits63(z);
    st->seq++;
    st->ptr = in;
    if (__builtin_expect(bi <= DMM_TRC3_SHORT_BITS, 1)) {
        memcpy(p + 1, &z, 8);
        p[0] = dmm_trc3_bybits.free_op[bi];
        return pos + dmm_trc3_bybits.len1[bi];
    }
    memcpy(p + 2, &z, 8);
    p[0] = DMM_TRC_FREE | DMM_TRC2_SEQ_NEXT;
    p[1] = 8 << 4;
    return pos + 2 + 8;
}

static inline __attribute__((always_inline)) size_t
dmm_trc3_encode_free_same(uint8_t *p, dmm_trc2_state_t *st, uint64_t in)
{
    return dmm_trc3_put_free_same(p, 0, st, in);
}

/* Decode the record at p (n bytes there) after the record that left st,
 * into r, and update st: the bytes it takes, or 0 with *why set when the n
 * bytes do not hold it whole or it is malformed.  A STACKDEF's frames and a
 * MODULE's path, which follow, are the caller's. */
static inline size_t dmm_trc2_decode_v(const uint8_t *p, size_t n, dmm_trc2_state_t *st,
                                       dmm_trc_rec_t *r, const char **why, unsigned version)
{
    if (n < 1) {
        *why = "record runs past the end of the block";
        return 0;
    }
    unsigned op = p[0] & DMM_TRC2_OP_MASK;
    if (!dmm_trc_op_valid(op, version) && !(version >= 4 && op == DMM_TRC4_FREE_RESIDENT)) {
        *why = "unknown record op";
        return 0;
    }
    unsigned f = dmm_trc2_fields(op);
    unsigned nv = 1 + !(p[0] & DMM_TRC2_SEQ_NEXT) + !!(f & DMM_TRC2_SIZE) + !!(f & DMM_TRC2_ARG) +
                  !!(f & DMM_TRC2_IN) + !!(f & DMM_TRC2_OUT) + !!(p[0] & DMM_TRC2_FAILED) +
                  !!(p[0] & DMM_TRC2_STACK);
    size_t at = 1 + (nv + 1) / 2;
    if (at > n) {
        *why = "record runs past the end of the block";
        return 0;
    }
    uint64_t v[8];
    for (unsigned i = 0; i < nv; i++) {
        unsigned len = (p[1 + i / 2] >> (4 * (i & 1))) & 15u;
        if (len > 8) {
            *why = "field length over 8 bytes in record";
            return 0;
        }
        if (len > n - at) {
            *why = "record runs past the end of the block";
            return 0;
        }
        v[i] = dmm_trc2_load(p + at, len);
        at += len;
    }
    for (unsigned i = nv; i < (nv + 1) / 2 * 2; i++)
        if (p[1 + i / 2] >> 4) {
            *why = "unused field length set in record";
            return 0;
        }
    memset(r, 0, sizeof *r);
    unsigned i = 0;
    r->op = (uint8_t)(op == DMM_TRC4_FREE_RESIDENT ? DMM_TRC_FREE : op);
    if (op == DMM_TRC4_FREE_RESIDENT)
        r->flags = DMM_TRC_RF_RESIDENT;
    r->seq = p[0] & DMM_TRC2_SEQ_NEXT ? st->seq + 1 : dmm_trc2_unzz(v[i++], st->seq);
    st->seq = r->seq;
    r->time = dmm_trc2_unzz(v[i++], st->time);
    st->time = r->time;
    if (f & DMM_TRC2_SIZE)
        r->size = v[i++];
    if (f & DMM_TRC2_ARG)
        r->arg = v[i++];
    if (f & DMM_TRC2_IN)
        st->ptr = r->ptr_in = dmm_trc2_unzz(v[i++], st->ptr);
    if (f & DMM_TRC2_OUT)
        st->ptr = r->ptr_out = dmm_trc2_unzz(v[i++], st->ptr);
    if (p[0] & DMM_TRC2_FAILED) {
        r->flags |= DMM_TRC_RF_FAILED;
        r->errnum = v[i++];
    }
    if (p[0] & DMM_TRC2_STACK) {
        if (v[i] == 0 || v[i] > UINT32_MAX) {
            *why = "bad stack id in record";
            return 0;
        }
        r->stack = (uint32_t)v[i++];
    }
    return at;
}

static inline size_t dmm_trc2_decode(const uint8_t *p, size_t n, dmm_trc2_state_t *st,
                                     dmm_trc_rec_t *r, const char **why)
{
    return dmm_trc2_decode_v(p, n, st, r, why, 2);
}

/* dmm_trc2_decode of a version-3 or -4 record: a short form, or what
 * version 2 has (and, in version 4, DMM_TRC4_FREE_RESIDENT). */
static inline size_t dmm_trc34_decode(const uint8_t *p, size_t n, dmm_trc2_state_t *st,
                                      dmm_trc_rec_t *r, const char **why, unsigned version)
{
    unsigned f = n ? p[0] & DMM_TRC2_OP_MASK : 0;
    if (f != DMM_TRC3_FREE && f < DMM_TRC3_MALLOC)
        return dmm_trc2_decode_v(p, n, st, r, why, version);
    unsigned la = p[0] >> 5, ls = f == DMM_TRC3_FREE ? 0 : f - DMM_TRC3_MALLOC;
    if (1 + ls + la > n) {
        *why = "record runs past the end of the block";
        return 0;
    }
    uint64_t size = dmm_trc2_load(p + 1, ls), z = dmm_trc2_load(p + 1 + ls, la);
    memset(r, 0, sizeof *r);
    r->seq = ++st->seq;
    r->time = st->time;
    st->ptr = dmm_trc2_unzz(z, st->ptr);
    if (f == DMM_TRC3_FREE) {
        r->op = DMM_TRC_FREE;
        r->ptr_in = st->ptr;
    } else {
        r->op = DMM_TRC_MALLOC;
        r->size = size;
        r->ptr_out = st->ptr;
    }
    return 1 + ls + la;
}

static inline size_t dmm_trc3_decode(const uint8_t *p, size_t n, dmm_trc2_state_t *st,
                                     dmm_trc_rec_t *r, const char **why)
{
    return dmm_trc34_decode(p, n, st, r, why, 3);
}

static inline size_t dmm_trc4_decode(const uint8_t *p, size_t n, dmm_trc2_state_t *st,
                                     dmm_trc_rec_t *r, const char **why)
{
    return dmm_trc34_decode(p, n, st, r, why, 4);
}

#endif
