/* test_programs.c - real programs under every preload library: python3,
 * perl, sqlite3, gcc, git, sort, make, tar with xz, bash, zstd with gzip and
 * bzip2, with inputs written afresh for every run.  Each runs plainly, then
 * under libdmmtrace.so, libdmm.so with every preset and libdmm_evolved.so:
 * the same standard output and exit status, nothing from dmm on stderr, and
 * an end within a time limit.  The children a program starts (cc1, as, ld,
 * sh, xz, git's helpers) run under the library too.  Under the tracer every
 * process writes its own trace, and each must read back whole, consistent
 * and through `dmm stats`.
 *
 * Multi-threaded among them: sort --parallel=2, xz -T2, zstd -T2, python3
 * with threading, git's pack-objects.  A program that is not installed is
 * skipped, saying so.
 *
 * Under the sanitizer pass the programs are the same unsanitized system
 * binaries, so only the two cheapest run there. */
#include <criterion/criterion.h>

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test/lib/progrun.h"
#include "test/lib/rundmm.h"
#include "tracer/format/trace.h"
#include "test/lib/traces.h"
#include "test/lib/libs.h"

#define LIMIT_S 120   /* seconds before a run counts as hung */

/* The runs of every program: plain first, then each library. */
enum { PLAIN, TRACED, CACHED = 8, NRUNS = 9 };
static const char *const run_name[NRUNS] = {
    "glibc", "libdmmtrace.so", "libdmm.so kng", "libdmm.so lea", "libdmm.so fib",
    "libdmm.so s10", "libdmm.so exa", "libdmm_evolved.so",
    "libdmm.so with a block cache and a release policy",
};
/* The chain of the CACHED run: a per-thread block cache in front of a class
 * whose usable() takes no lock and of one whose does; sss gives its empty
 * areas back at once. */
static const char cached_dmm[] =
    "# dmm 1 test_programs: a block cache, a release policy, growth by pages\n"
    "cache         max=512 count=16\n"
    "release       keep=0 delay=0\n"
    "grow          by=pages\n"
    "sss           range=(0,256]          split=no  coalesce=no  list=sll   fit=first order=lifo\n"
    "lea           range=(256,inf]        split=yes coalesce=yes list=dll   fit=best  order=fifo\n";

static char work[300], trcdir[300], home[300];

/* ---- inputs, the same on every run ---------------------------------------- */

static void put(const char *name, const char *text)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", work, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f, "%s: %s", path, strerror(errno));
    fputs(text, f);
    fclose(f);
}

static unsigned lcg(unsigned *x)
{
    *x = *x * 1103515245u + 12345u;
    return *x >> 8;
}

/* A pseudo-word of 3 to 8 letters from a 40-word vocabulary mixed with
 * rarer ones, as text has. */
static const char *word(unsigned *x)
{
    static char w[16];
    unsigned k = lcg(x) % 100;
    unsigned seed = k < 70 ? k % 40 : 40 + lcg(x) % 400;
    unsigned y = seed * 2654435761u + 7;
    int len = 3 + (int)(seed % 6);
    for (int i = 0; i < len; i++)
        w[i] = (char)('a' + lcg(&y) % 26);
    w[len] = 0;
    return w;
}

/* Lines "NUMBER WORD WORD ...": sort keys, perl and bash input. */
static void put_words(const char *name, int lines, unsigned seed)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", work, name);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    unsigned x = seed;
    for (int i = 0; i < lines; i++) {
        fprintf(f, "%u", lcg(&x) % 100000);
        int n = 2 + (int)(lcg(&x) % 8);
        for (int k = 0; k < n; k++)
            fprintf(f, " %s", word(&x));
        fputc('\n', f);
    }
    fclose(f);
}

