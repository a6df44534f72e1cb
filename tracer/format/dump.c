/* dump.c - a trace as readable text, one record per line (see dump.h). */
#include "tracer/format/dump.h"

#include <string.h>

typedef unsigned long long ull;

/* What the arg field means for an op, or NULL when it means nothing. */
static const char *arg_name(unsigned op)
{
    switch (op) {
    case DMM_TRC_CALLOC: case DMM_TRC_REALLOCARRAY:
        return "nmemb";
    case DMM_TRC_MEMALIGN: case DMM_TRC_POSIX_MEMALIGN: case DMM_TRC_ALIGNED_ALLOC:
    case DMM_TRC_VALLOC: case DMM_TRC_PVALLOC:
        return "align";
    default:
        return NULL;
    }
}

/* Print bytes as text: arguments separated by spaces, anything unprintable
 * as \xNN so that a hostile command line cannot break the dump's lines. */
static void put_escaped(FILE *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\0')
            fputc(i + 1 < n ? ' ' : '\n', out);
        else if (c < 0x20 || c >= 0x7f || c == '\\')
            fprintf(out, "\\x%02x", c);
        else
            fputc(c, out);
    }
    if (n == 0 || s[n - 1] != '\0')
        fputc('\n', out);
}

void dmm_dump_begin(const dmm_trace_t *t, FILE *out)
{
    fprintf(out, "# dmm trace dump\n");
    if (t->path) {
        fputs("# file: ", out);
        put_escaped(out, t->path, strlen(t->path));
    }
    fprintf(out, "# format: %s\n", dmm_format_name(t->format));
    fprintf(out, "# pid: %u ppid: %u\n", t->pid, t->ppid);
    fputs("# cmdline: ", out);
    put_escaped(out, t->cmdline ? t->cmdline : "", t->cmdline ? t->cmdline_len : 0);
    fprintf(out, "# flags:%s%s%s%s\n", t->flags & DMM_TRC_F_CONVERTED ? " converted" : "",
            t->flags & DMM_TRC_F_FORKED ? " forked" : "",
            t->flags & DMM_TRC_F_NOTIME ? " notime" : "", t->flags ? "" : " none");
    fprintf(out, "# clock: id %u resolution %u ns, started at %llu ns (realtime)\n",
            t->clock_id, t->clock_res_ns, (ull)t->start_realtime_ns);
    fprintf(out, "# stack depth: %u\n", t->stack_depth);
    if (t->time_stride > 1)
        fprintf(out, "# clock read every %u records of a thread\n", t->time_stride);
    fprintf(out, "# records: %zu\n", t->nrecs);
    fprintf(out, "# stacks: %zu\n", t->nstacks > 0 ? t->nstacks - 1 : 0);
    fprintf(out, "# modules: %zu\n", t->nmodules);
    if (t->truncated) {
        fputs("# truncated: ", out);
        put_escaped(out, t->note, strlen(t->note));
    }
    for (size_t i = 0; i < t->nmodules; i++) {
        const dmm_module_t *m = &t->modules[i];
        fprintf(out, "# module 0x%llx-0x%llx offset 0x%llx ", (ull)m->start, (ull)m->end,
                (ull)m->offset);
        put_escaped(out, m->path ? m->path : "", m->path ? strlen(m->path) : 0);
    }
    fprintf(out, "# seq time_ns tid op size= [nmemb=|align=|resident=] in= out= [failed errno=] [stack=]\n");
}

void dmm_dump_rec(const dmm_rec_t *r, FILE *out)
{
    fprintf(out, "%llu %llu %u %s size=%llu", (ull)r->seq, (ull)r->time, r->tid,
            dmm_op_name(r->op), (ull)r->size);
    const char *an = arg_name(r->op);
    if ((r->flags & DMM_TRC_RF_RESIDENT) || r->op == DMM_TRC_RESIDENT)
        fprintf(out, " resident=%llu", (ull)r->arg);
    else if (an)
        fprintf(out, " %s=%llu", an, (ull)r->arg);
    else if (r->arg)
        fprintf(out, " arg=%llu", (ull)r->arg);
    fprintf(out, " in=0x%llx out=0x%llx", (ull)r->ptr_in, (ull)r->ptr_out);
    if (r->flags & DMM_TRC_RF_FAILED)
        fprintf(out, " failed errno=%d", r->errnum);
    if (r->stack)
        fprintf(out, " stack=%u", r->stack);
    fputc('\n', out);
}

int dmm_dump_end(const dmm_trace_t *t, FILE *out)
{
    for (size_t id = 1; id < t->nstacks; id++) {
        const dmm_stack_t *s = &t->stacks[id];
        fprintf(out, "# stack %zu:", id);
        for (uint32_t k = 0; k < s->nframes && s->first + k < t->nframes; k++)
            fprintf(out, " 0x%llx", (ull)t->frames[s->first + k]);
        fputc('\n', out);
    }
    if (fflush(out) != 0 || ferror(out))
        return -1;
    return 0;
}

int dmm_write_text(const dmm_trace_t *t, FILE *out)
{
    dmm_dump_begin(t, out);
    for (size_t i = 0; i < t->nrecs; i++)
        dmm_dump_rec(&t->recs[i], out);
    return dmm_dump_end(t, out);
}
