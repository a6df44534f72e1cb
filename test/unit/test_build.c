/* test_build.c - dmm build's kit file (codegen/emit/build.c): each fault
 * named with its line, a compiler's failure named and nothing left behind,
 * and a relative root taken from the kit's folder. */
#include <criterion/criterion.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "allocators/chain/desc.h"
#include "codegen/emit/build.h"

static char dir[64];

static void setup(void)
{
    snprintf(dir, sizeof dir, "/tmp/dmm-build-test-XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}

static void teardown(void)
{
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    cr_assert_eq(system(cmd), 0);
}

static const char *kit(const char *text)
{
    static char path[128];
    snprintf(path, sizeof path, "%s/kit.txt", dir);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    fputs(text, f);
    fclose(f);
    return path;
}

/* dmm_build_library on the kit text: its message ("" when it built). */
static const char *build(const char *text, const char *cc)
{
    static dmm_desc_t d;
    static dmm_err_t err;
    cr_assert_eq(dmm_desc_load("lea", &d, &err), 0, "%s", err.msg);
    char out[128];
    snprintf(out, sizeof out, "%s/lib.so", dir);
    dmm_emit_info_t info = { .source = "lea" };
    err.msg[0] = 0;
    int rc = dmm_build_library(&d, &info, kit(text), cc, out, 0, &err);
    cr_assert_eq(rc == 0, err.msg[0] == 0, "rc %d, message '%s'", rc, err.msg);
    return err.msg;
}

Test(build, each_fault_of_a_kit_is_named_with_its_line, .init = setup, .fini = teardown)
{
    struct { const char *text, *want; } bad[] = {
        { "# a kit\nroot /x\ncc cc\nflags -O2\nsrc a.c\n", "kit.txt: line 4: unknown key 'flags'" },
        { "root /x\ncc\nsrc a.c\n", "kit.txt: line 2: cc needs one value" },
        { "root /x\ncc cc\nsrc /etc/passwd\n", "kit.txt: line 3: src needs a path inside root" },
        { "root /x\ncc cc\nsrc ../a.c\n", "kit.txt: line 3: src needs a path inside root" },
        { "root /x\ncc cc\n", "root, cc and at least one src are needed" },
        { "cc cc\nsrc a.c\n", "root, cc and at least one src are needed" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        const char *msg = build(bad[i].text, NULL);
        cr_expect(strstr(msg, bad[i].want), "kit %zu: '%s', not '%s'", i, msg, bad[i].want);
    }
    /* a kit the compiler cannot work with: the compiler's failure, and no
     * library left behind */
    const char *msg = build("root /nonexistent\ncc cc\nsrc a.c\n", NULL);
    cr_expect(strstr(msg, "cc failed (exit status"), "%s", msg);
    char out[128];
    snprintf(out, sizeof out, "%s/lib.so", dir);
    cr_expect_neq(access(out, F_OK), 0);
}

/* make's kit, copied beside a relative "root": the sources are found from
 * the kit's folder, and the library is built. */
Test(build, a_relative_root_is_the_kits_folder, .init = setup, .fini = teardown,
     .timeout = 120)
{
    char path[256];
    snprintf(path, sizeof path, "%s/dmm-build.txt", DMM_BUILD_DIR);
    FILE *f = fopen(path, "r");
    cr_assert_not_null(f, "%s (make writes it)", path);
    static char text[16384];
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = 0;
    fclose(f);
    /* the tree itself as root, named relatively: dir/src -> DMM_SRC_DIR */
    char link[128];
    snprintf(link, sizeof link, "%s/src", dir);
    cr_assert_eq(symlink(DMM_SRC_DIR, link), 0);
    char *root = strstr(text, "root ");
    cr_assert_not_null(root);
    char *eol = strchr(root, '\n');
    static char moved[16384];
    snprintf(moved, sizeof moved, "%.*sroot src%s", (int)(root - text), text, eol);
    const char *msg = build(moved, NULL);
    cr_assert_str_empty(msg);
    /* a shared object (not loaded here: it would bring its own malloc) */
    char lib[128], magic[5] = "";
    snprintf(lib, sizeof lib, "%s/lib.so", dir);
    FILE *so = fopen(lib, "rb");
    cr_assert_not_null(so, "%s was not written", lib);
    cr_assert_eq(fread(magic, 1, 4, so), 4);
    fclose(so);
    cr_expect_str_eq(magic, "\177ELF");
}
