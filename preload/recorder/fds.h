/* fds.h - the recorder's own file descriptors (the trace file, the writer
 * process's pipe), kept out of the traced program's way and checked
 * before use.
 *
 * A program may close descriptors it did not open (a daemon's closefrom, a
 * child's close_range before exec) or put a file of its own on their
 * numbers (a shell's `exec 3>file`, any dup2): a trace block written to
 * the number then goes into the program's file, and a close closes the
 * program's.  So the recorder moves its descriptors to the top of the range
 * a program's open() takes from, as bash does its own, where no open()
 * lands while they are open, and before it writes through or closes one it
 * checks that the number still names what it opened (its device and inode).
 *
 * Raw system calls only (sys.h): fatal-signal handlers and the writer
 * process call them. */
#ifndef DMM_RECORDER_FDS_H
#define DMM_RECORDER_FDS_H

#include <stdint.h>

/* What a descriptor names: a file's device and inode (a pipe's too). */
typedef struct dmm_fd_id {
    uint64_t dev, ino;
} dmm_fd_id_t;

/* fd moved to the highest free number below the soft RLIMIT_NOFILE, or
 * below 1024 where that is higher (select()'s FD_SETSIZE; the kernel's
 * table grows to the highest number in use), close-on-exec, and its old
 * number closed: the new number, or fd itself where none up there is
 * free. */
int dmm_fd_move_high(int fd);

/* What fd names, into *id: 0, or -errno (EBADF: it is closed). */
int dmm_fd_id(int fd, dmm_fd_id_t *id);

/* 1 when fd is open and names id's file. */
int dmm_fd_is(int fd, const dmm_fd_id_t *id);

/* Close fd if it still names id's file (a number the program took over is
 * the program's to close). */
void dmm_fd_close_if(int fd, const dmm_fd_id_t *id);

#endif
