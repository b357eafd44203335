// What the C benchmark programs share: clocks.
#ifndef PLAYERKIT_BENCH_COMMON_H
#define PLAYERKIT_BENCH_COMMON_H
#include <sys/resource.h>
#include <time.h>

// Monotonic seconds.
static inline double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

// CPU seconds (user + system) of this process so far.
static inline double cpu_s(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6 + usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
}

#endif
