/* mem.c - resident memory from /proc (see mem.h). */
#include "tracer/replay/mem.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

long dmm_mem_page_size(void)
{
    static long page_size;
    if (!page_size) {
        page_size = sysconf(_SC_PAGESIZE);
        if (page_size <= 0)
            page_size = 4096;
    }
    return page_size;
}

void dmm_mem_statm(int fd, uint64_t *rss, uint64_t *anon)
{
    char buf[128];
    *rss = *anon = 0;
    ssize_t n = fd >= 0 ? pread(fd, buf, sizeof buf - 1, 0) : -1;
    if (n <= 0)
        return;
    buf[n] = 0;
    char *p = buf, *e;
    strtoull(p, &e, 10);
    uint64_t res = strtoull(e, &e, 10), shared = strtoull(e, NULL, 10);
    uint64_t page = (uint64_t)dmm_mem_page_size();
    *rss = res * page;
    *anon = (res > shared ? res - shared : 0) * page;
}

uint64_t dmm_mem_hwm(void)
{
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    char buf[4096];
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = 0;
    char *p = strstr(buf, "VmHWM:");
    return p ? strtoull(p + 6, NULL, 10) * 1024u : 0;
}

int dmm_mem_reset_hwm(void)
{
    int fd = open("/proc/self/clear_refs", O_WRONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int ok = write(fd, "5", 1) == 1;
    close(fd);
    return ok;
}
