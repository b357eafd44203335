// Only the header matters: LLVMFuzzerRunDriver comes from libclang_rt.fuzzer_no_main.
#include "CFuzzDriver.h"
