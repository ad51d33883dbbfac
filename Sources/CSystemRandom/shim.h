#ifndef AUTHGATE_CSYSTEMRANDOM_SHIM_H
#define AUTHGATE_CSYSTEMRANDOM_SHIM_H

#include <errno.h>
#include <stddef.h>
#include <sys/random.h>

/// Fills `length` bytes at `buffer` from the kernel's CSPRNG (getrandom(2), blocking only until
/// the pool is first initialised). Returns 0, or -1 when the kernel refused (errno set). Swift's
/// Glibc module does not expose getrandom, and SystemRandomNumberGenerator makes one system call
/// per 8 bytes.
static inline int authgate_fill_random(void *buffer, size_t length) {
    unsigned char *cursor = (unsigned char *)buffer;
    while (length > 0) {
        ssize_t got = getrandom(cursor, length, 0);
        if (got < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        cursor += got;
        length -= (size_t)got;
    }
    return 0;
}

#endif
