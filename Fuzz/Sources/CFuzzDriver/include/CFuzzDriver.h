// libFuzzer's driver, called from a fuzz target's own main (SwiftPM links an executable's main
// as <module>_main, so libFuzzer's main cannot be used; its no-main library is linked instead).
#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));
