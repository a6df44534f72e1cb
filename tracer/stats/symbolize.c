/* symbolize.c - offline symbolization of recorded return addresses (see
 * symbolize.h).
 *
 * An address ip in the traced process lies in one of its executable
 * mappings [start, end) of a file mapped from file offset `offset`.  Its
 * offset in the file is ip - start + offset; the PT_LOAD program header that
 * holds that file offset turns it into the virtual address the symbol table
 * speaks in.  That works alike for executables, PIE executables and shared
 * objects, whatever address the loader chose.
 *
 * Module files are mmap'ed read-only and every offset, size and count taken
 * from them is checked against the mapping before use; structures are
 * copied out with memcpy because a corrupt file may put them at unaligned
 * offsets.  The only allocation proportional to the file is the sorted
 * function-symbol index, and it is capped.
 */
#include "tracer/stats/symbolize.h"

#include <elf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* Caps, so that a hostile file cannot make us allocate without bound. */
#define MAX_SYMS      (8u << 20)   /* function symbols indexed per module */
#define MAX_LOADS     64u          /* PT_LOAD headers kept per module */
#define CACHE_SLOTS   64u          /* module files kept open */
#define SCAN_BACK     32u          /* symbols looked at below a miss */

typedef struct fsym {
    uint64_t value, size;
    uint32_t name;      /* offset into the string table, checked */
    uint8_t  rank;      /* binding preference: 0 local, 1 weak, 2 global */
} fsym_t;

typedef struct load {
    uint64_t offset, filesz, vaddr;
} load_t;

typedef struct elfmod {
    char          *path;    /* cache key; NULL = free slot */
    int            ok;      /* mapped and parsed; else answer module+off */
    const uint8_t *map;
    size_t         maplen;
    load_t         loads[MAX_LOADS];
    size_t         nloads;
    const char    *strtab;
    size_t         strsz;
    fsym_t        *syms;    /* sorted by value */
    size_t         nsyms;
} elfmod_t;

static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static elfmod_t cache[CACHE_SLOTS];
static size_t   cache_next;   /* round-robin victim when every slot is used */

/* Is [off, off+len) inside the mapped file? */
static int in_file(const elfmod_t *m, uint64_t off, uint64_t len)
{
    return off <= m->maplen && len <= m->maplen - off;
}

static int cmp_fsym(const void *a, const void *b)
{
    const fsym_t *x = a, *y = b;
    if (x->value != y->value)
        return x->value < y->value ? -1 : 1;
    /* Among aliases, the preferred name sorts last: lookup scans down from
     * the last symbol at or below the address and takes the first fit. */
    if ((x->size != 0) != (y->size != 0))
        return x->size ? 1 : -1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return x->name < y->name ? -1 : x->name > y->name;
}

static int read_shdr(const elfmod_t *m, const Elf64_Ehdr *eh, uint64_t i, Elf64_Shdr *sh)
{
    uint64_t off = eh->e_shoff + i * eh->e_shentsize;
    if (off < eh->e_shoff || !in_file(m, off, sizeof *sh))
        return -1;
    memcpy(sh, m->map + off, sizeof *sh);
    return 0;
}

/* Index the function symbols of the first section of type `type`; returns
 * how many were indexed (0 also when the table is unusable). */
