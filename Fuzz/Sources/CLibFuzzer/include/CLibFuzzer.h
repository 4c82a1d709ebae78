#ifndef TILL_FUZZ_CLIBFUZZER_H
#define TILL_FUZZ_CLIBFUZZER_H

#include <stddef.h>
#include <stdint.h>

// libFuzzer's driver (compiler-rt, linked by -sanitize=fuzzer): parses libFuzzer's flags from argc/argv and fuzzes
// UserCb. Called from each fuzz target's own entry point, because SwiftPM names an executable's entry point
// `<target>_main` (and links `main` to it), which leaves libFuzzer's own `main` out.
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*UserCb)(const uint8_t *Data, size_t Size));

#endif
