// Plain C clients of libmpv for `make bench-multiview` (Benchmarks/multiview.py): N live angles,
// each on its own mpv core, video nowhere (vo=null), audio nowhere (ao=null), on the sources' own
// timestamps (rebase-start-time=no) and reporting a new position when its frame is due
// (video-timing-offset=0), as PlayerKit's MultiView sets its members.
//
//   multiview plain SECONDS LOG JOIN_AT URL...      no correction: each core plays on as it joined
//   multiview autosync SECONDS LOG JOIN_AT URL...   RaceControl's approach: each core keeps a fixed
//                                                   lag (3 s) behind its cache's end, by speed
//                                                   (within 50 ms nothing is done) and by a seek
//                                                   when more than 1 s off
//
// JOIN_AT: when each angle is loaded, in seconds after the start, comma-separated. Every frame
// change (time-pos) is written to LOG as a JSON line {"player", "media", "t"} (t: monotonic
// seconds since the start), then {"dropped": {...}} (mpv's frame-drop-count plus
// decoder-frame-drop-count per angle). Prints {"cpu_s", "wall_s", "angles"} on standard output.
#include <math.h>
#include <mpv/client.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common.h"

static sem_t wake;
static void on_wakeup(void *data) { (void)data; sem_post(&wake); }

#define MAX_ANGLES 16
#define TARGET_LAG 3.0

typedef struct { int player; double media, t; } frame_t;

int main(int argc, char **argv) {
    if (argc < 6) { fprintf(stderr, "usage: multiview plain|autosync SECONDS LOG JOIN_AT URL...\n"); return 2; }
    int autosync = !strcmp(argv[1], "autosync");
    double seconds = atof(argv[2]);
    const char *log_path = argv[3];
    int count = argc - 5;
    if (count > MAX_ANGLES) return 2;
    double join_at[MAX_ANGLES] = {0};
    char *joins = strdup(argv[4]);
    char *save = NULL;
    int parsed = 0;
    for (char *item = strtok_r(joins, ",", &save); item && parsed < count; item = strtok_r(NULL, ",", &save)) join_at[parsed++] = atof(item);
    sem_init(&wake, 0, 0);
    mpv_handle *handles[MAX_ANGLES];
    int loaded[MAX_ANGLES] = {0}, playing[MAX_ANGLES] = {0};
    double position[MAX_ANGLES], cache_end[MAX_ANGLES], next_check[MAX_ANGLES];
    size_t capacity = 1 << 16, used = 0;
    frame_t *frames = malloc(capacity * sizeof *frames);
    for (int i = 0; i < count; i++) {
        mpv_handle *h = mpv_create();
        mpv_set_option_string(h, "vo", "null");
        mpv_set_option_string(h, "ao", "null");
        mpv_set_option_string(h, "rebase-start-time", "no");
        mpv_set_option_string(h, "video-timing-offset", "0");
        mpv_set_option_string(h, "terminal", "no");
        // MULTIVIEW_AF: an audio filter chain (Performance.md: what PlayerKit's scaletempo costs).
        if (getenv("MULTIVIEW_AF")) mpv_set_option_string(h, "af", getenv("MULTIVIEW_AF"));
        mpv_initialize(h);
        mpv_observe_property(h, 1, "time-pos", MPV_FORMAT_DOUBLE);
        mpv_observe_property(h, 2, "demuxer-cache-time", MPV_FORMAT_DOUBLE);
        mpv_set_wakeup_callback(h, on_wakeup, NULL);
        handles[i] = h;
        position[i] = NAN;
        cache_end[i] = NAN;
        next_check[i] = 0;
    }
    double start = now_s(), cpu0 = cpu_s();
    for (;;) {
        double t = now_s() - start;
        if (t >= seconds) break;
        for (int i = 0; i < count; i++) {
            if (!loaded[i] && t >= join_at[i]) {
                const char *command[] = {"loadfile", argv[5 + i], NULL};
                mpv_command_async(handles[i], 0, command);
                loaded[i] = 1;
            }
            // RaceControl's autosync: a fixed lag behind the cache's end.
            if (autosync && playing[i] && t >= next_check[i] && !isnan(position[i]) && !isnan(cache_end[i])) {
                next_check[i] = t + 0.25;
                double error = (cache_end[i] - position[i]) - TARGET_LAG;  // > 0: too far behind the edge
                if (fabs(error) > 1.0) {
                    char target[64];
                    snprintf(target, sizeof target, "%.6f", cache_end[i] - TARGET_LAG);
                    const char *command[] = {"seek", target, "absolute+exact", NULL};
                    mpv_command_async(handles[i], 0, command);
                } else {
                    double speed = fabs(error) > 0.05 ? 1 + fmax(-0.1, fmin(0.1, error * 0.5)) : 1.0;
                    mpv_set_property_async(handles[i], 0, "speed", MPV_FORMAT_DOUBLE, &speed);
                }
            }
        }
        struct timespec deadline;
        clock_gettime(CLOCK_REALTIME, &deadline);
        deadline.tv_nsec += 20 * 1000 * 1000;
        if (deadline.tv_nsec >= 1000000000) { deadline.tv_sec++; deadline.tv_nsec -= 1000000000; }
        sem_timedwait(&wake, &deadline);
        for (int i = 0; i < count; i++) {
            for (;;) {
                mpv_event *event = mpv_wait_event(handles[i], 0);
                if (event->event_id == MPV_EVENT_NONE) break;
                if (event->event_id == MPV_EVENT_PLAYBACK_RESTART) playing[i] = 1;
                if (event->event_id != MPV_EVENT_PROPERTY_CHANGE) continue;
                mpv_event_property *property = event->data;
                if (property->format != MPV_FORMAT_DOUBLE) continue;
                double value = *(double *)property->data;
                if (event->reply_userdata == 1) {
                    position[i] = value;
                    if (used == capacity) frames = realloc(frames, (capacity *= 2) * sizeof *frames);
                    frames[used++] = (frame_t){i, value, now_s() - start};
                } else {
                    cache_end[i] = value;
                }
            }
        }
    }
    double cpu = cpu_s() - cpu0, wall = now_s() - start;
    FILE *log = fopen(log_path, "w");
    if (!log) { perror(log_path); return 1; }
    for (size_t k = 0; k < used; k++)
        fprintf(log, "{\"player\":\"angle-%d\",\"media\":%.6f,\"t\":%.6f}\n", frames[k].player + 1, frames[k].media, frames[k].t);
    fprintf(log, "{\"dropped\": {");
    for (int i = 0; i < count; i++) {
        int64_t vo = 0, decoder = 0;
        mpv_get_property(handles[i], "frame-drop-count", MPV_FORMAT_INT64, &vo);
        mpv_get_property(handles[i], "decoder-frame-drop-count", MPV_FORMAT_INT64, &decoder);
        fprintf(log, "%s\"angle-%d\": %lld", i ? ", " : "", i + 1, (long long)(vo + decoder));
    }
    fprintf(log, "}}\n");
    fclose(log);
    printf("{\"cpu_s\": %.3f, \"wall_s\": %.3f, \"angles\": %d}\n", cpu, wall, count);
    for (int i = 0; i < count; i++) mpv_terminate_destroy(handles[i]);
    free(frames);
    free(joins);
    return 0;
}
