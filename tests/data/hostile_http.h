// A loopback HTTP/1.1 server that serves a directory (whole files and byte ranges) and
// misbehaves on purpose for the paths under one prefix: it never answers, sends a body
// without end, announces more bytes than it sends, or trickles. For the remote-shard tests
// of what nginx will not do (issue 42). One thread per connection; stop() (or the destructor)
// closes everything.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace ember::test {

class HostileHttp {
 public:
  enum class Mode {
    kGood,       // serves the file
    kSilent,     // reads the request, never answers
    kEndless,    // 200 without a length, then bytes until the client goes
    kShortBody,  // announces the range's length, sends a tenth of it, then holds
    kTrickle,    // 20 bytes a second
  };

  HostileHttp(std::string root, Mode mode, std::string prefix) : root_(std::move(root)), mode_(mode), prefix_(std::move(prefix)) {
    listener_ = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listener_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = 0;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(listener_, 64) != 0) return;
    socklen_t len = sizeof a;
    ::getsockname(listener_, reinterpret_cast<sockaddr*>(&a), &len);
    port_ = ntohs(a.sin_port);
    acceptor_ = std::thread([this] { accept_loop(); });
  }
  ~HostileHttp() { stop(); }
  HostileHttp(const HostileHttp&) = delete;
  HostileHttp& operator=(const HostileHttp&) = delete;

  std::string url() const { return port_ ? "http://127.0.0.1:" + std::to_string(port_) : ""; }
  int requests() const { return requests_.load(); }

  void stop() {
    if (stopping_.exchange(true)) return;
    ::shutdown(listener_, SHUT_RDWR);
    ::close(listener_);
    if (acceptor_.joinable()) acceptor_.join();
    std::vector<std::thread> workers;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (int fd : open_) ::shutdown(fd, SHUT_RDWR);
      workers.swap(workers_);
    }
    for (auto& t : workers) t.join();
  }

 private:
  void accept_loop() {
    while (!stopping_) {
      int fd = ::accept(listener_, nullptr, nullptr);
      if (fd < 0) return;
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) {
        ::close(fd);
        return;
      }
      open_.push_back(fd);
      workers_.emplace_back([this, fd] { serve(fd); });
    }
  }

  // sends all of data; false when the client has gone (or the server stops)
  bool send_all(int fd, const char* data, size_t n) {
    while (n > 0) {
      ssize_t put = ::send(fd, data, n, MSG_NOSIGNAL);
      if (put <= 0 || stopping_) return false;
      data += put;
      n -= size_t(put);
    }
    return true;
  }

  void hold(int fd) {  // until the client or the server goes
    char c;
    while (!stopping_ && ::recv(fd, &c, 1, 0) > 0) {
    }
  }

  void serve(int fd) {
    std::string request;
    char buf[4096];
    while (request.find("\r\n\r\n") == std::string::npos) {
      ssize_t got = ::recv(fd, buf, sizeof buf, 0);
      if (got <= 0) return finish(fd);
      request.append(buf, size_t(got));
    }
    ++requests_;
    std::istringstream lines(request);
    std::string method, path;
    lines >> method >> path;
    uint64_t first = 0, last = 0;
    bool ranged = false;
    const size_t r = request.find("Range: bytes=");
    if (r != std::string::npos) ranged = std::sscanf(request.c_str() + r, "Range: bytes=%lu-%lu", &first, &last) == 2;
    const bool hostile = path.rfind(prefix_, 0) == 0 ? mode_ != Mode::kGood : false;
    std::ifstream in(root_ + path, std::ios::binary);
    std::string body((std::istreambuf_iterator<char>(in)), {});
    if (!in && !hostile) {
      const std::string head = "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      send_all(fd, head.data(), head.size());
      return finish(fd);
    }
    if (ranged && first < body.size()) body = body.substr(first, last - first + 1);
    const std::string status = ranged ? "206 Partial Content" : "200 OK";
    if (!hostile) {
      const std::string head = "HTTP/1.1 " + status + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
      if (send_all(fd, head.data(), head.size())) send_all(fd, body.data(), body.size());
      return finish(fd);
    }
    switch (mode_) {
      case Mode::kSilent:
        hold(fd);
        break;
      case Mode::kEndless: {
        const std::string head = "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n";
        std::string chunk(64 << 10, 'x');
        if (send_all(fd, head.data(), head.size()))
          while (send_all(fd, chunk.data(), chunk.size())) {
          }
        break;
      }
      case Mode::kShortBody: {
        const std::string head = "HTTP/1.1 " + status + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
        if (send_all(fd, head.data(), head.size()) && send_all(fd, body.data(), body.size() / 10)) hold(fd);
        break;
      }
      case Mode::kTrickle: {
        const std::string head = "HTTP/1.1 " + status + "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n";
        bool alive = send_all(fd, head.data(), head.size());
        for (size_t at = 0; alive && at < body.size(); at += 20) {
          alive = send_all(fd, body.data() + at, std::min<size_t>(20, body.size() - at));
          for (int i = 0; alive && i < 10 && !stopping_; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        break;
      }
      case Mode::kGood:
        break;
    }
    finish(fd);
  }

  void finish(int fd) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& o : open_)
      if (o == fd) o = -1;
    ::close(fd);
  }

  std::string root_;
  Mode mode_;
  std::string prefix_;
  int listener_ = -1;
  int port_ = 0;
  std::atomic<bool> stopping_{false};
  std::atomic<int> requests_{0};
  std::mutex mu_;
  std::vector<int> open_;
  std::vector<std::thread> workers_;
  std::thread acceptor_;
};

}  // namespace ember::test