/* A directory of `files` text files of about `bytes` each. */
static void put_tree(const char *dir, int files, int bytes)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", work, dir);
    cr_assert_eq(mkdir(path, 0755), 0);
    unsigned x = 99;
    for (int i = 0; i < files; i++) {
        snprintf(path, sizeof path, "%s/%s/part%02d.txt", work, dir, i);
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f);
        for (int n = 0; n < bytes;) {
            n += fprintf(f, "%s%s", word(&x), lcg(&x) % 9 ? " " : "\n");
        }
        fclose(f);
    }
}

/* ---- running ---------------------------------------------------------------- */

typedef struct prog {
    const char *name;
    const char *needs[6];     /* programs that must be installed */
    char *argv[12];           /* run in the work directory */
    const char *in;           /* standard input, a file of the work directory */
    void (*prepare)(void);    /* writes the inputs into the work directory */
    int cheap;                /* also runs in the sanitizer pass */
    int min_traces;           /* processes that write a trace at least */
} prog_t;

static void fresh_work(const prog_t *p)
{
    char cmd[400];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", work);
    cr_assert_eq(system(cmd), 0);
    cr_assert_eq(mkdir(work, 0755), 0);
    p->prepare();
}

/* The environment of every run, plain or not: a fixed locale, time zone,
 * home, hash seeds and git identity, so that output depends on the input
 * alone. */
static void base_env(const char *env[], int *n)
{
    static char h[320];
    snprintf(h, sizeof h, "HOME=%s", home);
    const char *fixed[] = {
        h, "LC_ALL=C", "TZ=UTC", "PYTHONHASHSEED=0", "PYTHONDONTWRITEBYTECODE=1",
        "PYTHONMALLOC=malloc", "PERL_HASH_SEED=0", "PERL_PERTURB_KEYS=0",
        "GIT_CONFIG_NOSYSTEM=1", "GIT_AUTHOR_NAME=A U Thor", "GIT_AUTHOR_EMAIL=author@example.com",
        "GIT_COMMITTER_NAME=C O Mitter", "GIT_COMMITTER_EMAIL=committer@example.com",
        "GIT_AUTHOR_DATE=2020-02-02T10:00:00Z", "GIT_COMMITTER_DATE=2020-02-02T10:00:00Z",
    };
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        env[(*n)++] = fixed[i];
}

static void run_env(int r, const char *env[])
{
    static char tf[340], cfg[40];
    static const char *const presets[] = { "kng", "lea", "fib", "s10", "exa" };
    int n = 0;
    base_env(env, &n);
    if (r == TRACED) {
        snprintf(tf, sizeof tf, "DMM_TRACE_FILE=%s/p.%%p.trc", trcdir);
        env[n++] = "LD_PRELOAD=" TRACER;
        env[n++] = tf;
    } else if (r >= 2 && r <= 6) {
        snprintf(cfg, sizeof cfg, "DMM_CONFIG=%s", presets[r - 2]);
        env[n++] = "LD_PRELOAD=" LIBDMM;
        env[n++] = cfg;
    } else if (r == 7) {
        env[n++] = "LD_PRELOAD=" EVOLVED;
    } else if (r == CACHED) {
        static char cf[360];
        char path[330];
        snprintf(path, sizeof path, "%s/cached.dmm", tmpdir);
        FILE *f = fopen(path, "w");
        cr_assert_not_null(f);
        fputs(cached_dmm, f);
        fclose(f);
        snprintf(cf, sizeof cf, "DMM_CONFIG=%s", path);
        env[n++] = "LD_PRELOAD=" LIBDMM;
        env[n++] = cf;
    }
    env[n] = NULL;
}

/* Run p plainly and under every library, each time in a fresh work
 * directory: the same output and status, nothing from dmm on stderr, and
 * under the tracer readable traces of every process. */
