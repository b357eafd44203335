// Plain C clients of libmpv for two comparisons; each mode prints one JSON object.
//   compare framestep MEMBERS STEPS CLIP
//       MEMBERS paused cores, each showing CLIP at 1.0 s (an exact seek). STEPS times: send
//       `frame-step` to every core, wait until every core showed its next frame; then STEPS
//       `frame-back-step`s the same way. Latency of one step of the whole group, in ms.
//   compare posters OUTDIR TIME CLIP...
//       One paused core makes a poster of every clip the client-API way: `loadfile CLIP replace
//       start=TIME`, wait for the playback restart, `screenshot-to-file OUTDIR/N.png video`
//       (N = 1, 2, ... in argument order).
// Build: cc -O2 -Wall -Wextra -o compare compare.c -lmpv -lpthread -lm
// Set COMPARE_TRACE=1 to see every event of `framestep` on standard error (ms since the step).
// Set COMPARE_GAP_MS=N to pause N ms between steps (not timed; default 0), as a person stepping
// would. It changes little: measured on mpv 0.35, forward steps take about one frame duration
// with or without a 100 ms gap (see below).
//
// How `framestep` waits (the fastest correct way found): one thread for all cores. Every core's
// wakeup callback posts one shared semaphore; the thread sleeps in sem_wait and, when woken,
// drains every core with mpv_wait_event(h, 0) until it returns MPV_EVENT_NONE. A post is made for
// every event, so an event that arrives after a core was drained always wakes the thread again;
// nothing is missed and there is no polling. Commands go out with mpv_command_async: it only
// queues the command, so a core busy decoding does not hold up the commands to the others
// (mpv_command would block until that core's thread took the command).
//
// What a step waits for, per core (what mpv 0.35 does, see COMPARE_TRACE):
//   frame-step       the observed "time-pos" changes (the core unpauses, shows one frame, pauses
//                    again; time-pos changes once per step).
//   frame-back-step  the observed "time-pos" changes AND a PLAYBACK_RESTART arrives: the command
//                    is an exact seek to the frame before; mpv ignores a frame-back-step sent
//                    while such a seek is still running, so the next one may go only after the
//                    restart. Without audio, restart and time-pos change arrive together (~6 ms
//                    for a 320x240 clip); with an audio track (even with ao=null) the time-pos
//                    change comes ~50 ms after the restart (mpv_get_property sees the new value
//                    sooner: the observation is only delivered when the paused core wakes).
// A frame-step right after the previous step's frame waits about one frame duration (33 ms at
// 30 fps): mpv plays the step in real time. Only the first step after a seek is immediate.
#include <errno.h>
#include <locale.h>
#include <math.h>
#include <mpv/client.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "common.h"

#define TIME_POS 1          // reply_userdata of the time-pos observation
#define STEP_TIMEOUT_S 20.0 // a step (or load) that takes longer than this is a failure

static sem_t wake;
static void on_wakeup(void *context) { (void)context; sem_post(&wake); }

