// The floor for the benchmark workloads: a plain C client of libmpv doing the same work as
// playerkit-bench and Benchmarks/python/workloads.py. Each mode prints one JSON object.
//   workloads decode PLAYERS MEDIA       N players play MEDIA to its end at once
//   workloads ttff RUNS MEDIA            create + load -> first frame (playback restart)
//   workloads events PLAYERS SECONDS MEDIA   time-pos changes delivered per second
//   workloads memory PLAYERS MEDIA       resident memory added per playing player
//   workloads cycles COUNT               create + destroy cycles: time and memory growth
//   workloads ready RUNS                 creating a core that accepts a load, one every 0.3 s on an idle machine
//   workloads churn COUNT MEDIA          create + load -> first frame + destroy cycles: memory growth
//   workloads switch RUNS MEDIA          cold start (load -> first frame) vs a preloaded one (unpause -> running)
//   workloads release PLAYERS MEDIA      resident memory per player while playing and after `stop`
//   workloads realtime PLAYERS SECONDS MEDIA   N looping players: frames dropped in SECONDS
//   workloads seams MODE SECONDS CLIP...      MODE edl|playlist: every frame's (wall, position) while looping the clips
//   workloads sync-naive SECONDS CLIP_A CLIP_B   two players started one after the other: drift between them
// Build: cc -O2 -o workloads workloads.c -lmpv -lpthread
#include <locale.h>
#include <math.h>
#include <malloc.h>
#include <mpv/client.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "common.h"


static double rss_mb(void) {
    FILE *status = fopen("/proc/self/status", "r");
    char line[256];
    double kb = 0;
    while (status && fgets(line, sizeof line, status))
        if (strncmp(line, "VmRSS:", 6) == 0) kb = atof(line + 6);
    if (status) fclose(status);
    return kb / 1024;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static sem_t wake;
static void on_wakeup(void *context) { (void)context; sem_post(&wake); }

// The options every implementation uses: headless, silent, no user configuration.
static mpv_handle *create(int loop) {
    setlocale(LC_NUMERIC, "C");
    mpv_handle *h = mpv_create();
    const char *options[][2] = {{"config", "no"}, {"terminal", "no"}, {"vo", "null"}, {"ao", "null"}, {"idle", "yes"},
                                {"ytdl", "no"}, {"load-scripts", "no"}, {"hwdec", "no"}};
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++) mpv_set_option_string(h, options[i][0], options[i][1]);
    if (loop) mpv_set_option_string(h, "loop-file", "inf");
    if (mpv_initialize(h) < 0) { fprintf(stderr, "initialize failed\n"); exit(1); }
    mpv_set_wakeup_callback(h, on_wakeup, NULL);
    return h;
}

static void load(mpv_handle *h, const char *media) {
    const char *command[] = {"loadfile", media, NULL};
    mpv_command(h, command);
}

// Waits until every handle produced event `id` once (or `count` events in total when each is 0).
static void wait_all(mpv_handle **handles, int players, int id) {
    int *seen = calloc(players, sizeof *seen), done = 0;
    while (done < players) {
        sem_wait(&wake);
        for (int i = 0; i < players; i++) {
            for (;;) {
                mpv_event *e = mpv_wait_event(handles[i], 0);
                if (e->event_id == MPV_EVENT_NONE) break;
                if (e->event_id == id && !seen[i]) { seen[i] = 1; done++; }
            }
        }
    }
    free(seen);
}

// Waits until `h` produces event `id`; returns the time it arrived. Property changes of
// `property` (a flag) to `value` also count when id is MPV_EVENT_PROPERTY_CHANGE. One handle:
// a plain blocking mpv_wait_event loop, the simplest client there is.
static double wait_for(mpv_handle *h, int id, const char *property, int value) {
    for (;;) {
        mpv_event *e = mpv_wait_event(h, 1);
        if (e->event_id != id) continue;
        if (id != MPV_EVENT_PROPERTY_CHANGE) return now_s();
        mpv_event_property *p = e->data;
        if (!strcmp(p->name, property) && p->format == MPV_FORMAT_FLAG && *(int *)p->data == value) return now_s();
    }
}

static void set_flag(mpv_handle *h, const char *name, int value) {
    mpv_set_property(h, name, MPV_FORMAT_FLAG, &value);
}

// `players` looping cores, each playing `media`, returned once all showed a first frame.
static mpv_handle **start_looping(int players, const char *media) {
    mpv_handle **handles = calloc(players, sizeof *handles);
    for (int i = 0; i < players; i++) {
        handles[i] = create(1);
        load(handles[i], media);
    }
    wait_all(handles, players, MPV_EVENT_PLAYBACK_RESTART);
    return handles;
}

