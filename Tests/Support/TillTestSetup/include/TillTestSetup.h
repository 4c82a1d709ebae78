// Nothing to import: the target only runs `till_test_setup` when the test binary is loaded.
