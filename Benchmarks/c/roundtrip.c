// The floor: a plain C client of libmpv doing the benchmark's round trip.
// N cores, each with a clip loaded paused; for each sample, set "volume" on one core with
// mpv_set_property and wait in mpv_wait_event for that core's observed change.
// Prints one JSON object: {"p50_us":..,"p99_us":..,"mean_us":..,"samples":..}.
// Build: cc -O2 -o roundtrip roundtrip.c -lmpv
// Usage: roundtrip PLAYERS SAMPLES MEDIA [GAP_US]
#include <locale.h>
#include <mpv/client.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e6 + ts.tv_nsec / 1e3;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void wait_for(mpv_handle *h, int event_id) {
    for (;;) {
        mpv_event *e = mpv_wait_event(h, 10);
        if (e->event_id == event_id) return;
        if (e->event_id == MPV_EVENT_NONE) { fprintf(stderr, "timeout\n"); exit(1); }
    }
}

int main(int argc, char **argv) {
    if (argc < 4) { fprintf(stderr, "usage: roundtrip PLAYERS SAMPLES MEDIA [GAP_US]\n"); return 2; }
    int players = atoi(argv[1]), samples = atoi(argv[2]);
    long gap_us = argc > 4 ? atol(argv[4]) : 0;
    const char *media = argv[3];
    mpv_handle **handles = calloc(players, sizeof *handles);
    for (int i = 0; i < players; i++) {
        setlocale(LC_NUMERIC, "C");
        mpv_handle *h = mpv_create();
        const char *options[][2] = {{"config", "no"}, {"terminal", "no"}, {"vo", "null"}, {"ao", "null"},
                                    {"idle", "yes"}, {"pause", "yes"}, {"ytdl", "no"}, {"load-scripts", "no"}};
        for (size_t o = 0; o < sizeof options / sizeof options[0]; o++) mpv_set_option_string(h, options[o][0], options[o][1]);
        if (mpv_initialize(h) < 0) { fprintf(stderr, "init failed\n"); return 1; }
        mpv_observe_property(h, 1, "volume", MPV_FORMAT_DOUBLE);
        const char *load[] = {"loadfile", media, NULL};
        mpv_command(h, load);
        wait_for(h, MPV_EVENT_FILE_LOADED);
        handles[i] = h;
    }
    int warmup = samples / 10;
    double *latency = calloc(samples, sizeof *latency);
    for (int k = -warmup; k < samples; k++) {
        mpv_handle *h = handles[(k + warmup) % players];
        // With a gap, each sample starts from a quiet machine (threads asleep); without, samples
        // run back to back (threads hot, but libmpv may still be busy after the last event).
        if (gap_us > 0) {
            struct timespec gap = {0, gap_us * 1000};
            nanosleep(&gap, NULL);
        }
        double value = 20.0 + (double)((k + warmup) % 50);  // differs from the previous value on this core
        double start = now_us();
        mpv_set_property(h, "volume", MPV_FORMAT_DOUBLE, &value);
        for (;;) {
            mpv_event *e = mpv_wait_event(h, 10);
            if (e->event_id == MPV_EVENT_NONE) { fprintf(stderr, "timeout\n"); return 1; }
            if (e->event_id != MPV_EVENT_PROPERTY_CHANGE) continue;
            mpv_event_property *p = e->data;
            if (p->format == MPV_FORMAT_DOUBLE && *(double *)p->data == value) break;
        }
        double end = now_us();
        if (k >= 0) latency[k] = end - start;
    }
    double sum = 0;
    for (int k = 0; k < samples; k++) sum += latency[k];
    qsort(latency, samples, sizeof *latency, compare);
    printf("{\"p50_us\": %.2f, \"p99_us\": %.2f, \"mean_us\": %.2f, \"samples\": %d}\n",
           latency[samples / 2], latency[(int)(samples * 0.99)], sum / samples, samples);
    for (int i = 0; i < players; i++) mpv_terminate_destroy(handles[i]);
    return 0;
}
