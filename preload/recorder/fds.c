/* fds.c - the recorder's own file descriptors (see fds.h). */
#include "preload/recorder/fds.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "tracer/base/sys.h"

#define FD_TOP   1024   /* highest number used, plus one, whatever the limit */
#define FD_TRIES 64     /* numbers tried downwards from there */

int dmm_fd_move_high(int fd)
{
    struct rlimit rl;
    if (fd < 0 || dmm_sys6(SYS_prlimit64, 0, RLIMIT_NOFILE, 0, (long)&rl, 0, 0) != 0)
        return fd;
    long top = rl.rlim_cur < FD_TOP ? (long)rl.rlim_cur : FD_TOP;
    /* F_DUPFD gives the lowest free number from want up: going down from
     * the top, the first that succeeds is the highest free one */
    for (long want = top - 1; want > fd && want >= top - FD_TRIES; want--) {
        long n = DMM_SYS(SYS_fcntl, fd, F_DUPFD_CLOEXEC, want);
        if (n >= 0) {
            DMM_SYS(SYS_close, fd, 0, 0);
            return (int)n;
        }
        if (n != -EMFILE)
            break;
    }
    return fd;
}

int dmm_fd_id(int fd, dmm_fd_id_t *id)
{
    struct stat st;
    long r = fd < 0 ? -EBADF : DMM_SYS(SYS_fstat, fd, &st, 0);
    if (r != 0)
        return (int)r;
    id->dev = (uint64_t)st.st_dev;
    id->ino = (uint64_t)st.st_ino;
    return 0;
}

int dmm_fd_is(int fd, const dmm_fd_id_t *id)
{
    dmm_fd_id_t now = { 0, 0 };
    return dmm_fd_id(fd, &now) == 0 && now.dev == id->dev && now.ino == id->ino;
}

void dmm_fd_close_if(int fd, const dmm_fd_id_t *id)
{
    if (dmm_fd_is(fd, id))
        DMM_SYS(SYS_close, fd, 0, 0);
}
