// sd-bus, systemd's D-Bus library, from the system (Debian/Ubuntu: libsystemd-dev; Fedora:
// systemd-devel; Arch: systemd-libs), for MPRIS (PlayerKitMPRIS only).
//
// sd-bus describes an object's interface with a table (`sd_bus_vtable`) that its C macros fill
// in; the struct has bitfields and a union, and sd-bus requires the unused bytes of each entry
// to be zero. Swift cannot use the macros, so the two MPRIS tables are built here, in C, from
// string literals (which live for the whole process, as sd-bus requires), with the handlers the
// caller gives. Each table is built once per process.
#include <systemd/sd-bus.h>
#include <stdlib.h>
#include <string.h>

static inline void playerkit_vtable_start(sd_bus_vtable *entry) {
    memset(entry, 0, sizeof *entry);
    entry->type = _SD_BUS_VTABLE_START;
    entry->x.start.element_size = sizeof(sd_bus_vtable);
    entry->x.start.features = _SD_BUS_VTABLE_PARAM_NAMES;
    entry->x.start.vtable_format_reference = &sd_bus_object_vtable_format;
}

static inline void playerkit_vtable_method(sd_bus_vtable *entry, const char *member, const char *signature,
                                           const char *names, sd_bus_message_handler_t handler) {
    memset(entry, 0, sizeof *entry);
    entry->type = _SD_BUS_VTABLE_METHOD;
    entry->flags = SD_BUS_VTABLE_UNPRIVILEGED;
    entry->x.method.member = member;
    entry->x.method.signature = signature;
    entry->x.method.result = "";
    entry->x.method.handler = handler;
    entry->x.method.names = names;
}

static inline void playerkit_vtable_signal(sd_bus_vtable *entry, const char *member, const char *signature, const char *names) {
    memset(entry, 0, sizeof *entry);
    entry->type = _SD_BUS_VTABLE_SIGNAL;
    entry->x.signal.member = member;
    entry->x.signal.signature = signature;
    entry->x.signal.names = names;
}

/// A property; `set` NULL for a read-only one. `emits`: 1 when PropertiesChanged carries its new
/// value, 0 when it changes without a signal (MPRIS's Position), 2 when it never changes.
static inline void playerkit_vtable_property(sd_bus_vtable *entry, const char *member, const char *signature,
                                             sd_bus_property_get_t get, sd_bus_property_set_t set, int emits) {
    memset(entry, 0, sizeof *entry);
    entry->type = set ? _SD_BUS_VTABLE_WRITABLE_PROPERTY : _SD_BUS_VTABLE_PROPERTY;
    entry->flags = (emits == 1 ? SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE : emits == 2 ? SD_BUS_VTABLE_PROPERTY_CONST : 0)
        | (set ? SD_BUS_VTABLE_UNPRIVILEGED : 0);
    entry->x.property.member = member;
    entry->x.property.signature = signature;
    entry->x.property.get = get;
    entry->x.property.set = set;
}

static inline void playerkit_vtable_end(sd_bus_vtable *entry) {
    memset(entry, 0, sizeof *entry);
    entry->type = _SD_BUS_VTABLE_END;
}

/// `org.mpris.MediaPlayer2`: Raise, Quit and the player's identity.
static inline const sd_bus_vtable *playerkit_mpris_root_vtable(sd_bus_message_handler_t method,
                                                               sd_bus_property_get_t get, sd_bus_property_set_t set) {
    sd_bus_vtable *table = calloc(16, sizeof(sd_bus_vtable));
    if (!table) return NULL;
    int i = 0;
    playerkit_vtable_start(&table[i++]);
    playerkit_vtable_method(&table[i++], "Raise", "", "", method);
    playerkit_vtable_method(&table[i++], "Quit", "", "", method);
    playerkit_vtable_property(&table[i++], "CanQuit", "b", get, NULL, 1);
    playerkit_vtable_property(&table[i++], "CanRaise", "b", get, NULL, 1);
    playerkit_vtable_property(&table[i++], "Fullscreen", "b", get, set, 1);
    playerkit_vtable_property(&table[i++], "CanSetFullscreen", "b", get, NULL, 1);
    playerkit_vtable_property(&table[i++], "HasTrackList", "b", get, NULL, 2);
    playerkit_vtable_property(&table[i++], "Identity", "s", get, NULL, 1);
    playerkit_vtable_property(&table[i++], "DesktopEntry", "s", get, NULL, 2);
    playerkit_vtable_property(&table[i++], "SupportedUriSchemes", "as", get, NULL, 2);
    playerkit_vtable_property(&table[i++], "SupportedMimeTypes", "as", get, NULL, 2);
    playerkit_vtable_end(&table[i++]);
    return table;
}

