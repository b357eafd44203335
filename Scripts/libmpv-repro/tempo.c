// libmpv 0.35's scaletempo2 audio filter writes past its buffer (Documentation/Reliability.md).
// A plain C client of libmpv, no PlayerKit: four cores play the last 1.5 s of the shipped clips
// at speeds from 0.25 to 4, with seeks and speed changes, many times. Build and run with
// AddressSanitizer, from the repository's root:
//
//   clang -fsanitize=address -g -O1 Scripts/libmpv-repro/tempo.c -o /tmp/tempo -lmpv
//   ASAN_OPTIONS=detect_leaks=0 /tmp/tempo 1000 3                       # heap-buffer-overflow
//   ASAN_OPTIONS=detect_leaks=0 /tmp/tempo 1000 3 audio-pitch-correction=no   # clean
#include <mpv/client.h>
#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *files[] = {"Media/clip-a.mp4", "Media/clip-b.mp4"};

int main(int argc, char **argv) {
    setlocale(LC_NUMERIC, "C");
    int rounds = argc > 1 ? atoi(argv[1]) : 1000;
    srand(argc > 2 ? atoi(argv[2]) : 1);
    enum { cores = 4 };
    mpv_handle *handles[cores];
    for (int i = 0; i < cores; i++) {
        handles[i] = mpv_create();
        mpv_set_option_string(handles[i], "vo", "null");
        mpv_set_option_string(handles[i], "ao", "null");
        mpv_set_option_string(handles[i], "idle", "yes");
        if (argc > 3) {  // one extra option, name=value
            char option[128];
            snprintf(option, sizeof option, "%s", argv[3]);
            char *equals = strchr(option, '=');
            if (equals) { *equals = 0; mpv_set_option_string(handles[i], option, equals + 1); }
        }
        mpv_initialize(handles[i]);
    }
    int ends = 0;
    for (int round = 0; round < rounds; round++) {
        for (int i = 0; i < cores; i++) {
            char speed[32], start[64];
            snprintf(speed, sizeof speed, "%.2f", 0.25 + (rand() % 376) / 100.0);
            mpv_set_property_string(handles[i], "speed", speed);
            snprintf(start, sizeof start, "start=%.2f", 2.5 + (rand() % 150) / 100.0);
            const char *load[] = {"loadfile", files[rand() % 2], "replace", start, NULL};
            mpv_command_async(handles[i], 0, load);
        }
        for (int tick = 0; tick < 40; tick++) {
            for (int i = 0; i < cores; i++) {
                mpv_event *event;
                while ((event = mpv_wait_event(handles[i], 0))->event_id != MPV_EVENT_NONE)
                    if (event->event_id == MPV_EVENT_END_FILE) ends++;
                int operation = rand() % 10;
                char value[32];
                if (operation == 0) {
                    snprintf(value, sizeof value, "%.2f", 0.25 + (rand() % 376) / 100.0);
                    mpv_set_property_string(handles[i], "speed", value);
                } else if (operation == 1) {
                    snprintf(value, sizeof value, "%.2f", 3.0 + (rand() % 100) / 100.0);
                    const char *seek[] = {"seek", value, "absolute", NULL};
                    mpv_command_async(handles[i], 0, seek);
                }
            }
            mpv_wait_event(handles[0], 0.05);
        }
        if (round % 20 == 0) fprintf(stderr, "round %d, %d ends\n", round, ends);
    }
    for (int i = 0; i < cores; i++) mpv_terminate_destroy(handles[i]);
    fprintf(stderr, "done: %d rounds, %d ends\n", rounds, ends);
    return 0;
}