static void same_under_every_library(const prog_t *p)
{
    for (int i = 0; p->needs[i]; i++)
        if (access(p->needs[i], X_OK) != 0)
            cr_skip_test("%s is not installed", p->needs[i]);
    if (SANITIZED && !p->cheap)
        cr_skip_test("sanitizer pass: %s is an unsanitized system binary, run in the plain pass",
                     p->name);
    make_tmpdir();
    snprintf(work, sizeof work, "%s/work", tmpdir);
    snprintf(trcdir, sizeof trcdir, "%s/trc", tmpdir);
    snprintf(home, sizeof home, "%s/home", tmpdir);
    cr_assert_eq(mkdir(trcdir, 0700), 0);
    cr_assert_eq(mkdir(home, 0700), 0);
    char out[320], err[320];
    snprintf(out, sizeof out, "%s/out", tmpdir);
    snprintf(err, sizeof err, "%s/err", tmpdir);
    char in[400];
    if (p->in)
        snprintf(in, sizeof in, "%s/%s", work, p->in);
    char *want = NULL;
    size_t lw = 0;
    int want_st = 0;
    for (int r = 0; r < NRUNS; r++) {
        const char *env[40];
        run_env(r, env);
        fresh_work(p);
        int st = run_limited((char *const *)p->argv, env, work, p->in ? in : NULL, out, err,
                             LIMIT_S, 0);
        cr_assert_neq(st, RUN_TIMED_OUT, "%s under %s: still running after %d s", p->name,
                      run_name[r], LIMIT_S);
        size_t lo;
        char *got = slurp(out, &lo);
        char *e = slurp(err, NULL);
        if (r == PLAIN) {
            cr_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0, "%s failed on its own: %d: %.600s",
                      p->name, st, e);
            cr_assert_gt(lo, 0, "%s printed nothing", p->name);
            want = got;
            lw = lo;
            want_st = st;
        } else {
            cr_expect_eq(st, want_st, "%s under %s: status %d, plain %d; stderr: %.600s", p->name,
                         run_name[r], st, want_st, e);
            size_t k = 0;
            while (k < lo && k < lw && got[k] == want[k])
                k++;
            cr_expect(lo == lw && k == lo, "%s under %s: output differs at byte %zu: %.80s | %.80s",
                      p->name, run_name[r], k, got + k, want + k);
            free(got);
        }
        cr_expect_null(strstr(e, "dmm:"), "%s under %s: %.600s", p->name, run_name[r], e);
        cr_expect_null(strstr(e, "ERROR: ld.so"), "%s: %s not loaded: %.600s", p->name,
                       run_name[r], e);
        free(e);
        if (r == TRACED) {
            int n = check_traces_in(trcdir, UINT64_MAX, tmpdir);
            cr_expect_geq(n, p->min_traces, "%s: %d trace files", p->name, n);
        }
    }
    free(want);
    remove_tmpdir();
}

/* ---- the programs ------------------------------------------------------------ */