static int compare_doubles(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

// A headless, silent, paused core with no user configuration.
static mpv_handle *create(void) {
    mpv_handle *h = mpv_create();
    if (!h) { fprintf(stderr, "mpv_create failed\n"); exit(1); }
    const char *options[][2] = {{"config", "no"}, {"terminal", "no"}, {"vo", "null"}, {"ao", "null"}, {"hwdec", "no"},
                                {"keep-open", "yes"}, {"pause", "yes"}, {"idle", "yes"}, {"input-default-bindings", "no"},
                                {"load-scripts", "no"}, {"osc", "no"}, {"ytdl", "no"}};
    for (size_t i = 0; i < sizeof options / sizeof options[0]; i++)
        if (mpv_set_option_string(h, options[i][0], options[i][1]) < 0)
            fprintf(stderr, "option %s=%s rejected\n", options[i][0], options[i][1]);
    if (mpv_initialize(h) < 0) { fprintf(stderr, "mpv_initialize failed\n"); exit(1); }
    return h;
}

// ---------------------------------------------------------------------------------------------
// framestep

typedef struct {
    mpv_handle *h;
    double pos;        // the last time-pos observed
    long pos_changes;  // time-pos change events so far
    long restarts;     // PLAYBACK_RESTART events so far
    long errors;       // failed async commands, END_FILE events
} core_t;

static int trace;
static double trace_t0;

// Reads every queued event of every core.
static void drain(core_t *cores, int members) {
    for (int i = 0; i < members; i++) {
        for (;;) {
            mpv_event *e = mpv_wait_event(cores[i].h, 0);
            if (e->event_id == MPV_EVENT_NONE) break;
            if (trace) {
                fprintf(stderr, "%9.3f ms core %d %s", (now_s() - trace_t0) * 1000, i, mpv_event_name(e->event_id));
                if (e->event_id == MPV_EVENT_PROPERTY_CHANGE) {
                    mpv_event_property *p = e->data;
                    if (p->format == MPV_FORMAT_DOUBLE) fprintf(stderr, " %s=%.6f", p->name, *(double *)p->data);
                    else if (p->format == MPV_FORMAT_FLAG) fprintf(stderr, " %s=%d", p->name, *(int *)p->data);
                    else fprintf(stderr, " %s (unavailable)", p->name);
                }
                if (e->error < 0) fprintf(stderr, " error: %s", mpv_error_string(e->error));
                fputc('\n', stderr);
            }
            switch (e->event_id) {
            case MPV_EVENT_PROPERTY_CHANGE: {
                mpv_event_property *p = e->data;
                if (e->reply_userdata == TIME_POS && p->format == MPV_FORMAT_DOUBLE) {
                    cores[i].pos = *(double *)p->data;
                    cores[i].pos_changes++;
                }
                break;
            }
            case MPV_EVENT_PLAYBACK_RESTART: cores[i].restarts++; break;
            case MPV_EVENT_COMMAND_REPLY:
                if (e->error < 0) {
                    fprintf(stderr, "core %d: command failed: %s\n", i, mpv_error_string(e->error));
                    cores[i].errors++;
                }
                break;
            case MPV_EVENT_END_FILE: {
                mpv_event_end_file *end = e->data;
                if (end->reason == MPV_END_FILE_REASON_ERROR)
                    fprintf(stderr, "core %d: file failed: %s\n", i, mpv_error_string(end->error));
                cores[i].errors++;
                break;
            }
            default: break;
            }
        }
    }
}

// Sleeps until some core has an event, at most until `deadline` (monotonic seconds). Returns 0
// when the deadline passed.
static int await_wakeup(double deadline) {
    double left = deadline - now_s();
    if (left <= 0) return 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);  // sem_timedwait counts in CLOCK_REALTIME
    long long ns = ts.tv_nsec + (long long)(left * 1e9);
    ts.tv_sec += ns / 1000000000LL;
    ts.tv_nsec = ns % 1000000000LL;
    while (sem_timedwait(&wake, &ts) < 0) {
        if (errno == ETIMEDOUT) return 0;
        if (errno != EINTR) { perror("sem_timedwait"); exit(1); }
    }
    return 1;
}

// Is core i done? `need_pos`: its time-pos must differ from base_pos; `need_restarts`: it must
// have at least that many restarts.
typedef struct { int need_pos; double base_pos; long need_restarts; } goal_t;

static int reached(const core_t *c, const goal_t *g) {
    if (c->errors) return 1;  // reported at the end; do not hang on a failed core
    if (g->need_pos && c->pos == g->base_pos) return 0;
    return c->restarts >= g->need_restarts;
}

// Waits until every core reached its goal; exits the program when that takes too long.
static void wait_goals(core_t *cores, const goal_t *goals, int members, const char *what) {
    double deadline = now_s() + STEP_TIMEOUT_S;
    for (;;) {
        drain(cores, members);
        int done = 1;
        for (int i = 0; i < members && done; i++) done = reached(&cores[i], &goals[i]);
        if (done) return;
        if (!await_wakeup(deadline)) {
            for (int i = 0; i < members; i++)
                if (!reached(&cores[i], &goals[i]))
                    fprintf(stderr, "core %d: no result for %s after %.0f s (time-pos %.6f)\n", i, what, STEP_TIMEOUT_S, cores[i].pos);
            exit(1);
        }
    }
}

static double get_double(mpv_handle *h, const char *name) {
    double value = NAN;
    if (mpv_get_property(h, name, MPV_FORMAT_DOUBLE, &value) < 0) return NAN;
    return value;
}

// Every core reads its time-pos now and waits until its observation says the same, so that no
// older time-pos event is still on its way when the steps start.
static void settle(core_t *cores, int members) {
    double deadline = now_s() + STEP_TIMEOUT_S;
    for (;;) {
        drain(cores, members);
        int done = 1;
        for (int i = 0; i < members; i++) done &= cores[i].pos == get_double(cores[i].h, "time-pos");
        if (done) return;
        if (!await_wakeup(deadline)) { fprintf(stderr, "time-pos observations never settled\n"); exit(1); }
    }
}

typedef struct { double p50, p90, mean; } summary_t;

static summary_t summarize(double *ms, int n) {
    summary_t s = {0, 0, 0};
    for (int i = 0; i < n; i++) s.mean += ms[i] / n;
    qsort(ms, n, sizeof *ms, compare_doubles);
    int p90 = (int)(n * 0.9);
    s.p50 = ms[n / 2];
    s.p90 = ms[p90 < n ? p90 : n - 1];
    return s;
}

