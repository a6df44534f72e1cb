/* test_symbolize.c - the offline symbolizer against this very test program:
 * its own mappings (from /proc/self/maps) stand in for the modules a trace
 * records, so the names of its own functions must come back; missing,
 * corrupt and mutated module files must give module+offset, not a crash. */
#include <criterion/criterion.h>

#include <elf.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tracer/stats/symbolize.h"

/* A call whose return address lies in known_caller. */
__attribute__((noinline)) static uintptr_t probe(void)
{
    uintptr_t ra = (uintptr_t)__builtin_return_address(0);
    __asm__ volatile("" ::: "memory");
    return ra;
}

__attribute__((noinline)) uintptr_t dmm_test_known_caller(void);
__attribute__((noinline)) uintptr_t dmm_test_known_caller(void)
{
    uintptr_t ra = probe();
    __asm__ volatile("" ::: "memory");   /* keep the call from becoming a jump */
    return ra;
}

static char exe[PATH_MAX];

/* t->modules from the executable mappings of this process. */
static void load_self(dmm_trace_t *t)
{
    memset(t, 0, sizeof *t);
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    cr_assert_gt(n, 0);
    exe[n] = 0;
    FILE *f = fopen("/proc/self/maps", "r");
    cr_assert_not_null(f);
    char line[PATH_MAX + 256];
    size_t cap = 0;
    while (fgets(line, sizeof line, f)) {
        unsigned long start, end, off;
        char perms[8], path[PATH_MAX];
        path[0] = 0;
        if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095[^\n]", &start, &end, perms, &off, path) < 4)
            continue;
        if (!strchr(perms, 'x') || path[0] != '/')
            continue;
        if (t->nmodules == cap) {
            cap = cap ? cap * 2 : 16;
            t->modules = realloc(t->modules, cap * sizeof *t->modules);
            cr_assert_not_null(t->modules);
        }
        t->modules[t->nmodules++] = (dmm_module_t){ start, end, off, strdup(path) };
    }
    fclose(f);
    cr_assert_gt(t->nmodules, 0);
}

static const dmm_module_t *module_of(const dmm_trace_t *t, uint64_t ip)
{
    for (size_t i = 0; i < t->nmodules; i++)
        if (ip >= t->modules[i].start && ip < t->modules[i].end)
            return &t->modules[i];
    return NULL;
}

static const char *base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

static void teardown(void)
{
    dmm_symbolize_reset();
}

TestSuite(symbolize, .fini = teardown);

Test(symbolize, own_function_from_a_return_address)
{
    dmm_trace_t t;
    load_self(&t);
    uintptr_t ra = dmm_test_known_caller();
    char out[512], want[PATH_MAX + 16];
    cr_assert_eq(dmm_symbolize(&t, ra, out, sizeof out), 1, "%s", out);
    snprintf(want, sizeof want, "(%s)", base(exe));
    cr_expect_eq(strncmp(out, "dmm_test_known_caller+0x", 24), 0, "got %s", out);
    cr_expect_not_null(strstr(out, want), "got %s", out);
    /* The offset is that of the return address itself. */
    uint64_t off = strtoull(strstr(out, "+0x") + 3, NULL, 16);
    cr_expect_eq(off, ra - (uintptr_t)dmm_test_known_caller, "got %s", out);
    dmm_trace_free(&t);
}

Test(symbolize, static_function)
{
    dmm_trace_t t;
    load_self(&t);
    char out[512];
    cr_assert_eq(dmm_symbolize(&t, (uintptr_t)probe + 2, out, sizeof out), 1);
    cr_expect_eq(strncmp(out, "probe+0x2 (", 11), 0, "got %s", out);
    dmm_trace_free(&t);
}

Test(symbolize, shared_library_dynsym)
{
    dmm_trace_t t;
    load_self(&t);
    uintptr_t ip = (uintptr_t)&qsort + 3;
    const dmm_module_t *m = module_of(&t, ip);
    cr_assert_not_null(m, "qsort is in no executable mapping");
    char out[512], want[PATH_MAX + 16];
    cr_assert_eq(dmm_symbolize(&t, ip, out, sizeof out), 1, "%s", out);
    cr_expect_not_null(strstr(out, "qsort"), "got %s", out);
    snprintf(want, sizeof want, "+0x3 (%s)", base(m->path));
    cr_expect_not_null(strstr(out, want), "got %s", out);
    /* Cached: the same answer again. */
    char again[512];
    dmm_symbolize(&t, ip, again, sizeof again);
    cr_expect_str_eq(again, out);
    dmm_trace_free(&t);
}

Test(symbolize, no_module_gives_the_address)
{
    dmm_trace_t t = { 0 };
    char out[64];
    cr_expect_eq(dmm_symbolize(&t, 0x1234abcd, out, sizeof out), 0);
    cr_expect_str_eq(out, "0x1234abcd");
    cr_expect_eq(dmm_symbolize(NULL, 0x10, out, sizeof out), 0);
    cr_expect_str_eq(out, "0x10");
    /* Truncated to the buffer, still terminated. */
    char small[5];
    dmm_symbolize(&t, 0x1234abcd, small, sizeof small);
    cr_expect_str_eq(small, "0x12");
}

