// Worldline Connect emulator.