int main(int argc, char **argv) {
    sem_init(&wake, 0, 0);
    if (argc < 3) { fprintf(stderr, "usage: see the file header\n"); return 2; }
    const char *mode = argv[1];
    if (!strcmp(mode, "decode")) {
        int players = atoi(argv[2]);
        mpv_handle **handles = calloc(players, sizeof *handles);
        for (int i = 0; i < players; i++) handles[i] = create(0);
        double cpu0 = cpu_s(), wall0 = now_s();
        for (int i = 0; i < players; i++) load(handles[i], argv[3]);
        wait_all(handles, players, MPV_EVENT_END_FILE);
        printf("{\"cpu_s\": %.3f, \"wall_s\": %.3f}\n", cpu_s() - cpu0, now_s() - wall0);
        for (int i = 0; i < players; i++) mpv_terminate_destroy(handles[i]);
    } else if (!strcmp(mode, "ttff")) {
        int runs = atoi(argv[2]);
        double *ms = calloc(runs, sizeof *ms);
        for (int r = 0; r < runs; r++) {
            double start = now_s();
            mpv_handle *h = create(0);
            load(h, argv[3]);
            wait_all(&h, 1, MPV_EVENT_PLAYBACK_RESTART);
            ms[r] = (now_s() - start) * 1000;
            mpv_terminate_destroy(h);
        }
        qsort(ms, runs, sizeof *ms, compare);
        printf("{\"p50_ms\": %.2f, \"p99_ms\": %.2f}\n", ms[runs / 2], ms[(int)(runs * 0.99)]);
    } else if (!strcmp(mode, "events")) {
        int players = atoi(argv[2]);
        double seconds = atof(argv[3]);
        mpv_handle **handles = calloc(players, sizeof *handles);
        for (int i = 0; i < players; i++) {
            handles[i] = create(1);
            mpv_observe_property(handles[i], 1, "time-pos", MPV_FORMAT_DOUBLE);
            load(handles[i], argv[4]);
        }
        wait_all(handles, players, MPV_EVENT_PLAYBACK_RESTART);
        long count = 0;
        double cpu0 = cpu_s(), end = now_s() + seconds;
        while (now_s() < end) {
            sem_wait(&wake);
            for (int i = 0; i < players; i++)
                for (;;) {
                    mpv_event *e = mpv_wait_event(handles[i], 0);
                    if (e->event_id == MPV_EVENT_NONE) break;
                    if (e->event_id == MPV_EVENT_PROPERTY_CHANGE) count++;
                }
        }
        printf("{\"events_per_second\": %.1f, \"cpu_s\": %.3f}\n", count / seconds, cpu_s() - cpu0);
        for (int i = 0; i < players; i++) mpv_terminate_destroy(handles[i]);
    } else if (!strcmp(mode, "memory")) {
        int players = atoi(argv[2]);
        double before = rss_mb();
        mpv_handle **handles = start_looping(players, argv[3]);
        sleep(1);  // let every player reach its steady buffers
        printf("{\"rss_added_per_player_mb\": %.2f}\n", (rss_mb() - before) / players);
        for (int i = 0; i < players; i++) mpv_terminate_destroy(handles[i]);
    } else if (!strcmp(mode, "cycles")) {
        int count = atoi(argv[2]);
        double warm = 0, start = now_s();
        for (int i = 0; i < count; i++) {
            mpv_terminate_destroy(create(0));
            if (i == 9) warm = rss_mb();
        }
        printf("{\"cycle_ms\": %.3f, \"rss_growth_mb\": %.2f}\n", (now_s() - start) * 1000 / count, rss_mb() - warm);
    } else if (!strcmp(mode, "ready")) {
        // The time an app waits for a player that accepts a load: create and initialize a core
        // (what mpv asks of every client). One run every 0.3 s, each core destroyed outside it.
        int runs = atoi(argv[2]);
        double *ms = calloc(runs, sizeof *ms);
        for (int r = 0; r < runs; r++) {
            usleep(300000);
            double start = now_s();
            mpv_handle *h = create(0);
            ms[r] = (now_s() - start) * 1000;
            mpv_terminate_destroy(h);
        }
        qsort(ms, runs, sizeof *ms, compare);
        printf("{\"p50_ms\": %.3f, \"p99_ms\": %.3f}\n", ms[runs / 2], ms[(int)(runs * 0.99)]);
    } else if (!strcmp(mode, "churn")) {
        // Players that really decode: each cycle creates a core, plays MEDIA to its first frame
        // and destroys it. glibc's arenas (one per thread that allocates at once, up to 8 per
        // core) keep what the decoder threads freed: the growth after the 10th cycle.
        // Also the resident memory before the first cycle and after the 50th (when there are
        // that many): growth from the start, and creep once the arenas have warmed up.
        int count = atoi(argv[2]);
        malloc_trim(0);
        double initial = rss_mb(), warm = 0, after50 = -1, start = now_s();
        for (int i = 0; i < count; i++) {
            mpv_handle *h = create(0);
            load(h, argv[3]);
            wait_for(h, MPV_EVENT_PLAYBACK_RESTART, NULL, 0);
            mpv_terminate_destroy(h);
            if (i == 9) { malloc_trim(0); warm = rss_mb(); }
            if (i == 49) { malloc_trim(0); after50 = rss_mb(); }
        }
        malloc_trim(0);
        printf("{\"cycle_ms\": %.3f, \"rss_growth_mb\": %.2f, \"rss_mb\": %.2f, \"rss_start_mb\": %.2f, \"rss_50_mb\": %.2f}\n",
               (now_s() - start) * 1000 / count, rss_mb() - warm, rss_mb(), initial, after50);
    } else if (!strcmp(mode, "switch")) {
        // Each run on fresh idle cores (made outside the timing), as the standby player of an
        // A/B pair would be: cold = load and play -> first frame; preloaded = loaded paused on
        // its first frame, then unpause -> the core runs.
        int runs = atoi(argv[2]);
        double *cold = calloc(runs, sizeof *cold), *warm = calloc(runs, sizeof *warm);
        for (int r = 0; r < runs; r++) {
            mpv_handle *a = create(0), *b = create(0);
            mpv_set_wakeup_callback(a, NULL, NULL);  // single-handle waits block in mpv_wait_event
            mpv_set_wakeup_callback(b, NULL, NULL);
            double start = now_s();
            load(a, argv[3]);
            cold[r] = (wait_for(a, MPV_EVENT_PLAYBACK_RESTART, NULL, 0) - start) * 1000;
            mpv_observe_property(b, 1, "core-idle", MPV_FORMAT_FLAG);
            set_flag(b, "pause", 1);
            load(b, argv[3]);
            wait_for(b, MPV_EVENT_PLAYBACK_RESTART, NULL, 0);
            start = now_s();
            set_flag(b, "pause", 0);
            warm[r] = (wait_for(b, MPV_EVENT_PROPERTY_CHANGE, "core-idle", 0) - start) * 1000;
            mpv_terminate_destroy(a);
            mpv_terminate_destroy(b);
        }
        qsort(cold, runs, sizeof *cold, compare);
        qsort(warm, runs, sizeof *warm, compare);
        printf("{\"cold_p50_ms\": %.3f, \"preloaded_p50_ms\": %.3f}\n", cold[runs / 2], warm[runs / 2]);
    } else if (!strcmp(mode, "release")) {
        int players = atoi(argv[2]);
        double before = rss_mb();
        mpv_handle **handles = start_looping(players, argv[3]);
        sleep(1);
        double active = rss_mb();
        for (int i = 0; i < players; i++) {
            const char *stop[] = {"stop", NULL};
            mpv_command(handles[i], stop);
        }
        wait_all(handles, players, MPV_EVENT_IDLE);
        sleep(1);
        double released = rss_mb();
        malloc_trim(0);  // hand the freed heap back to the system, as DecoderBudget.release does
        printf("{\"active_mb_per_player\": %.2f, \"released_mb_per_player\": %.2f, \"trimmed_mb_per_player\": %.2f}\n",
               (active - before) / players, (released - before) / players, (rss_mb() - before) / players);
        for (int i = 0; i < players; i++) mpv_terminate_destroy(handles[i]);
    } else if (!strcmp(mode, "realtime")) {
        int players = atoi(argv[2]);
        double seconds = atof(argv[3]);
        mpv_handle **handles = start_looping(players, argv[4]);
        int64_t *base = calloc(players, sizeof *base);
        for (int i = 0; i < players; i++) {
            int64_t vo = 0, dec = 0;
            mpv_get_property(handles[i], "frame-drop-count", MPV_FORMAT_INT64, &vo);
            mpv_get_property(handles[i], "decoder-frame-drop-count", MPV_FORMAT_INT64, &dec);
            base[i] = vo + dec;
        }
        usleep((useconds_t)(seconds * 1e6));
        long dropped = 0;
        for (int i = 0; i < players; i++) {
            int64_t vo = 0, dec = 0;
            mpv_get_property(handles[i], "frame-drop-count", MPV_FORMAT_INT64, &vo);
            mpv_get_property(handles[i], "decoder-frame-drop-count", MPV_FORMAT_INT64, &dec);
            dropped += vo + dec - base[i];
        }
        printf("{\"dropped\": %ld, \"frames\": %.0f}\n", dropped, players * seconds * 30);
        for (int i = 0; i < players; i++) mpv_terminate_destroy(handles[i]);
    } else if (!strcmp(mode, "seams")) {
        const char *how = argv[2];
        double seconds = atof(argv[3]);
        mpv_handle *h = create(0);
        mpv_set_option_string(h, "gapless-audio", "yes");
        mpv_set_option_string(h, "prefetch-playlist", "yes");
        mpv_observe_property(h, 1, "time-pos", MPV_FORMAT_DOUBLE);
        if (!strcmp(how, "edl")) {
            // The clips joined into one timeline, repeated 100 times, as PlayerKit's ClipLoop does.
            static char edl[1 << 20] = "edl://";
            for (int repeat = 0; repeat < 100; repeat++)
                for (int i = 4; i < argc; i++) {
                    char entry[1024];
                    snprintf(entry, sizeof entry, "%s%%%zu%%%s", strlen(edl) > 6 ? ";" : "", strlen(argv[i]), argv[i]);
                    strncat(edl, entry, sizeof edl - strlen(edl) - 1);
                }
            mpv_set_property_string(h, "loop-file", "inf");
            load(h, edl);
        } else {
            mpv_set_property_string(h, "loop-playlist", "inf");
            for (int i = 4; i < argc; i++) {
                const char *append[] = {"loadfile", argv[i], "append-play", NULL};
                mpv_command(h, append);
            }
        }
        printf("{\"samples\": [");
        int first = 1;
        double end = now_s() + seconds;
        while (now_s() < end) {
            sem_wait(&wake);
            for (;;) {
                mpv_event *e = mpv_wait_event(h, 0);
                if (e->event_id == MPV_EVENT_NONE) break;
                if (e->event_id != MPV_EVENT_PROPERTY_CHANGE) continue;
                mpv_event_property *p = e->data;
                if (p->format != MPV_FORMAT_DOUBLE) continue;
                printf("%s[%.6f, %.6f]", first ? "" : ", ", now_s(), *(double *)p->data);
                first = 0;
            }
        }
        printf("]}\n");
        mpv_terminate_destroy(h);
    } else if (!strcmp(mode, "sync-naive")) {
        // The naive way: load and play A, then B, each clip looping in one timeline; the drift
        // between them at every frame of either is |(wall - position) of A - (wall - position) of B|.
        double seconds = atof(argv[2]);
        mpv_handle *h[2];
        static char edl[2][1 << 16];
        for (int k = 0; k < 2; k++) {
            h[k] = create(1);
            // A new position when its frame is due, not when it is queued (up to 50 ms earlier,
            // by half a frame or not at random): the drift is measured on frame changes.
            mpv_set_property_string(h[k], "video-timing-offset", "0");
            mpv_observe_property(h[k], 1, "time-pos", MPV_FORMAT_DOUBLE);
            strcpy(edl[k], "edl://");
            for (int repeat = 0; repeat < 100; repeat++) {
                char entry[1024];
                snprintf(entry, sizeof entry, "%s%%%zu%%%s", repeat ? ";" : "", strlen(argv[3 + k]), argv[3 + k]);
                strncat(edl[k], entry, sizeof edl[k] - strlen(edl[k]) - 1);
            }
        }
        load(h[0], edl[0]);
        load(h[1], edl[1]);
        double offset[2] = {0, 0};
        int seen[2] = {0, 0};
        size_t capacity = 1 << 16, count = 0;
        double *spreads = malloc(capacity * sizeof *spreads);
        double end = now_s() + seconds;
        while (now_s() < end) {
            sem_wait(&wake);
            for (int k = 0; k < 2; k++)
                for (;;) {
                    mpv_event *e = mpv_wait_event(h[k], 0);
                    if (e->event_id == MPV_EVENT_NONE) break;
                    if (e->event_id != MPV_EVENT_PROPERTY_CHANGE) continue;
                    mpv_event_property *p = e->data;
                    if (p->format != MPV_FORMAT_DOUBLE) continue;
                    offset[k] = now_s() - *(double *)p->data;
                    seen[k] = 1;
                    if (seen[0] && seen[1] && count < capacity) spreads[count++] = fabs(offset[0] - offset[1]);
                }
        }
        qsort(spreads, count, sizeof *spreads, compare);
        printf("{\"p50_ms\": %.3f, \"p99_ms\": %.3f, \"max_ms\": %.3f, \"frames\": %zu}\n",
               spreads[count / 2] * 1000, spreads[(size_t)(count * 0.99)] * 1000, spreads[count - 1] * 1000, count);
        for (int k = 0; k < 2; k++) mpv_terminate_destroy(h[k]);
    } else {
        fprintf(stderr, "unknown mode %s\n", mode);
        return 2;
    }
    return 0;
}
