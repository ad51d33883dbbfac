#ifndef AUTHGATE_CJEMALLOC_SHIM_H
#define AUTHGATE_CJEMALLOC_SHIM_H

#include <stddef.h>

/// jemalloc's control interface (jemalloc(3), "MALLCTL NAMESPACE"), declared here rather than by
/// including <jemalloc/jemalloc.h>, whose own declarations of malloc and free would shadow Glibc's
/// in Swift. Linking this module (`link "jemalloc"`) puts libjemalloc before libc in the
/// executable's needed libraries, so jemalloc's malloc serves the whole process.
int mallctl(const char *name, void *oldp, size_t *oldlenp, void *newp, size_t newlen);

#endif