static void one_module(dmm_trace_t *t, const char *path, uint64_t start, uint64_t end, uint64_t off)
{
    memset(t, 0, sizeof *t);
    t->modules = calloc(1, sizeof *t->modules);
    t->modules[0] = (dmm_module_t){ start, end, off, strdup(path) };
    t->nmodules = 1;
}

Test(symbolize, missing_file_gives_module_offset)
{
    dmm_trace_t t;
    one_module(&t, "/nonexistent/dir/libnosuch.so.1", 0x10000, 0x20000, 0x1000);
    char out[128];
    cr_expect_eq(dmm_symbolize(&t, 0x10234, out, sizeof out), 0);
    cr_expect_str_eq(out, "libnosuch.so.1+0x1234");
    dmm_trace_free(&t);

    one_module(&t, "/dev/null", 0x10000, 0x20000, 0);   /* not a regular file */
    dmm_symbolize(&t, 0x10010, out, sizeof out);
    cr_expect_str_eq(out, "null+0x10");
    dmm_trace_free(&t);

    one_module(&t, "/tmp", 0x10000, 0x20000, 0);        /* a directory */
    dmm_symbolize(&t, 0x10010, out, sizeof out);
    cr_expect_str_eq(out, "tmp+0x10");
    dmm_trace_free(&t);
}

/* The bytes of this program's file. */
static uint8_t *read_exe(size_t *len)
{
    struct stat st;
    int fd = open(exe, O_RDONLY);
    cr_assert_geq(fd, 0);
    cr_assert_eq(fstat(fd, &st), 0);
    uint8_t *b = malloc((size_t)st.st_size);
    cr_assert_eq(read(fd, b, (size_t)st.st_size), st.st_size);
    close(fd);
    *len = (size_t)st.st_size;
    return b;
}

static void write_file(const char *path, const void *b, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    cr_assert_geq(fd, 0);
    cr_assert_eq(write(fd, b, n), (ssize_t)n);
    close(fd);
}

/* A trace whose one module is the copy at path, mapped like the real
 * executable text; ip is where dmm_test_known_caller's call returns to. */
static void copy_module(dmm_trace_t *t, const char *path, uint64_t *ip)
{
    dmm_trace_t self;
    load_self(&self);
    uintptr_t ra = dmm_test_known_caller();
    const dmm_module_t *m = module_of(&self, ra);
    cr_assert_not_null(m);
    one_module(t, path, m->start, m->end, m->offset);
    *ip = ra;
    dmm_trace_free(&self);
}

/* A relative name (the vDSO's "linux-vdso.so.1") names no file, even when
 * the current directory holds one by that name. */
Test(symbolize, relative_path_is_not_opened)
{
    dmm_trace_t t;
    uint64_t ip;
    char out[512];
    cr_assert_eq(chdir("/"), 0);
    copy_module(&t, "proc/self/exe", &ip);
    cr_expect_eq(dmm_symbolize(&t, ip, out, sizeof out), 0, "%s", out);
    cr_expect_eq(strncmp(out, "exe+0x", 6), 0, "got %s", out);
    dmm_trace_free(&t);
}