// STEPS steps of `command` ("frame-step" or "frame-back-step") by every core; each step's ms.
static void run_steps(core_t *cores, int members, int steps, const char *command, int wait_restart, double gap_ms, double *ms) {
    goal_t *goals = calloc(members, sizeof *goals);
    const char *args[] = {command, NULL};
    for (int s = 0; s < steps; s++) {
        if (gap_ms > 0) {
            struct timespec gap = {(time_t)(gap_ms / 1000), (long)(fmod(gap_ms, 1000) * 1e6)};
            while (nanosleep(&gap, &gap) < 0 && errno == EINTR) {}
        }
        for (int i = 0; i < members; i++) {
            goals[i].need_pos = 1;
            goals[i].base_pos = cores[i].pos;
            goals[i].need_restarts = cores[i].restarts + (wait_restart ? 1 : 0);
        }
        if (trace) fprintf(stderr, "--- %s %d\n", command, s + 1);
        double t0 = now_s();
        trace_t0 = t0;
        for (int i = 0; i < members; i++)
            if (mpv_command_async(cores[i].h, 0, args) < 0) { fprintf(stderr, "core %d: %s not sent\n", i, command); exit(1); }
        wait_goals(cores, goals, members, command);
        ms[s] = (now_s() - t0) * 1000;
    }
    free(goals);
}

static int framestep(int members, int steps, const char *clip) {
    if (members < 1 || steps < 1) { fprintf(stderr, "MEMBERS and STEPS must be positive\n"); return 2; }
    trace = getenv("COMPARE_TRACE") && *getenv("COMPARE_TRACE") && strcmp(getenv("COMPARE_TRACE"), "0");
    double gap_ms = getenv("COMPARE_GAP_MS") ? atof(getenv("COMPARE_GAP_MS")) : 0;
    core_t *cores = calloc(members, sizeof *cores);
    goal_t *goals = calloc(members, sizeof *goals);
    trace_t0 = now_s();
    for (int i = 0; i < members; i++) {
        cores[i].h = create();
        cores[i].pos = NAN;
        mpv_set_wakeup_callback(cores[i].h, on_wakeup, NULL);
        mpv_observe_property(cores[i].h, TIME_POS, "time-pos", MPV_FORMAT_DOUBLE);
        const char *load[] = {"loadfile", clip, NULL};
        if (mpv_command(cores[i].h, load) < 0) { fprintf(stderr, "loadfile failed\n"); return 1; }
    }
    for (int i = 0; i < members; i++) goals[i] = (goal_t){0, 0, 1};  // first frame shown
    wait_goals(cores, goals, members, "load");
    for (int i = 0; i < members; i++) {
        const char *seek[] = {"seek", "1", "absolute+exact", NULL};
        if (mpv_command(cores[i].h, seek) < 0) { fprintf(stderr, "seek failed\n"); return 1; }
        goals[i] = (goal_t){0, 0, cores[i].restarts + 1};
    }
    wait_goals(cores, goals, members, "seek to 1.0");
    settle(cores, members);
    for (int i = 0; i < members; i++)
        if (cores[i].errors) { fprintf(stderr, "core %d could not load %s\n", i, clip); return 1; }
    double fps = get_double(cores[0].h, "container-fps");

    double *forward = calloc(steps, sizeof *forward), *back = calloc(steps, sizeof *back);
    run_steps(cores, members, steps, "frame-step", 0, gap_ms, forward);
    settle(cores, members);
    int positions_ok = fps > 0;
    for (int i = 0; i < members; i++) {
        double expected = 1.0 + steps / fps, pos = get_double(cores[i].h, "time-pos");
        if (!(fabs(pos - expected) < 0.5 / fps)) {
            fprintf(stderr, "core %d: at %.6f after %d steps, expected %.6f\n", i, pos, steps, expected);
            positions_ok = 0;
        }
    }
    run_steps(cores, members, steps, "frame-back-step", 1, gap_ms, back);
    settle(cores, members);
    int back_positions_ok = fps > 0;
    for (int i = 0; i < members; i++) {
        double pos = get_double(cores[i].h, "time-pos");
        if (!(fabs(pos - 1.0) < 0.5 / fps)) {
            fprintf(stderr, "core %d: at %.6f after %d back steps, expected 1.0\n", i, pos, steps);
            back_positions_ok = 0;
        }
    }
    long errors = 0;
    for (int i = 0; i < members; i++) errors += cores[i].errors;
    if (errors) positions_ok = back_positions_ok = 0;

    summary_t f = summarize(forward, steps), b = summarize(back, steps);
    printf("{\"mode\": \"framestep\", \"members\": %d, \"steps\": %d, \"forward_p50_ms\": %.3f, \"forward_p90_ms\": %.3f, "
           "\"forward_mean_ms\": %.3f, \"back_p50_ms\": %.3f, \"back_p90_ms\": %.3f, \"back_mean_ms\": %.3f, "
           "\"positions_ok\": %s, \"back_positions_ok\": %s, \"gap_ms\": %g}\n",
           members, steps, f.p50, f.p90, f.mean, b.p50, b.p90, b.mean, positions_ok ? "true" : "false",
           back_positions_ok ? "true" : "false", gap_ms);
    fflush(stdout);
    for (int i = 0; i < members; i++) mpv_terminate_destroy(cores[i].h);
    free(cores); free(goals); free(forward); free(back);
    return 0;
}