static void prep_python(void)
{
    char path[400];
    snprintf(path, sizeof path, "%s/data.json", work);
    FILE *f = fopen(path, "w");
    cr_assert_not_null(f);
    unsigned x = 7;
    fputs("[\n", f);
    for (int i = 0; i < 3000; i++) {
        fprintf(f, "%s{\"id\": %d, \"name\": \"%s%d\", \"score\": %u.%02u, \"tags\": [", i ? ",\n" : "",
                i, word(&x), i % 97, lcg(&x) % 100, lcg(&x) % 100);
        for (unsigned t = 0, nt = lcg(&x) % 4; t < nt; t++)
            fprintf(f, "%s\"t%u\"", t ? ", " : "", lcg(&x) % 12);
        fputs("], \"text\": \"", f);
        for (unsigned w = 0, nw = 4 + lcg(&x) % 20; w < nw; w++)
            fprintf(f, "%s%s", w ? " " : "", word(&x));
        fputs("\"}", f);
    }
    fputs("\n]\n", f);
    fclose(f);
    put("prog.py",
        "import collections, json, re, threading\n"
        "\n"
        "with open('data.json') as f:\n"
        "    records = json.load(f)\n"
        "\n"
        "words = collections.Counter()\n"
        "for r in records:\n"
        "    words.update(re.findall(r'[a-z]{3,}', r['text']))\n"
        "for w, n in sorted(words.items(), key=lambda kv: (-kv[1], kv[0]))[:12]:\n"
        "    print(f'{w:<12}{n:>6}')\n"
        "\n"
        "by_tag = collections.defaultdict(list)\n"
        "for r in records:\n"
        "    for t in r['tags']:\n"
        "        by_tag[t].append(r['score'])\n"
        "for t in sorted(by_tag, key=lambda t: int(t[1:])):\n"
        "    v = by_tag[t]\n"
        "    print(f'{t:>4}: n={len(v):4d} mean={sum(v) / len(v):7.3f} max={max(v):6.2f}')\n"
        "\n"
        "class Results:\n"
        "    def __init__(self):\n"
        "        self.lock = threading.Lock()\n"
        "        self.parts = []\n"
        "\n"
        "    def add(self, k, part):\n"
        "        with self.lock:\n"
        "            self.parts.append((k, part))\n"
        "\n"
        "results = Results()\n"
        "\n"
        "def work(k):\n"
        "    chunk = sorted(records[k::4], key=lambda r: (r['score'], r['id']))\n"
        "    text = json.dumps(chunk, sort_keys=True)\n"
        "    back = json.loads(text)\n"
        "    names = ','.join(re.sub(r'\\d+$', '', r['name']).upper() for r in back[:5])\n"
        "    results.add(k, (len(text), sum(len(r['text']) for r in back), names))\n"
        "\n"
        "threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]\n"
        "for t in threads:\n"
        "    t.start()\n"
        "for t in threads:\n"
        "    t.join()\n"
        "for k, part in sorted(results.parts):\n"
        "    print(k, *part)\n"
        "print(json.dumps({'records': len(records), 'words': len(words),\n"
        "                  'tags': {t: len(v) for t, v in by_tag.items()}}, sort_keys=True))\n");
}

Test(programs, python3_parses_json_with_regexes_and_threads)
{
    prog_t p = { "python3", { "/usr/bin/python3" }, { "/usr/bin/python3", "prog.py" }, NULL,
                 prep_python, 0, 1 };
    same_under_every_library(&p);
}

static void prep_perl(void)
{
    put_words("words.txt", 4000, 11);
    put("prog.pl",
        "use strict;\n"
        "use warnings;\n"
        "my (%count, %first, @lines);\n"
        "open(my $fh, '<', 'words.txt') or die \"words.txt: $!\";\n"
        "while (my $l = <$fh>) {\n"
        "    chomp $l;\n"
        "    push @lines, $l;\n"
        "    my ($n, @w) = split / /, $l;\n"
        "    for my $w (@w) {\n"
        "        $count{$w}++;\n"
        "        $first{length $w} .= substr($w, 0, 1);\n"
        "    }\n"
        "}\n"
        "close $fh;\n"
        "my @top = (sort { $count{$b} <=> $count{$a} || $a cmp $b } keys %count)[0 .. 9];\n"
        "printf \"%-10s %5d\\n\", $_, $count{$_} for @top;\n"
        "for my $k (sort { $a <=> $b } keys %first) {\n"
        "    my %seen;\n"
        "    my $u = join '', grep { !$seen{$_}++ } sort split //, $first{$k};\n"
        "    printf \"%2d %6d %s\\n\", $k, length $first{$k}, $u;\n"
        "}\n"
        "my @rep = grep { /^\\d+ (\\w+) .*\\b\\1\\b/ } @lines;\n"
        "print scalar(@rep), \" lines repeat their first word\\n\";\n"
        "my $s = join ',', map { sprintf '%x', $_ * 2654435761 % 65536 } 1 .. 3000;\n"
        "(my $t = $s) =~ s/([a-f]+)/uc $1/ge;\n"
        "print length($t), ' ', substr($t, 0, 48), \"\\n\";\n"
        "my %letters = map { ($_ => [split //]) } @top;\n"
        "print join(' ', map { scalar @{$letters{$_}} } sort keys %letters), \"\\n\";\n"
        "my @sorted = sort { (split / /, $a)[0] <=> (split / /, $b)[0] } @lines[0 .. 499];\n"
        "print \"$sorted[0]\\n$sorted[-1]\\n\";\n");
}

