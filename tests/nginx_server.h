// A real nginx (Debian's nginx-light) on loopback, started by a test with a configuration of
// its own in a temporary directory: one process (master_process off), serving a directory,
// optionally slowed (limit_rate) or answering 503 for some paths. available() says whether
// nginx is installed; tests without it skip with the reason printed.
#pragma once

#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <cstdlib>
#include <string>
#include <thread>

#include "ember/io/http.h"

extern char** environ;

namespace ember::test {

class NginxServer {
 public:
  struct Options {
    std::string root;             // directory served at /
    std::string limit_rate;       // e.g. "200k": bytes/s per connection under /data/; empty: unlimited
    std::string fail_prefix;      // requests under this URL prefix get 503; empty: none
    std::string http_extra;       // configuration text added to the http block (log_format, map)
    std::string server_extra;     // and to the server block (locations, access_log)
  };

  // $EMBER_NGINX first (a GPU node's nginx unpacked from scripts/gpu-bundle.sh's bundle)
  static std::string binary() {
    if (const char* e = std::getenv("EMBER_NGINX"); e && ::access(e, X_OK) == 0) return e;
    for (const char* p : {"/usr/sbin/nginx", "/usr/local/sbin/nginx", "/usr/local/nginx/sbin/nginx"})
      if (::access(p, X_OK) == 0) return p;
    return "";
  }
  static bool available() { return !binary().empty(); }

  NginxServer(const std::string& dir, Options o) : dir_(dir), options_(std::move(o)) { start(); }
  ~NginxServer() { stop(); }

  const std::string& url() const { return url_; }
  int port() const { return port_; }

  // SIGKILL (a server that dies mid-transfer), then, if asked, the same server again.
  void kill_now() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  void restart() { start(port_); }
  void stop() {
    if (pid_ > 0) {
      ::kill(pid_, SIGTERM);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }

 private:
  void start(int port = 0) {
    namespace fs = std::filesystem;
    fs::create_directories(dir_ + "/logs");
    for (int attempt = 0; attempt < 20 && pid_ <= 0; ++attempt) {
      int p = port ? port : 20000 + int((::getpid() * 7 + attempt * 131 + std::chrono::steady_clock::now().time_since_epoch().count()) % 20000);
      std::ofstream conf(dir_ + "/nginx.conf");
      conf << "daemon off;\nmaster_process off;\nworker_processes 1;\npid " << dir_ << "/nginx.pid;\nerror_log " << dir_
           << "/logs/error.log warn;\nevents { worker_connections 64; }\nhttp {\n  access_log off;\n"
           << options_.http_extra << "\n  client_body_temp_path " << dir_ << "/body;\n  proxy_temp_path " << dir_ << "/proxy;\n"
           << "  fastcgi_temp_path " << dir_ << "/fcgi;\n  uwsgi_temp_path " << dir_ << "/uwsgi;\n  scgi_temp_path " << dir_ << "/scgi;\n"
           << "  server {\n    listen 127.0.0.1:" << p << ";\n    root " << options_.root << ";\n"
           << (options_.limit_rate.empty() ? "" : "    location /data/ { limit_rate " + options_.limit_rate + "; }\n")
           << (options_.fail_prefix.empty() ? "" : "    location " + options_.fail_prefix + " { return 503; }\n") << options_.server_extra << "\n  }\n}\n";
      conf.close();
      std::string bin = binary(), c = dir_ + "/nginx.conf", e = dir_ + "/logs/stderr.log";
      const char* argv[] = {bin.c_str(), "-e", e.c_str(), "-p", dir_.c_str(), "-c", c.c_str(), nullptr};
      pid_t pid = 0;
      if (::posix_spawn(&pid, bin.c_str(), nullptr, nullptr, const_cast<char**>(argv), environ) != 0) return;
      // up when "/" answers (any status); gone when the process exited (port taken: try another)
      for (int i = 0; i < 100; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        int status = 0;
        if (::waitpid(pid, &status, WNOHANG) == pid) {
          pid = -1;
          break;
        }
        io::HttpOptions quick;
        quick.connect_timeout_s = 1;
        io::HttpResult r = io::http_get("http://127.0.0.1:" + std::to_string(p) + "/", std::nullopt, quick);
        if (r.status > 0) {
          pid_ = pid;
          port_ = p;
          url_ = "http://127.0.0.1:" + std::to_string(p);
          return;
        }
      }
      if (pid > 0) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, nullptr, 0);
      }
      if (port) return;  // a restart on the same port failed
    }
  }

  std::string dir_;
  Options options_;
  pid_t pid_ = -1;
  int port_ = 0;
  std::string url_;
};

}  // namespace ember::test
