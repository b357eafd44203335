// SQLite from the system (Debian/Ubuntu: libsqlite3-dev; Fedora: sqlite-devel; Arch: sqlite).
#include <sqlite3.h>