Test(programs, perl_counts_words_with_hashes_and_regexes)
{
    prog_t p = { "perl", { "/usr/bin/perl" }, { "/usr/bin/perl", "prog.pl" }, NULL, prep_perl,
                 0, 1 };
    same_under_every_library(&p);
}

static void prep_sqlite(void)
{
    put("query.sql",
        "create table item(id integer primary key, name text, cat integer, price real);\n"
        "with recursive c(x) as (select 1 union all select x + 1 from c where x < 20000)\n"
        "  insert into item select x, 'item' || (x * 7919 % 20011), x % 37, (x * 31 % 1000) / 10.0 from c;\n"
        "create index item_cat on item(cat, price);\n"
        "create table cat(id integer primary key, label text);\n"
        "with recursive c(x) as (select 0 union all select x + 1 from c where x < 36)\n"
        "  insert into cat select x, printf('cat-%02d', x) from c;\n"
        "select c.label, count(*), printf('%.2f', avg(i.price)), max(i.name)\n"
        "  from item i join cat c on c.id = i.cat group by c.id order by 2 desc, 1 limit 10;\n"
        "select name, price, rank() over (partition by cat order by price desc) r\n"
        "  from item where cat = 5 order by r, name limit 5;\n"
        "update item set price = price * 1.1 where cat in (1, 2, 3);\n"
        "delete from item where id % 5 = 0;\n"
        "select count(*), printf('%.1f', sum(price)) from item;\n"
        "select group_concat(name, ';') from (select name from item where price > 99 order by name limit 8);\n"
        "select cat, count(distinct substr(name, 5, 2)) from item group by cat having cat < 4;\n");
}

Test(programs, sqlite3_joins_groups_and_updates)
{
    prog_t p = { "sqlite3", { "/usr/bin/sqlite3" }, { "/usr/bin/sqlite3", ":memory:" },
                 "query.sql", prep_sqlite, 1, 1 };
    same_under_every_library(&p);
}

static void prep_gcc(void)
{
    put("prog.c",
        "#include <stdio.h>\n"
        "#include <stdlib.h>\n"
        "#include <string.h>\n"
        "\n"
        "struct node { char *key; int count; struct node *next; };\n"
        "\n"
        "static unsigned hash(const char *s)\n"
        "{\n"
        "    unsigned h = 5381;\n"
        "    while (*s)\n"
        "        h = h * 33 + (unsigned char)*s++;\n"
        "    return h;\n"
        "}\n"
        "\n"
        "static int by_count(const void *a, const void *b)\n"
        "{\n"
        "    const struct node *x = *(struct node *const *)a, *y = *(struct node *const *)b;\n"
        "    return y->count != x->count ? y->count - x->count : strcmp(x->key, y->key);\n"
        "}\n"
        "\n"
        "int main(void)\n"
        "{\n"
        "    enum { NB = 1024 };\n"
        "    static struct node *tab[NB];\n"
        "    unsigned x = 7;\n"
        "    size_t n = 0;\n"
        "    for (int i = 0; i < 50000; i++) {\n"
        "        char w[8];\n"
        "        x = x * 1103515245u + 12345u;\n"
        "        int len = 2 + (x >> 16) % 3;\n"
        "        for (int k = 0; k < len; k++) {\n"
        "            x = x * 1103515245u + 12345u;\n"
        "            w[k] = (char)('a' + (x >> 16) % 6);\n"
        "        }\n"
        "        w[len] = 0;\n"
        "        unsigned h = hash(w) % NB;\n"
        "        struct node *p = tab[h];\n"
        "        while (p && strcmp(p->key, w))\n"
        "            p = p->next;\n"
        "        if (!p) {\n"
        "            p = malloc(sizeof *p);\n"
        "            p->key = strdup(w);\n"
        "            p->count = 0;\n"
        "            p->next = tab[h];\n"
        "            tab[h] = p;\n"
        "            n++;\n"
        "        }\n"
        "        p->count++;\n"
        "    }\n"
        "    struct node **all = malloc(n * sizeof *all);\n"
        "    size_t k = 0;\n"
        "    for (int i = 0; i < NB; i++)\n"
        "        for (struct node *p = tab[i]; p; p = p->next)\n"
        "            all[k++] = p;\n"
        "    qsort(all, n, sizeof *all, by_count);\n"
        "    printf(\"%zu distinct\\n\", n);\n"
        "    for (size_t i = 0; i < 8; i++)\n"
        "        printf(\"%-6s %d\\n\", all[i]->key, all[i]->count);\n"
        "    for (size_t i = 0; i < n; i++) {\n"
        "        free(all[i]->key);\n"
        "        free(all[i]);\n"
        "    }\n"
        "    free(all);\n"
        "    return 0;\n"
        "}\n");
    put("build.sh",
        "set -e\n"
        "gcc -O2 -Wall -Wextra -o prog prog.c\n"
        "./prog\n"
        "gcc -O2 -S -o prog.s prog.c\n"
        "cksum < prog.s\n"
        "gcc -O1 -c -o prog.o prog.c\n"
        "cksum < prog.o\n");
}