Test(symbolize, corrupt_files_give_module_offset)
{
    dmm_trace_t t;
    uint64_t ip;
    size_t len;
    char dir[] = "/tmp/dmm-sym-XXXXXX", path[256], out[512];
    cr_assert_not_null(mkdtemp(dir));
    load_self(&t);   /* for exe */
    dmm_trace_free(&t);
    uint8_t *img = read_exe(&len);

    /* A good copy first: the name comes out. */
    snprintf(path, sizeof path, "%s/good", dir);
    write_file(path, img, len);
    copy_module(&t, path, &ip);
    cr_expect_eq(dmm_symbolize(&t, ip, out, sizeof out), 1, "%s", out);
    cr_expect_eq(strncmp(out, "dmm_test_known_caller+0x", 24), 0, "got %s", out);
    dmm_trace_free(&t);

    struct { const char *name; size_t cut; void (*mangle)(uint8_t *, size_t); } cases[] = {
        { "empty", 0, NULL },
        { "header-only", sizeof(Elf64_Ehdr), NULL },
        { "first-page", 4096, NULL },
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        snprintf(path, sizeof path, "%s/%s", dir, cases[c].name);
        write_file(path, img, cases[c].cut);
        copy_module(&t, path, &ip);
        cr_expect_eq(dmm_symbolize(&t, ip, out, sizeof out), 0, "%s: %s", cases[c].name, out);
        cr_expect_eq(strncmp(out, cases[c].name, strlen(cases[c].name)), 0, "got %s", out);
        cr_expect_not_null(strstr(out, "+0x"), "got %s", out);
        dmm_trace_free(&t);
    }

    /* Header fields pointing far outside the file. */
    Elf64_Ehdr eh;
    memcpy(&eh, img, sizeof eh);
    const struct { const char *name; size_t off; uint64_t val; size_t width; } pokes[] = {
        { "phoff", offsetof(Elf64_Ehdr, e_phoff), UINT64_MAX - 8, 8 },
        { "shoff", offsetof(Elf64_Ehdr, e_shoff), UINT64_MAX - 8, 8 },
        { "shoff-end", offsetof(Elf64_Ehdr, e_shoff), len - 10, 8 },
        { "phnum", offsetof(Elf64_Ehdr, e_phnum), 0xffff, 2 },
        { "shnum", offsetof(Elf64_Ehdr, e_shnum), 0xffff, 2 },
        { "shnum0", offsetof(Elf64_Ehdr, e_shnum), 0, 2 },
        { "phentsize", offsetof(Elf64_Ehdr, e_phentsize), 1, 2 },
        { "shentsize", offsetof(Elf64_Ehdr, e_shentsize), 0xffff, 2 },
        { "class", EI_CLASS, ELFCLASS32, 1 },
    };
    uint8_t *bad = malloc(len);
    for (size_t c = 0; c < sizeof pokes / sizeof pokes[0]; c++) {
        memcpy(bad, img, len);
        memcpy(bad + pokes[c].off, &pokes[c].val, pokes[c].width);
        snprintf(path, sizeof path, "%s/%s", dir, pokes[c].name);
        write_file(path, bad, len);
        copy_module(&t, path, &ip);
        dmm_symbolize(&t, ip, out, sizeof out);   /* any answer, no crash */
        cr_expect_gt(strlen(out), 0);
        dmm_trace_free(&t);
    }

    /* Every section header's offset and size pointing past the end, and
     * its link at nonsense. */
    memcpy(bad, img, len);
    for (size_t i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh;
        size_t o = eh.e_shoff + i * eh.e_shentsize;
        cr_assert_leq(o + sizeof sh, len);
        memcpy(&sh, bad + o, sizeof sh);
        if (i % 3 == 0)
            sh.sh_offset = len - 4;
        else if (i % 3 == 1)
            sh.sh_size = UINT64_MAX - sh.sh_offset + 1;
        else
            sh.sh_link = 0xfffffff;
        memcpy(bad + o, &sh, sizeof sh);
    }
    snprintf(path, sizeof path, "%s/sections", dir);
    write_file(path, bad, len);
    copy_module(&t, path, &ip);
    dmm_symbolize(&t, ip, out, sizeof out);
    cr_expect_gt(strlen(out), 0);
    dmm_trace_free(&t);

    /* Random mutations of the headers and the tables at the end. */
    srand(12345);
    for (int iter = 0; iter < 300; iter++) {
        memcpy(bad, img, len);
        for (int k = 0; k < 16; k++) {
            size_t pos;
            switch (rand() % 3) {
            case 0:  pos = (size_t)rand() % 1024; break;
            case 1:  pos = len - 1 - (size_t)rand() % (len < 16384 ? len : 16384); break;
            default: pos = (size_t)rand() % len; break;
            }
            bad[pos] = (uint8_t)rand();
        }
        snprintf(path, sizeof path, "%s/mut%d", dir, iter);
        write_file(path, bad, len);
        copy_module(&t, path, &ip);
        dmm_symbolize(&t, ip, out, sizeof out);
        dmm_symbolize(&t, ip + 100, out, sizeof out);
        dmm_symbolize(&t, t.modules[0].start, out, sizeof out);
        cr_expect_gt(strlen(out), 0);
        dmm_trace_free(&t);
        unlink(path);
        dmm_symbolize_reset();
    }
    free(bad);
    free(img);
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
}

/* More modules than the cache holds: every one still answers right. */
Test(symbolize, many_modules_evict)
{
    dmm_trace_t self, t = { 0 };
    load_self(&self);
    uintptr_t ra = dmm_test_known_caller();
    const dmm_module_t *m = module_of(&self, ra);
    cr_assert_not_null(m);
    char dir[] = "/tmp/dmm-sym-XXXXXX", out[512];
    cr_assert_not_null(mkdtemp(dir));
    enum { N = 100 };
    t.modules = calloc(N, sizeof *t.modules);
    t.nmodules = N;
    uint64_t span = (m->end - m->start + 0xfffff) & ~0xfffffull;
    for (int i = 0; i < N; i++) {
        char p[256];
        snprintf(p, sizeof p, "%s/link%d", dir, i);
        cr_assert_eq(symlink(exe, p), 0);
        uint64_t start = 0x100000000ull + (uint64_t)i * span;
        t.modules[i] = (dmm_module_t){ start, start + (m->end - m->start), m->offset, strdup(p) };
    }
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < N; i++) {
            uint64_t ip = t.modules[i].start + (ra - m->start);
            char want[64];
            snprintf(want, sizeof want, "(link%d)", i);
            cr_expect_eq(dmm_symbolize(&t, ip, out, sizeof out), 1, "%s", out);
            cr_expect_eq(strncmp(out, "dmm_test_known_caller+0x", 24), 0, "got %s", out);
            cr_expect_not_null(strstr(out, want), "got %s", out);
        }
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    cr_expect_eq(system(cmd), 0);
    dmm_trace_free(&t);
    dmm_trace_free(&self);
}
