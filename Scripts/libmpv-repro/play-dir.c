// libmpv 0.35 asserts (loadfile.c:1785, mpv #10782) when play-dir changes on a core with media
// loaded (Documentation/Reliability.md). A plain C client of libmpv, no PlayerKit: one core per
// round loads shipped and broken clips six times, with seeks, speed and pause at random, and
// changes play-dir as the mode says. From the repository's root:
//
//   clang -fsanitize=address -g -O1 Scripts/libmpv-repro/play-dir.c -o /tmp/play-dir -lmpv
//   ASAN_OPTIONS=detect_leaks=0 /tmp/play-dir 400 1 7   # changes at random moments: assertion
//   ASAN_OPTIONS=detect_leaks=0 /tmp/play-dir 400 0 7   # never changed: clean
//   ASAN_OPTIONS=detect_leaks=0 /tmp/play-dir 400 2 9   # backward from the start, kept: clean
#include <mpv/client.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>

static const char *files[] = {"Media/clip-a.mp4", "Media/clip-b.mp4", "Tests/Fixtures/short-a.mp4", "Tests/Fixtures/truncated.mp4"};

static void drain(mpv_handle *handle, double timeout) {
    while (mpv_wait_event(handle, timeout)->event_id != MPV_EVENT_NONE) timeout = 0;
}

int main(int argc, char **argv) {
    setlocale(LC_NUMERIC, "C");
    int rounds = argc > 1 ? atoi(argv[1]) : 100;
    int mode = argc > 2 ? atoi(argv[2]) : 1;  // 0 never, 1 at random moments, 2 backward from the start
    srand(argc > 3 ? atoi(argv[3]) : 1);
    for (int round = 0; round < rounds; round++) {
        mpv_handle *handle = mpv_create();
        mpv_set_option_string(handle, "vo", "null");
        mpv_set_option_string(handle, "ao", "null");
        mpv_set_option_string(handle, "idle", "yes");
        if (mode == 2) mpv_set_option_string(handle, "play-dir", "backward");
        mpv_initialize(handle);
        for (int load = 0; load < 6; load++) {
            if (mode == 1 && rand() % 2) mpv_set_property_string(handle, "play-dir", rand() % 2 ? "backward" : "forward");
            const char *command[] = {"loadfile", files[rand() % 4], NULL};
            mpv_command_async(handle, 0, command);
            for (int step = 0; step < 8; step++) {
                drain(handle, 0.1);
                int operation = rand() % 5;
                char value[32];
                if (operation == 0) {
                    snprintf(value, sizeof value, "%d", rand() % 4);
                    const char *seek[] = {"seek", value, "absolute", NULL};
                    mpv_command_async(handle, 0, seek);
                } else if (operation == 1) {
                    snprintf(value, sizeof value, "%.2f", 0.25 + (rand() % 30) / 10.0);
                    mpv_set_property_string(handle, "speed", value);
                } else if (operation == 2) {
                    mpv_set_property_string(handle, "pause", rand() % 2 ? "yes" : "no");
                } else if (operation == 3 && mode == 1) {
                    mpv_set_property_string(handle, "pause", "yes");
                    mpv_set_property_string(handle, "play-dir", rand() % 2 ? "backward" : "forward");
                    mpv_set_property_string(handle, "pause", "no");
                }
            }
        }
        mpv_terminate_destroy(handle);
        if (round % 10 == 0) fprintf(stderr, "round %d\n", round);
    }
    fprintf(stderr, "done: %d rounds\n", rounds);
    return 0;
}
