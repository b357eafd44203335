// What mpv's built-in Lua scripts cost an embedding client: N idle libmpv cores with PlayerKit's
// embedding options, with mpv's stats, console and auto-profiles scripts (mpv's default) or
// without them (`load-stats-overlay=no`, `load-osd-console=no`, `load-auto-profiles=no`, as
// PlayerKit sets). Prints the threads and resident memory the cores added, and the time to
// create and initialize them. Plain C, no PlayerKit.
// Build: cc -O2 -o idle-cores idle-cores.c -lmpv
// Usage: idle-cores N [without-scripts]
#include <mpv/client.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <unistd.h>
#include <time.h>
static double now(void){struct timespec t; clock_gettime(CLOCK_MONOTONIC,&t); return t.tv_sec+t.tv_nsec/1e9;}
static int threads(void) { int n = 0; DIR *d = opendir("/proc/self/task"); struct dirent *e; while ((e = readdir(d))) if (e->d_name[0] != '.') n++; closedir(d); return n; }
static long rss_kb(void) { FILE *f = fopen("/proc/self/status", "r"); char line[256]; long v = 0; while (fgets(line, sizeof line, f)) if (!strncmp(line, "VmRSS:", 6)) v = atol(line + 6); fclose(f); return v; }
int main(int argc, char **argv) {
    setlocale(LC_NUMERIC, "C");
    int n = atoi(argv[1]); int noscripts = argc > 2;
    int t0 = threads(); long r0 = rss_kb(); double begin = now();
    for (int i = 0; i < n; i++) {
        mpv_handle *h = mpv_create();
        const char *opts[][2] = {{"config","no"},{"load-scripts","no"},{"ytdl","no"},{"osc","no"},{"input-default-bindings","no"},{"terminal","no"},{"idle","yes"},{"vo","null"},{"ao","null"}};
        for (unsigned k = 0; k < sizeof opts / sizeof opts[0]; k++) mpv_set_option_string(h, opts[k][0], opts[k][1]);
        if (noscripts) { mpv_set_option_string(h, "load-stats-overlay", "no"); mpv_set_option_string(h, "load-osd-console", "no"); mpv_set_option_string(h, "load-auto-profiles", "no"); }
        mpv_initialize(h);
    }
    double created = now() - begin;
    sleep(2);
    printf("%s: %d cores: %d threads (+%d), RSS +%.1f MB (%.2f MB per core), created in %.1f ms (%.2f ms per core)\n", noscripts ? "without scripts" : "with scripts", n, threads(), threads() - t0, (rss_kb() - r0) / 1024.0, (rss_kb() - r0) / 1024.0 / n, created * 1000, created * 1000 / n);
    return 0;
}
