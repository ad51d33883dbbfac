/*
 * Preloaded into the gateway only by bench/exchange/instructions.sh, which runs it under valgrind.
 *
 * Valgrind 3.19 (Debian 12's) edits the signal mask a program hands to rt_sigsuspend in place, to
 * keep its own signals out of it. libdispatch, which parks Swift's main thread in sigsuspend,
 * passes a constant mask that lives in read-only memory, so valgrind itself dies with SIGSEGV as
 * soon as `authgate serve` is up. This sigsuspend hands the kernel a writable copy instead; it
 * means the same to the program.
 */
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

int sigsuspend(const sigset_t *mask) {
    sigset_t copy = *mask;
    /* The kernel's sigset_t is 64 bits wide, glibc's 1024: the size rt_sigsuspend wants is 8. */
    return (int)syscall(SYS_rt_sigsuspend, &copy, 8);
}