// ---------------------------------------------------------------------------------------------
// posters

// Waits for the new file's first frame after a `loadfile ... replace`. The previous file's
// END_FILE (reason stop) comes before the new file's START_FILE, so only an END_FILE after
// START_FILE means the new file failed. One handle: a plain blocking mpv_wait_event loop.
static int await_poster_frame(mpv_handle *h) {
    int started = 0;
    double deadline = now_s() + STEP_TIMEOUT_S;
    while (now_s() < deadline) {
        mpv_event *e = mpv_wait_event(h, 1);
        switch (e->event_id) {
        case MPV_EVENT_START_FILE: started = 1; break;
        case MPV_EVENT_PLAYBACK_RESTART: if (started) return 1; break;
        case MPV_EVENT_END_FILE:
            if (started) {
                mpv_event_end_file *end = e->data;
                fprintf(stderr, "file ended before a frame: %s\n", mpv_error_string(end->error));
                return 0;
            }
            break;
        default: break;
        }
    }
    fprintf(stderr, "no frame after %.0f s\n", STEP_TIMEOUT_S);
    return 0;
}

static int posters(const char *outdir, const char *time, int clips, char **paths) {
    double created0 = now_s();
    mpv_handle *h = create();
    double create_ms = (now_s() - created0) * 1000;
    char start[64], out[4096];
    snprintf(start, sizeof start, "start=%s", time);
    int failures = 0;
    double t0 = now_s();
    for (int k = 0; k < clips; k++) {
        // mpv 0.35: loadfile <url> [<flags> [<options>]] (0.38 put an index before the options)
        const char *load[] = {"loadfile", paths[k], "replace", start, NULL};
        if (mpv_command(h, load) < 0 || !await_poster_frame(h)) {
            fprintf(stderr, "%s: no frame\n", paths[k]);
            failures++;
            continue;
        }
        snprintf(out, sizeof out, "%s/%d.png", outdir, k + 1);
        const char *shot[] = {"screenshot-to-file", out, "video", NULL};
        struct stat st;
        int error = mpv_command(h, shot);  // returns when the file is written
        if (error < 0 || stat(out, &st) < 0 || st.st_size == 0) {
            fprintf(stderr, "%s: screenshot failed: %s\n", paths[k], error < 0 ? mpv_error_string(error) : "no file");
            failures++;
        }
    }
    double seconds = now_s() - t0;
    mpv_terminate_destroy(h);
    printf("{\"mode\": \"posters\", \"clips\": %d, \"seconds\": %.3f, \"posters_per_second\": %.2f, \"failures\": %d, "
           "\"core_create_ms\": %.2f}\n",
           clips, seconds, (clips - failures) / seconds, failures, create_ms);
    return failures ? 1 : 0;
}

// mkdir -p
static int make_dirs(const char *path) {
    char buffer[4096];
    snprintf(buffer, sizeof buffer, "%s", path);
    for (char *p = buffer + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(buffer, 0777) < 0 && errno != EEXIST) return -1;
            *p = '/';
        }
    return mkdir(buffer, 0777) < 0 && errno != EEXIST ? -1 : 0;
}

int main(int argc, char **argv) {
    setlocale(LC_NUMERIC, "C");
    sem_init(&wake, 0, 0);
    if (argc == 5 && !strcmp(argv[1], "framestep")) return framestep(atoi(argv[2]), atoi(argv[3]), argv[4]);
    if (argc >= 5 && !strcmp(argv[1], "posters")) {
        if (make_dirs(argv[2]) < 0) { perror(argv[2]); return 1; }
        return posters(argv[2], argv[3], argc - 4, argv + 4);
    }
    fprintf(stderr, "usage: compare framestep MEMBERS STEPS CLIP\n       compare posters OUTDIR TIME CLIP...\n");
    return 2;
}