/// `org.mpris.MediaPlayer2.Player`: transport, position, rate, volume, loop and the Seeked signal.
static inline const sd_bus_vtable *playerkit_mpris_player_vtable(sd_bus_message_handler_t method,
                                                                 sd_bus_property_get_t get, sd_bus_property_set_t set) {
    sd_bus_vtable *table = calloc(32, sizeof(sd_bus_vtable));
    if (!table) return NULL;
    int i = 0;
    playerkit_vtable_start(&table[i++]);
    playerkit_vtable_method(&table[i++], "Next", "", "", method);
    playerkit_vtable_method(&table[i++], "Previous", "", "", method);
    playerkit_vtable_method(&table[i++], "Pause", "", "", method);
    playerkit_vtable_method(&table[i++], "PlayPause", "", "", method);
    playerkit_vtable_method(&table[i++], "Stop", "", "", method);
    playerkit_vtable_method(&table[i++], "Play", "", "", method);
    playerkit_vtable_method(&table[i++], "Seek", "x", SD_BUS_PARAM(Offset), method);
    playerkit_vtable_method(&table[i++], "SetPosition", "ox", SD_BUS_PARAM(TrackId) SD_BUS_PARAM(Position), method);
    playerkit_vtable_method(&table[i++], "OpenUri", "s", SD_BUS_PARAM(Uri), method);
    playerkit_vtable_signal(&table[i++], "Seeked", "x", SD_BUS_PARAM(Position));
    playerkit_vtable_property(&table[i++], "PlaybackStatus", "s", get, NULL, 1);
    playerkit_vtable_property(&table[i++], "LoopStatus", "s", get, set, 1);
    playerkit_vtable_property(&table[i++], "Rate", "d", get, set, 1);
    playerkit_vtable_property(&table[i++], "Metadata", "a{sv}", get, NULL, 1);
    playerkit_vtable_property(&table[i++], "Volume", "d", get, set, 1);
    playerkit_vtable_property(&table[i++], "Position", "x", get, NULL, 0);
    playerkit_vtable_property(&table[i++], "MinimumRate", "d", get, NULL, 1);
    playerkit_vtable_property(&table[i++], "MaximumRate", "d", get, NULL, 1);
    playerkit_vtable_property(&table[i++], "CanGoNext", "b", get, NULL, 1);
    playerkit_vtable_property(&table[i++], "CanGoPrevious", "b", get, NULL, 1);
    playerkit_vtable_property(&table[i++], "CanPlay", "b", get, NULL, 1);
    playerkit_vtable_property(&table[i++], "CanPause", "b", get, NULL, 1);
    playerkit_vtable_property(&table[i++], "CanSeek", "b", get, NULL, 1);
    playerkit_vtable_property(&table[i++], "CanControl", "b", get, NULL, 2);
    playerkit_vtable_end(&table[i++]);
    return table;
}

/// The creds bit for a process ID (`SD_BUS_CREDS_PID`; the flags' enum holds a 64-bit value,
/// which Swift imports with another type).
static inline uint64_t playerkit_creds_pid(void) {
    return SD_BUS_CREDS_PID;
}

#include <sys/eventfd.h>

/// A non-blocking eventfd (the MPRIS thread's wake-up; glibc's header is not in Swift's Glibc module).
static inline int playerkit_eventfd(void) {
    return eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
}
