#include <execinfo.h>
#include <malloc.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <iostream>

#include "cli/commands.h"
#include "ember_version.h"
#include "ember/core/error.h"
#include "ember/io/video/video_decoder.h"
#ifdef EMBER_HAVE_SIM
#include "ember/eval/checkpoint_policy.h"
#include "ember/sim/render_process.h"
#endif

namespace {

// CLI11 says only "A subcommand is required" for `ember nonsense`, `ember --nope` and
// `ember data nonsense`: name what was given, where, and what would do.
std::string missing_subcommand_message(CLI::App& app, int argc, char** argv, const std::string& what) {
  CLI::App* at = &app;
  std::string path = "ember";
  int i = 1;
  for (; i < argc; ++i) {
    CLI::App* sub = nullptr;
    try {
      sub = at->get_subcommand(argv[i]);
    } catch (const CLI::OptionNotFound&) {
    }
    if (!sub) break;
    at = sub;
    path += std::string(" ") + argv[i];
  }
  if (what != "A subcommand is required" || at->get_require_subcommand_min() == 0)
    return what + " (see ember --help)";  // another requirement (a required option)
  std::string names;
  for (const CLI::App* sub : at->get_subcommands([](CLI::App*) { return true; }))
    names += (names.empty() ? "" : ", ") + sub->get_name();
  std::string given = i < argc ? std::string(argv[i]) : std::string();
  std::string where = at == &app ? "" : path + ": ";  // main prints "ember: error: " before it
  std::string head = given.empty()                ? where + "a subcommand is required"
                     : given.rfind('-', 0) == 0 ? where + "'" + given + "' is not an option here, and a subcommand is required"
                                                : where + "'" + given + "' is not a subcommand";
  return head + " (one of: " + names + "; see " + path + " --help)";
}

}  // namespace

namespace {
// A crash (a bug in ember or a library) ends with its signal and the stack, as addresses with
// their offsets in each binary (addr2line on an unstripped build names them), so that a report
// of it can be acted on; then the default action (a core file where enabled).
void report_crash(int sig) {
  const char* head = "ember: fatal signal ";
  ssize_t ignored = write(STDERR_FILENO, head, strlen(head));
  const char* name = sigdescr_np(sig);  // unlike strsignal, safe in a signal handler
  ignored = write(STDERR_FILENO, name, strlen(name));
  ignored = write(STDERR_FILENO, "; stack:\n", 9);
  (void)ignored;
  void* frames[64];
  backtrace_symbols_fd(frames, backtrace(frames, 64), STDERR_FILENO);
  raise(sig);  // SA_RESETHAND: the default action now
}

void install_crash_report() {
  void* warm[1];
  backtrace(warm, 1);  // loads libgcc's unwinder now, not inside the handler
  struct sigaction sa {};
  sa.sa_handler = report_crash;
  sa.sa_flags = SA_RESETHAND | SA_NODEFER;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT}) sigaction(sig, &sa, nullptr);
}
}  // namespace

int main(int argc, char** argv) {
#ifdef EMBER_HAVE_SIM
  // a render process that VectorEnv started (sim/render_process.h): it serves, then exits
  if (int rc = ember::sim::run_render_worker_if_asked(argc, argv); rc >= 0) return rc;
#endif
  install_crash_report();
  // keep freed memory for reuse instead of returning it to the system after every batch:
  // decoding allocates and frees the same large buffers again and again (pyarrow's jemalloc
  // pools do the same)
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  CLI::App app{"ember: native training platform for robot vision-language-action policies"};
  app.set_version_flag("--version", std::string("ember 0.1.0 (") + EMBER_GIT_COMMIT + "), video support: " +
                                        (ember::io::video_support_available() ? "FFmpeg" : "none (built without FFmpeg)"));
  app.require_subcommand(1);
  ember::cli::Action action;
#ifdef EMBER_HAVE_SIM
  ember::eval::register_checkpoint_sim_policy();  // `ember eval --checkpoint DIR`
#endif
  ember::cli::add_data_commands(app, action);
  ember::cli::add_bench_commands(app, action);
  ember::cli::add_demo_command(app, action);
  ember::cli::add_train_commands(app, action);
  ember::cli::add_bench_policy_command(app, action);
  ember::cli::add_sim_commands(app, action);  // after add_bench_commands: adds `bench sim`
  ember::cli::add_launch_command(app, action);
  ember::cli::add_rl_command(app, action);
  ember::cli::add_serve_commands(app, action);  // after add_bench_commands: adds `bench inference`
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::RequiredError& e) {
    std::cerr << "ember: error: " << missing_subcommand_message(app, argc, argv, e.what()) << "\n";
    return 2;
  } catch (const CLI::ParseError& e) {
    std::cerr << "ember: error: " << e.what() << " (see ember --help)\n";
    return 2;
  }
  try {
    return action ? action() : 0;
  } catch (const ember::Error& e) {
    std::cout.flush();
    std::cerr << "ember: error: " << e.what() << "\n";
    return e.is_user_error() ? 2 : 70;
  } catch (const std::bad_alloc&) {
    std::cerr << "ember: error: out of memory\n";
    return 70;
  } catch (const std::exception& e) {
    std::cerr << "ember: internal error: " << e.what() << "\n";
    return 70;
  }
}
