// Issue 68's C floor (Benchmarks/health.py): N libmpv cores loop FILE headless for SECONDS, each
// with the same measuring filters PlayerKit puts in (freezedetect, blackdetect, silencedetect,
// ebur128) and their metadata observed as PlayerKit observes it (PlayerKit also observes every
// position while a fault is under way; the clip has none), or none; with `stats`, the
// eleven figures PlayerKit's statistics read, asked for at once every second, and the
// position observed every frame. Prints {"cpu_s": ..., "wall_s": ..., "players": N}: the
// process's CPU seconds over the window, after 2 s of start-up. Plain C, no PlayerKit.
// Build: cc -O2 -o health health.c -lmpv -lpthread
// Usage: health N SECONDS FILE [stats] [alarms] [loudness]
#include <mpv/client.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include "common.h"

// The cores' wakeup callbacks signal one condition; the loop sleeps on it until an event or its
// next timer (no polling).
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t woken = PTHREAD_COND_INITIALIZER;
static int pending = 0;
static void wakeup(void *context) {
    (void)context;
    pthread_mutex_lock(&lock);
    pending = 1;
    pthread_cond_signal(&woken);
    pthread_mutex_unlock(&lock);
}

static void wait_until(double deadline) {
    struct timespec now_ts;
    clock_gettime(CLOCK_MONOTONIC, &now_ts);
    double now_value = now_ts.tv_sec + now_ts.tv_nsec / 1e9;
    double wait = deadline - now_value;
    if (wait < 0) wait = 0;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    long long ns = until.tv_nsec + (long long)(wait * 1e9);
    until.tv_sec += ns / 1000000000LL;
    until.tv_nsec = ns % 1000000000LL;
    pthread_mutex_lock(&lock);
    while (!pending) {
        if (pthread_cond_timedwait(&woken, &lock, &until) != 0) break;
    }
    pending = 0;
    pthread_mutex_unlock(&lock);
}

static const char *figures[] = {"decoder-frame-drop-count", "frame-drop-count", "avsync", "hls-bitrate", "video-bitrate",
                                "audio-bitrate", "cache-speed", "demuxer-cache-duration", "demuxer-cache-state",
                                "demuxer-cache-time", "time-pos"};

static void drain(mpv_handle **cores, int n) {
    for (int i = 0; i < n; i++) {
        for (;;) {
            mpv_event *event = mpv_wait_event(cores[i], 0);
            if (event->event_id == MPV_EVENT_NONE) break;
        }
    }
}

int main(int argc, char **argv) {
    setlocale(LC_NUMERIC, "C");
    if (argc < 4) { fprintf(stderr, "usage: health N SECONDS FILE [stats] [alarms] [loudness]\n"); return 2; }
    int n = atoi(argv[1]);
    double seconds = atof(argv[2]);
    const char *file = argv[3];
    int stats = 0, alarms = 0, loudness = 0;
    for (int k = 4; k < argc; k++) {
        if (!strcmp(argv[k], "stats")) stats = 1;
        if (!strcmp(argv[k], "alarms")) alarms = 1;
        if (!strcmp(argv[k], "loudness")) loudness = 1;
    }
    mpv_handle **cores = calloc(n, sizeof *cores);
    for (int i = 0; i < n; i++) {
        mpv_handle *h = mpv_create();
        const char *opts[][2] = {{"config", "no"}, {"load-scripts", "no"}, {"ytdl", "no"}, {"osc", "no"}, {"terminal", "no"},
                                 {"idle", "yes"}, {"vo", "null"}, {"ao", "null"}, {"loop-file", "inf"}, {"video-sync", "desync"},
                                 {"audio-pitch-correction", "no"}};
        for (unsigned k = 0; k < sizeof opts / sizeof opts[0]; k++) mpv_set_option_string(h, opts[k][0], opts[k][1]);
        mpv_initialize(h);
        mpv_set_wakeup_callback(h, wakeup, NULL);
        if (alarms) {
            const char *vf[] = {"vf", "add", "@playerkit-freeze:lavfi=[freezedetect=n=-60dB:d=2]", NULL};
            const char *vb[] = {"vf", "add", "@playerkit-black:lavfi=[blackdetect=d=2:pic_th=0.98:pix_th=0.1]", NULL};
            const char *af[] = {"af", "add", "@playerkit-silence:lavfi=[silencedetect=n=-60dB:d=2]", NULL};
            mpv_command(h, vf);
            mpv_command(h, vb);
            mpv_command(h, af);
            mpv_observe_property(h, 1, "vf-metadata/playerkit-freeze", MPV_FORMAT_NODE);
            mpv_observe_property(h, 2, "vf-metadata/playerkit-black", MPV_FORMAT_NODE);
            mpv_observe_property(h, 3, "af-metadata/playerkit-silence", MPV_FORMAT_NODE);
        }
        if (loudness) {
            const char *lf[] = {"af", "add", "@playerkit-loudness:lavfi=[ebur128=metadata=1:peak=true]", NULL};
            mpv_command(h, lf);
        }
        if (stats) mpv_observe_property(h, 4, "time-pos", MPV_FORMAT_DOUBLE);
        const char *load[] = {"loadfile", file, NULL};
        mpv_command(h, load);
        cores[i] = h;
    }
    double start = now_s(), cpu0 = 0, wall0 = 0, next_second = start, next_loudness = start;
    int measuring = 0;
    for (;;) {
        double t = now_s();
        if (!measuring && t - start >= 2) { measuring = 1; cpu0 = cpu_s(); wall0 = t; }
        if (measuring && t - wall0 >= seconds) break;
        if (stats && t >= next_second) {
            next_second += 1;
            for (int i = 0; i < n; i++)
                for (unsigned k = 0; k < sizeof figures / sizeof figures[0]; k++) mpv_get_property_async(cores[i], 0, figures[k], MPV_FORMAT_NODE);
        }
        if (loudness && t >= next_loudness) {
            next_loudness += 0.1;
            for (int i = 0; i < n; i++) mpv_get_property_async(cores[i], 0, "af-metadata/playerkit-loudness", MPV_FORMAT_NODE);
        }
        drain(cores, n);
        double deadline = measuring ? wall0 + seconds : start + 2;
        if (stats && next_second < deadline) deadline = next_second;
        if (loudness && next_loudness < deadline) deadline = next_loudness;
        wait_until(deadline);
    }
    double cpu = cpu_s() - cpu0, wall = now_s() - wall0;
    printf("{\"cpu_s\": %.4f, \"wall_s\": %.4f, \"players\": %d}\n", cpu, wall, n);
    fflush(stdout);
    for (int i = 0; i < n; i++) mpv_terminate_destroy(cores[i]);
    return 0;
}