static size_t load_symbols(elfmod_t *m, const Elf64_Ehdr *eh, uint64_t shnum, uint32_t type)
{
    Elf64_Shdr sh, str;
    uint64_t i;
    for (i = 0; i < shnum; i++)
        if (read_shdr(m, eh, i, &sh) == 0 && sh.sh_type == type)
            break;
    if (i == shnum)
        return 0;
    if (sh.sh_link >= shnum || read_shdr(m, eh, sh.sh_link, &str) != 0 ||
        str.sh_type != SHT_STRTAB || !in_file(m, str.sh_offset, str.sh_size) ||
        !in_file(m, sh.sh_offset, sh.sh_size) ||
        (sh.sh_entsize != 0 && sh.sh_entsize < sizeof(Elf64_Sym)))
        return 0;
    uint64_t ent = sh.sh_entsize ? sh.sh_entsize : sizeof(Elf64_Sym);
    uint64_t n = sh.sh_size / ent;
    const char *strtab = (const char *)m->map + str.sh_offset;
    size_t strsz = (size_t)str.sh_size;

    /* Two passes: count, then fill, so the index is exactly as big as the
     * file's function symbols (and never more than MAX_SYMS). */
    fsym_t *syms = NULL;
    size_t cnt = 0;
    for (int pass = 0; pass < 2; pass++) {
        cnt = 0;
        for (uint64_t k = 1; k < n && cnt < MAX_SYMS; k++) {
            Elf64_Sym s;
            memcpy(&s, m->map + sh.sh_offset + k * ent, sizeof s);
            unsigned st = ELF64_ST_TYPE(s.st_info), bind = ELF64_ST_BIND(s.st_info);
            if ((st != STT_FUNC && st != STT_GNU_IFUNC) || s.st_shndx == SHN_UNDEF ||
                s.st_value == 0 || s.st_name == 0 || s.st_name >= strsz ||
                !memchr(strtab + s.st_name, 0, strsz - s.st_name))
                continue;
            if (pass == 1)
                syms[cnt] = (fsym_t){ .value = s.st_value, .size = s.st_size,
                                      .name = s.st_name,
                                      .rank = bind == STB_GLOBAL ? 2 : bind == STB_WEAK ? 1 : 0 };
            cnt++;
        }
        if (cnt == 0)
            return 0;
        if (pass == 0 && !(syms = malloc(cnt * sizeof *syms)))
            return 0;
    }
    qsort(syms, cnt, sizeof *syms, cmp_fsym);
    m->syms = syms;
    m->nsyms = cnt;
    m->strtab = strtab;
    m->strsz = strsz;
    return cnt;
}

/* Map and parse path into m (m->path already set).  On any fault m->ok
 * stays 0 and nothing is left mapped. */
static void open_module(elfmod_t *m)
{
    int fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0)
        return;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) ||
        (uint64_t)st.st_size < sizeof(Elf64_Ehdr) || (uint64_t)st.st_size > SIZE_MAX) {
        close(fd);
        return;
    }
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (p == MAP_FAILED)
        return;
    m->map = p;
    m->maplen = (size_t)st.st_size;

    Elf64_Ehdr eh;
    memcpy(&eh, m->map, sizeof eh);
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_phentsize < sizeof(Elf64_Phdr))
        goto bad;

    for (uint64_t i = 0; i < eh.e_phnum && m->nloads < MAX_LOADS; i++) {
        uint64_t off = eh.e_phoff + i * eh.e_phentsize;
        Elf64_Phdr ph;
        if (off < eh.e_phoff || !in_file(m, off, sizeof ph))
            goto bad;
        memcpy(&ph, m->map + off, sizeof ph);
        if (ph.p_type == PT_LOAD && ph.p_filesz > 0 &&
            ph.p_offset + ph.p_filesz > ph.p_offset)
            m->loads[m->nloads++] = (load_t){ ph.p_offset, ph.p_filesz, ph.p_vaddr };
    }
    if (m->nloads == 0)
        goto bad;

    /* Section headers are optional (a stripped file may lack them): then
     * the answers stay module+offset, which is still worth having. */
    uint64_t shnum = eh.e_shnum;
    if (eh.e_shoff != 0 && eh.e_shentsize >= sizeof(Elf64_Shdr)) {
        Elf64_Shdr sh0;
        if (shnum == 0 && read_shdr(m, &eh, 0, &sh0) == 0)
            shnum = sh0.sh_size;   /* extended numbering */
        if (shnum > m->maplen / sizeof(Elf64_Shdr))
            shnum = m->maplen / sizeof(Elf64_Shdr);
        if (load_symbols(m, &eh, shnum, SHT_SYMTAB) == 0)
            load_symbols(m, &eh, shnum, SHT_DYNSYM);
    }
    m->ok = 1;
    return;
bad:
    munmap((void *)m->map, m->maplen);
    m->map = NULL;
    m->maplen = 0;
    m->nloads = 0;
}

