/* io.h - writing (reading) a whole buffer to (from) a file descriptor,
 * through short writes and reads and EINTR.  Header-only and
 * allocation-free: the recorder inside a traced process uses it from
 * malloc, the tools from anywhere. */
#ifndef DMM_BASE_IO_H
#define DMM_BASE_IO_H

#include <errno.h>
#include <stddef.h>
#include <unistd.h>

/* 0, or -1 with errno (0 when the descriptor accepted nothing). */
static inline int dmm_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len) {
        ssize_t w = write(fd, p, len);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        len -= (size_t)w;
    }
    return 0;
}

/* 0, or -1 (an error, or the end of the file before len bytes). */
static inline int dmm_read_all(int fd, void *buf, size_t len)
{
    char *p = buf;
    while (len) {
        ssize_t r = read(fd, p, len);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        p += r;
        len -= (size_t)r;
    }
    return 0;
}

#endif
