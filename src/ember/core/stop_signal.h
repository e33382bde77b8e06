// SIGINT (Ctrl-C) and SIGTERM (`timeout`, a scheduler's stop) as a request to stop long work
// cleanly: the first one sets a flag that `ember train` and `ember rl` read between steps; they
// then save a checkpoint of the step they finished and return, and the command exits with
// 128 + the signal. A second one, a second or more after the first, ends the process at once
// (the default action). One that comes sooner is the same request again: GNU `timeout` sends
// its signal twice, to the command and then to the command's process group, microseconds apart.
#pragma once

namespace ember {

// Installs the handlers (idempotent). Only commands that read stop_requested() call it; elsewhere
// the signals keep their default action. `line`: what the first signal prints on stderr (a
// string that lives as long as the process; default: train's and rl's "stopping after this step").
void install_stop_signals(const char* line = nullptr);

// The signal that asked to stop (SIGINT or SIGTERM), or 0.
int stop_requested();

// What the handler does, callable directly (tests); clear_stop_request() forgets it.
void request_stop(int sig);
void clear_stop_request();

// "SIGINT", "SIGTERM", or "a signal" for any other
const char* stop_signal_name(int sig);

}  // namespace ember
