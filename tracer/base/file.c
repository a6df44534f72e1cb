/* file.c - reading whole files, and outputs that appear only when complete
 * (see file.h). */
#include "tracer/base/file.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int dmm_read_file(const char *path, uint8_t **bufp, size_t *lenp, dmm_err_t *err)
{
    int fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return dmm_err_set(err, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        return dmm_err_set(err, "%s: is a directory, not a trace", path);
    }
    size_t cap = (fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0)
                     ? (size_t)st.st_size + 1 : 1 << 16;
    size_t len = 0;
    uint8_t *buf = malloc(cap);
    if (!buf) {
        if (fd) close(fd);
        return dmm_err_set(err, "%s: out of memory reading the file", path);
    }
    for (;;) {
        if (len == cap) {
            uint8_t *nb = cap < SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
            if (!nb) {
                free(buf);
                if (fd) close(fd);
                return dmm_err_set(err, "%s: out of memory reading the file", path);
            }
            buf = nb;
            cap *= 2;
        }
        ssize_t n = read(fd, buf + len, cap - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            int e = errno;
            free(buf);
            if (fd) close(fd);
            return dmm_err_set(err, "%s: offset %zu: read error: %s", path, len, strerror(e));
        }
        if (n == 0)
            break;
        len += (size_t)n;
    }
    if (fd)
        close(fd);
    *bufp = buf;
    *lenp = len;
    return 0;
}

int dmm_out_open(dmm_outfile_t *o, const char *path, int force, dmm_err_t *err)
{
    memset(o, 0, sizeof *o);
    struct stat st;
    if (stat(path, &st) == 0 && (S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode))) {
        /* nothing to replace and nowhere to rename: write straight to it */
        o->path = strdup(path);
        o->fp = o->path ? fopen(path, "wb") : NULL;
        if (!o->fp) {
            int e = o->path ? errno : ENOMEM;
            free(o->path);
            o->path = NULL;
            return dmm_err_set(err, "%s: cannot open: %s", path, strerror(e));
        }
        return 0;
    }
    /* Say so before doing any work; the final link decides for sure. */
    if (!force && lstat(path, &st) == 0)
        return dmm_err_set(err, "%s: exists; not replacing it (use --force)", path);
    char *d = strdup(path), *b = strdup(path);
    if (!d || !b) {
        free(d);
        free(b);
        return dmm_err_set(err, "%s: out of memory", path);
    }
    const char *dir = dirname(d), *base = basename(b);
    size_t n = strlen(dir) + strlen(base) + 16;
    o->tmp = malloc(n);
    o->path = strdup(path);
    if (o->tmp)
        snprintf(o->tmp, n, "%s/.%s.XXXXXX", dir, base);
    free(d);
    free(b);
    if (!o->tmp || !o->path) {
        free(o->tmp);
        free(o->path);
        return dmm_err_set(err, "%s: out of memory", path);
    }
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        int e = errno;
        free(o->tmp);
        free(o->path);
        return dmm_err_set(err, "%s: cannot create a file next to it: %s", path, strerror(e));
    }
    o->fp = fdopen(fd, "wb");
    if (!o->fp) {
        int e = errno;
        close(fd);
        unlink(o->tmp);
        free(o->tmp);
        free(o->path);
        return dmm_err_set(err, "%s: %s", path, strerror(e));
    }
    o->force = force;
    return 0;
}

void dmm_out_abort(dmm_outfile_t *o)
{
    if (o->fp)
        fclose(o->fp);
    if (o->tmp)
        unlink(o->tmp);
    free(o->tmp);
    free(o->path);
    memset(o, 0, sizeof *o);
}

int dmm_out_commit(dmm_outfile_t *o, dmm_err_t *err)
{
    int e = 0;
    errno = 0;
    if (fflush(o->fp) != 0 || ferror(o->fp))
        e = errno ? errno : EIO;
    if (!o->tmp) {   /* a device or FIFO, written directly */
        if (fclose(o->fp) != 0 && !e)
            e = errno ? errno : EIO;
        o->fp = NULL;
        int rc = e ? dmm_err_set(err, "%s: write error: %s", o->path, strerror(e)) : 0;
        dmm_out_abort(o);
        return rc;
    }
    /* mkstemp made it 0600; give it the mode a new file would get */
    mode_t um = umask(0);
    umask(um);
    if (!e && fchmod(fileno(o->fp), 0666 & ~um) != 0)
        e = errno;
    if (fclose(o->fp) != 0 && !e)
        e = errno ? errno : EIO;
    o->fp = NULL;
    if (e) {
        dmm_err_set(err, "%s: write error: %s", o->path, strerror(e));
        dmm_out_abort(o);
        return -1;
    }
    int rc = 0;
    if (o->force) {
        if (rename(o->tmp, o->path) != 0)
            rc = dmm_err_set(err, "%s: cannot replace: %s", o->path, strerror(errno));
        else {
            free(o->tmp);   /* it has its final name now */
            o->tmp = NULL;
        }
    } else if (link(o->tmp, o->path) != 0) {
        /* link refuses to replace, atomically; file systems without hard
         * links get a check and a rename instead */
        int le = errno;
        struct stat st;
        if (le == EEXIST || lstat(o->path, &st) == 0)
            rc = dmm_err_set(err, "%s: exists; not replacing it (use --force)", o->path);
        else if (le != EPERM && le != ENOTSUP && le != EMLINK && le != ENOSYS)
            rc = dmm_err_set(err, "%s: cannot create: %s", o->path, strerror(le));
        else if (rename(o->tmp, o->path) != 0)
            rc = dmm_err_set(err, "%s: cannot create: %s", o->path, strerror(errno));
        else {
            free(o->tmp);
            o->tmp = NULL;
        }
    }
    dmm_out_abort(o);   /* removes the temporary name, if it still has one */
    return rc;
}

int dmm_write_file(const char *path, const void *data, size_t len, dmm_err_t *err)
{
    dmm_outfile_t o;
    if (dmm_out_open(&o, path, 1, err) != 0)
        return -1;
    if (len && fwrite(data, 1, len, o.fp) != len) {
        int e = errno ? errno : EIO;
        dmm_out_abort(&o);
        return dmm_err_set(err, "%s: write error: %s", path, strerror(e));
    }
    return dmm_out_commit(&o, err);
}