/* gcc, cc1, as, collect2 and ld all run under the library, then the
 * program they built. */
Test(programs, gcc_compiles_and_the_result_runs)
{
    prog_t p = { "gcc", { "/usr/bin/gcc", "/bin/bash" }, { "/bin/bash", "build.sh" }, NULL,
                 prep_gcc, 0, 10 };
    same_under_every_library(&p);
}

static void prep_git(void)
{
    put_words("a.txt", 400, 1);
    put_words("b.txt", 300, 2);
    put_words("c.txt", 200, 3);
    put("git.sh",
        "set -e\n"
        "git init -q -b main repo\n"
        "cd repo\n"
        "git config gc.auto 0\n"
        "git config maintenance.auto false\n"
        "git config advice.detachedHead false\n"
        "cp ../a.txt ../b.txt .\n"
        "git add a.txt b.txt\n"
        "git commit -q -m 'first: two files'\n"
        "sed -i 's/^1/one/' a.txt\n"
        "cp ../c.txt .\n"
        "git add -A\n"
        "GIT_AUTHOR_DATE=2020-02-03T11:00:00Z GIT_COMMITTER_DATE=2020-02-03T11:00:00Z \\\n"
        "  git commit -q -m 'second: edit a, add c'\n"
        "git checkout -q -b feature\n"
        "head -n 50 c.txt > d.txt\n"
        "git add d.txt\n"
        "GIT_COMMITTER_DATE=2020-02-04T12:00:00Z git commit -q -m 'feature: d'\n"
        "git checkout -q main\n"
        "git rm -q b.txt\n"
        "GIT_COMMITTER_DATE=2020-02-05T12:00:00Z git commit -q -m 'third: drop b'\n"
        "GIT_COMMITTER_DATE=2020-02-06T12:00:00Z git merge -q --no-ff -m 'merge feature' feature\n"
        "git log --stat --format='%H %an <%ae> %ad%n  %s' --date=iso\n"
        "git show --stat --format='%T %P' HEAD~1\n"
        "git diff HEAD~2 HEAD | cksum\n"
        "git show HEAD:a.txt | cksum\n"
        "git gc -q\n"
        "git count-objects -v | grep -E '^(count|in-pack|packs)'\n"
        "git fsck --no-progress --strict\n"
        "git rev-list --all --objects | sort | cksum\n");
}

/* git's gc runs pack-objects with threads. */
Test(programs, git_commits_merges_logs_and_packs)
{
    prog_t p = { "git", { "/usr/bin/git", "/bin/bash" }, { "/bin/bash", "git.sh" }, NULL,
                 prep_git, 0, 40 };
    same_under_every_library(&p);
}

