// Runs once when the test binary is loaded, before any test: quiet logs, and a closing line naming what was
// skipped (TillTesting's `till_test_setup`, in Swift).
extern void till_test_setup(void);

__attribute__((constructor)) static void till_test_setup_at_load(void) { till_test_setup(); }
