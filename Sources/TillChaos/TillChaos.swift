// The chaos run over the production path: see ChaosRun.