static void prep_sort(void)
{
    put_words("words.txt", 60000, 5);
}

Test(programs, sort_with_two_threads)
{
    prog_t p = { "sort",
                 { "/usr/bin/sort" },
                 { "/usr/bin/sort", "--parallel=2", "-S", "4M", "-k2,2", "-k1,1n", "words.txt" },
                 NULL, prep_sort, 1, 1 };
    same_under_every_library(&p);
}

static void prep_make(void)
{
    char name[400];
    snprintf(name, sizeof name, "%s/in", work);
    cr_assert_eq(mkdir(name, 0755), 0);
    for (int i = 0; i < 12; i++) {
        snprintf(name, sizeof name, "in/part%02d.txt", i);
        put_words(name, 300 + i * 20, 100u + (unsigned)i);
    }
    put("Makefile",
        "SRCS := $(sort $(wildcard in/*.txt))\n"
        "OUTS := $(patsubst in/%.txt,out/%.sum,$(SRCS))\n"
        "\n"
        "all: report.txt\n"
        "\t@cat report.txt\n"
        "\t@echo '$(words $(OUTS)) parts'\n"
        "\n"
        "report.txt: $(OUTS) out/words.idx\n"
        "\t@cat $(OUTS) out/words.idx > $@\n"
        "\n"
        "out/%.sum: in/%.txt | out\n"
        "\t@sort -n $< | head -n 3 > $@\n"
        "\t@wc -l < $< >> $@\n"
        "\n"
        "out/words.idx: $(SRCS) | out\n"
        "\t@cat $(SRCS) | tr ' ' '\\n' | grep -v '^[0-9]' | sort | uniq -c | sort -k1,1nr -k2 | head -n 5 > $@\n"
        "\n"
        "out:\n"
        "\t@mkdir -p out\n"
        "\n"
        ".PHONY: all\n");
}

/* make -j2 runs two recipes at a time, each through sh and pipes. */
Test(programs, make_runs_a_pattern_rule_two_jobs_at_a_time)
{
    prog_t p = { "make", { "/usr/bin/make" }, { "/usr/bin/make", "-j2", "-s" }, NULL, prep_make,
                 0, 50 };
    same_under_every_library(&p);
}

static void prep_tar(void)
{
    put_tree("data", 8, 40000);
    put("tar.sh",
        "set -e\n"
        "tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf a.tar data\n"
        "xz -T2 --block-size=65536 -3 -k a.tar\n"
        "xz -T2 -dc a.tar.xz > b.tar\n"
        "cmp a.tar b.tar\n"
        "xz -l --robot a.tar.xz | grep -E '^(totals|file)' | cut -f2-5\n"
        "tar -tvf a.tar.xz\n"
        "mkdir x\n"
        "tar -xJf a.tar.xz -C x\n"
        "diff -r data x/data && echo same\n"
        "cksum < a.tar.xz\n");
}

/* xz -T2 compresses and decompresses in 64 KiB blocks on two threads; tar
 * runs xz as its child. */
Test(programs, tar_and_xz_with_two_threads)
{
    prog_t p = { "tar and xz", { "/usr/bin/tar", "/usr/bin/xz", "/bin/bash" },
                 { "/bin/bash", "tar.sh" }, NULL, prep_tar, 0, 15 };
    same_under_every_library(&p);
}

