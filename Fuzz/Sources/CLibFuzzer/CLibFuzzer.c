// Only the header matters: LLVMFuzzerRunDriver is libFuzzer's (linked by -sanitize=fuzzer).
#include "CLibFuzzer.h"
