#pragma once

namespace warren::bench {

// Makes SIGINT, SIGTERM and SIGHUP ask the bench to stop instead of killing it: the bench polls
// StopRequested() between its steps and returns, so its RAII cleanup runs (sandboxes, cgroups,
// idmapped layers, temporary directories) and an interrupted run leaves the host as it found
// it. A second signal kills as usual, for a bench stuck in a step. Call once, early in main and
// before any thread starts. Thread-safe after that.
void InstallStopSignals();

// Whether a stop signal has arrived.
bool StopRequested();

// The exit code of a stopped bench: 128 + the signal, as a shell reports a death by it.
int StoppedExitCode();

}  // namespace warren::bench
