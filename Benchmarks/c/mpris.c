// A desktop client of an MPRIS player, in plain C on sd-bus, for Benchmarks/mpris.py: what a media
// key or a panel costs, measured from the client's side.
//
//   mpris NAME SAMPLES
//
// toggle: PlayPause sent, until the player's PropertiesChanged says the new PlaybackStatus
//         (the request reached the player, the player changed, and the desktop heard it).
// get:    a Properties.Get of Position answered (what a panel's progress bar asks).
// Prints one JSON object with the percentiles in microseconds.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include "common.h"

static char status[32];

static int on_changed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
    (void)userdata; (void)error;
    const char *interface = NULL;
    if (sd_bus_message_read(m, "s", &interface) < 0) return 0;
    if (sd_bus_message_enter_container(m, 'a', "{sv}") < 0) return 0;
    while (sd_bus_message_enter_container(m, 'e', "sv") > 0) {
        const char *name = NULL;
        if (sd_bus_message_read(m, "s", &name) < 0) return 0;
        if (strcmp(name, "PlaybackStatus") == 0) {
            const char *value = NULL;
            if (sd_bus_message_read(m, "v", "s", &value) >= 0 && value) snprintf(status, sizeof status, "%s", value);
        } else {
            sd_bus_message_skip(m, "v");
        }
        sd_bus_message_exit_container(m);
    }
    return 0;
}

static int compare(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static void percentiles(const char *name, double *values, int count, int last) {
    qsort(values, count, sizeof *values, compare);
    printf("\"%s_p50_us\": %.1f, \"%s_p99_us\": %.1f%s", name, values[count / 2], name, values[(int)(count * 0.99)], last ? "" : ", ");
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: mpris NAME SAMPLES\n"); return 2; }
    const char *name = argv[1];
    int samples = atoi(argv[2]);
    sd_bus *bus = NULL;
    if (sd_bus_open_user(&bus) < 0) { fprintf(stderr, "mpris: no session bus\n"); return 1; }
    sd_bus_error error = SD_BUS_ERROR_NULL;
    sd_bus_message *reply = NULL;
    const char *owner = NULL;
    if (sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus", "GetNameOwner", &error, &reply,
                           "s", name) < 0 || sd_bus_message_read(reply, "s", &owner) < 0) {
        fprintf(stderr, "mpris: %s is not on the bus: %s\n", name, error.message ? error.message : "?");
        return 1;
    }
    char match[512];
    snprintf(match, sizeof match, "type='signal',sender='%s',path='/org/mpris/MediaPlayer2',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'", owner);
    sd_bus_message_unref(reply);
    if (sd_bus_add_match(bus, NULL, match, on_changed, NULL) < 0) { fprintf(stderr, "mpris: no match\n"); return 1; }
    char *current = NULL;
    if (sd_bus_get_property_string(bus, name, "/org/mpris/MediaPlayer2", "org.mpris.MediaPlayer2.Player", "PlaybackStatus", &error, &current) < 0) {
        fprintf(stderr, "mpris: no PlaybackStatus: %s\n", error.message ? error.message : "?");
        return 1;
    }
    snprintf(status, sizeof status, "%s", current);
    free(current);

    double *toggle = calloc(samples, sizeof *toggle), *get = calloc(samples, sizeof *get);
    for (int i = 0; i < samples; i++) {
        char before[32];
        snprintf(before, sizeof before, "%s", status);
        double start = now_s();
        if (sd_bus_call_method(bus, name, "/org/mpris/MediaPlayer2", "org.mpris.MediaPlayer2.Player", "PlayPause", &error, NULL, "") < 0) {
            fprintf(stderr, "mpris: PlayPause failed: %s\n", error.message ? error.message : "?");
            return 1;
        }
        double deadline = start + 5;
        while (strcmp(status, before) == 0) {
            int r = sd_bus_process(bus, NULL);
            if (r < 0) { fprintf(stderr, "mpris: the bus went away\n"); return 1; }
            if (r > 0) continue;
            if (now_s() > deadline) { fprintf(stderr, "mpris: no PlaybackStatus change within 5 s (sample %d)\n", i); return 1; }
            sd_bus_wait(bus, 100000);
        }
        toggle[i] = (now_s() - start) * 1e6;

        int64_t position = 0;
        start = now_s();
        if (sd_bus_get_property_trivial(bus, name, "/org/mpris/MediaPlayer2", "org.mpris.MediaPlayer2.Player", "Position", &error, 'x', &position) < 0) {
            fprintf(stderr, "mpris: Position failed: %s\n", error.message ? error.message : "?");
            return 1;
        }
        get[i] = (now_s() - start) * 1e6;
    }
    printf("{");
    percentiles("toggle", toggle, samples, 0);
    percentiles("get", get, samples, 0);
    printf("\"samples\": %d}\n", samples);
    sd_bus_flush_close_unref(bus);
    return 0;
}
