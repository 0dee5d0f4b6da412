/* glshare attach: which descriptor is glshare's channel (app/attach/wire.py, "GLSHARE_ATTACH_FD").
 *
 * The variable is "FD:DEV:INO": the descriptor's number in the program glshare started, and the
 * st_dev/st_ino of the socket or pipe behind it. A descendant started with close_fds (subprocess's
 * default) inherits the variable but not the descriptor, and the number may name one of its own
 * files: only a descriptor whose fstat(2) gives that socket or FIFO, with that device and inode, is
 * the channel. The library then keeps a private close-on-exec duplicate at GLSHARE_CHANNEL_LOW or
 * above, so that a program which closes the inherited number and opens a file on it never gets the
 * records either (its exec'd children check the variable again). Included by both libraries. */
#ifndef GLSHARE_ATTACH_CHANNEL_H
#define GLSHARE_ATTACH_CHANNEL_H

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>

#define GLSHARE_CHANNEL_LOW 200 /* the duplicate's lowest number: above the descriptors programs reuse soon */

enum { CHANNEL_NONE = 0, CHANNEL_BAD_TEXT = 1 };

/* The channel's private duplicate (>= 0), or -1 with *why: CHANNEL_NONE where the variable is unset
 * or names no descriptor that is the channel (the expected case in a close_fds descendant: say
 * nothing), CHANNEL_BAD_TEXT where it is not "FD:DEV:INO". *is_socket tells send(2) from write(2). */
static int glshare_channel(const char *text, int *is_socket, int *why)
{
    *why = CHANNEL_NONE;
    *is_socket = 0;
    if (!text || !*text)
        return -1;
    char *end;
    errno = 0;
    long fd = strtol(text, &end, 10);
    if (*end != ':' || fd < 0 || fd > 1 << 20) {
        *why = CHANNEL_BAD_TEXT;
        return -1;
    }
    unsigned long long dev = strtoull(end + 1, &end, 10);
    if (*end != ':') {
        *why = CHANNEL_BAD_TEXT;
        return -1;
    }
    unsigned long long ino = strtoull(end + 1, &end, 10);
    if (*end || errno) {
        *why = CHANNEL_BAD_TEXT;
        return -1;
    }
    struct stat st;
    if (fstat((int)fd, &st) != 0 || !(S_ISSOCK(st.st_mode) || S_ISFIFO(st.st_mode))
        || (unsigned long long)st.st_dev != dev || (unsigned long long)st.st_ino != ino)
        return -1;
    int own = fcntl((int)fd, F_DUPFD_CLOEXEC, GLSHARE_CHANNEL_LOW);
    if (own < 0)
        own = fcntl((int)fd, F_DUPFD_CLOEXEC, 0); /* a descriptor limit below GLSHARE_CHANNEL_LOW */
    if (own < 0)
        return -1;
    *is_socket = S_ISSOCK(st.st_mode);
    return own;
}

#endif