static void close_module(elfmod_t *m)
{
    if (m->map)
        munmap((void *)m->map, m->maplen);
    free(m->syms);
    free(m->path);
    memset(m, 0, sizeof *m);
}

/* The cached module for path, opening it on first use.  Caller holds the
 * lock.  NULL only when out of memory. */
static elfmod_t *get_module(const char *path)
{
    for (size_t i = 0; i < CACHE_SLOTS; i++)
        if (cache[i].path && strcmp(cache[i].path, path) == 0)
            return &cache[i];
    elfmod_t *m = NULL;
    for (size_t i = 0; i < CACHE_SLOTS && !m; i++)
        if (!cache[i].path)
            m = &cache[i];
    if (!m) {
        m = &cache[cache_next];
        cache_next = (cache_next + 1) % CACHE_SLOTS;
        close_module(m);
    }
    if (!(m->path = strdup(path)))
        return NULL;
    open_module(m);
    return m;
}

/* Virtual address of file offset fa, or 0 with *ok = 0. */
static uint64_t file_to_vaddr(const elfmod_t *m, uint64_t fa, int *ok)
{
    for (size_t i = 0; i < m->nloads; i++)
        if (fa >= m->loads[i].offset && fa - m->loads[i].offset < m->loads[i].filesz) {
            *ok = 1;
            return fa - m->loads[i].offset + m->loads[i].vaddr;
        }
    *ok = 0;
    return 0;
}

/* The function symbol holding va, or NULL. */
static const fsym_t *find_symbol(const elfmod_t *m, uint64_t va)
{
    size_t lo = 0, hi = m->nsyms;   /* first index with value > va */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->syms[mid].value <= va)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0)
        return NULL;
    size_t top = lo - 1;
    /* A sized symbol that covers va wins, even below an unsized one (an
     * assembler label inside a function). */
    for (size_t k = 0; k < SCAN_BACK && k <= top; k++) {
        const fsym_t *s = &m->syms[top - k];
        if (s->size && va - s->value < s->size)
            return s;
    }
    return m->syms[top].size == 0 ? &m->syms[top] : NULL;
}

static const char *base_name(const char *path)
{
    if (!path || !*path)
        return "?";
    const char *s = strrchr(path, '/');
    return s && s[1] ? s + 1 : path;
}

int dmm_symbolize(const dmm_trace_t *t, uint64_t ip, char *out, size_t outlen)
{
    if (!out || outlen == 0)
        return 0;
    const dmm_module_t *mod = NULL;
    for (size_t i = 0; t && t->modules && i < t->nmodules; i++)
        if (ip >= t->modules[i].start && ip < t->modules[i].end) {
            mod = &t->modules[i];
            break;
        }
    if (!mod) {
        snprintf(out, outlen, "0x%" PRIx64, ip);
        return 0;
    }
    const char *base = base_name(mod->path);
    uint64_t fa = ip - mod->start + mod->offset;
    int found = 0;
    /* Only absolute paths name files: "linux-vdso.so.1" and the like must
     * not open whatever happens to have that name in the current directory. */
    if (mod->path && mod->path[0] == '/') {
        pthread_mutex_lock(&cache_lock);
        elfmod_t *m = get_module(mod->path);
        if (m && m->ok && m->nsyms) {
            /* ip is a return address: the call that made it is just before
             * it, and may be the last instruction of its function. */
            uint64_t back = ip > mod->start ? 1 : 0;
            int ok;
            uint64_t va = file_to_vaddr(m, fa - back, &ok);
            const fsym_t *s = ok ? find_symbol(m, va) : NULL;
            if (s) {
                snprintf(out, outlen, "%s+0x%" PRIx64 " (%s)", m->strtab + s->name,
                         va + back - s->value, base);
                found = 1;
            }
        }
        pthread_mutex_unlock(&cache_lock);
    }
    if (!found)
        snprintf(out, outlen, "%s+0x%" PRIx64, base, fa);
    return found;
}

void dmm_symbolize_reset(void)
{
    pthread_mutex_lock(&cache_lock);
    for (size_t i = 0; i < CACHE_SLOTS; i++)
        close_module(&cache[i]);
    cache_next = 0;
    pthread_mutex_unlock(&cache_lock);
}