static void prep_bash(void)
{
    put_words("words.txt", 800, 21);
    put("script.sh",
        "declare -A seen\n"
        "declare -a list\n"
        "total=0\n"
        "while read -r num word rest; do\n"
        "  list+=(\"$word\")\n"
        "  (( total += num % 1000 ))\n"
        "  seen[$word]=$(( ${seen[$word]:-0} + 1 ))\n"
        "done < words.txt\n"
        "echo \"lines=${#list[@]} total=$total distinct=${#seen[@]}\"\n"
        "for k in $(printf '%s\\n' \"${!seen[@]}\" | sort | head -n 5); do\n"
        "  printf '%-8s %3d\\n' \"$k\" \"${seen[$k]}\"\n"
        "done\n"
        "s=\"${list[*]:0:40}\"\n"
        "up=${s^^}\n"
        "echo \"${#s} ${up:0:24} ${s//a/_}\" | cut -c1-70\n"
        "rev() { local x=$1 out= i; for ((i = ${#x} - 1; i >= 0; i--)); do out+=${x:i:1}; done; printf '%s' \"$out\"; }\n"
        "echo \"$(rev \"${s:0:60}\")\"\n"
        "top=$(printf '%s\\n' \"${list[@]}\" | sort | uniq -c | sort -k1,1nr -k2 | head -n 3 | while read -r c w; do printf '%s:%s ' \"$w\" \"$c\"; done)\n"
        "echo \"top $top\"\n"
        "( cd / && echo \"subshell in $PWD\" )\n"
        "squares=$(for i in {1..60}; do echo $(( i * i % 17 )); done | sort -n | uniq | paste -sd, -)\n"
        "echo \"$squares\"\n"
        "case $total in *[02468]) echo even ;; *) echo odd ;; esac\n"
        "[[ ${list[3]} =~ ^([a-z])([a-z]*)$ ]] && echo \"first ${BASH_REMATCH[1]} rest ${BASH_REMATCH[2]}\"\n"
        "fib() { local n=$1; if (( n < 2 )); then echo \"$n\"; else echo $(( $(fib $((n - 1))) + $(fib $((n - 2))) )); fi; }\n"
        "echo \"fib $(fib 7)\"\n"
        "mapfile -t head < <(head -n 5 words.txt)\n"
        "IFS=' ' read -r -a parts <<< \"${head[2]}\"\n"
        "printf -v joined '%s|' \"${parts[@]}\"\n"
        "echo \"${#head[@]} ${joined%|}\"\n"
        "cat <<EOF | tr a-z A-Z\n"
        "here $total ${#list[@]} ${list[-1]}\n"
        "EOF\n"
        "declare -i n=0\n"
        "while (( n < 2000 )); do arr[n]=\"item$n\"; n+=1; done\n"
        "unset 'arr[7]'\n"
        "echo \"${#arr[@]} ${arr[1999]} ${arr[*]:1990:3}\"\n");
}

Test(programs, bash_runs_a_script_with_arrays_subshells_and_pipes)
{
    prog_t p = { "bash", { "/bin/bash" }, { "/bin/bash", "script.sh" }, NULL, prep_bash, 0, 40 };
    same_under_every_library(&p);
}

static void prep_zstd(void)
{
    put_tree("data", 6, 50000);
    put("z.sh",
        "set -e\n"
        "cat data/*.txt > all.txt\n"
        "zstd -q -T2 -6 all.txt -o all.zst\n"
        "zstd -q -d all.zst -o back.txt\n"
        "cmp all.txt back.txt\n"
        "cksum < all.zst\n"
        "gzip -9 -n -c all.txt > all.gz\n"
        "gzip -dc all.gz | cksum\n"
        "cksum < all.gz\n"
        "bzip2 -c all.txt | cksum\n"
        "if command -v pigz > /dev/null; then pigz -p 2 -c all.txt | pigz -dc | cksum; fi\n");
}

/* zstd -T2 compresses on worker threads; so does pigz -p 2 where it is
 * installed (it is not on every machine: then that line is left out). */
Test(programs, zstd_gzip_and_bzip2_compress_and_decompress)
{
    prog_t p = { "zstd, gzip and bzip2", { "/usr/bin/zstd", "/usr/bin/gzip", "/usr/bin/bzip2", "/bin/bash" },
                 { "/bin/bash", "z.sh" }, NULL, prep_zstd, 0, 10 };
    same_under_every_library(&p);
}
