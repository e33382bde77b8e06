// A blocking websocket client of `ember serve` (or of any openpi policy server), for the tests
// and `ember bench inference --socket`: what openpi-client's WebsocketClientPolicy does, in
// C++. Every call waits at most timeout_s. Not thread-safe: one client per thread.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <utility>

#include "ember/serve/codec.h"

namespace ember::serve {

class Client {
 public:
  // Connects to ws://host:port/ (sending "Authorization: Api-Key KEY" when api_key is given)
  // and reads the metadata frame. Throws Error kIO naming host:port when the connection or the
  // handshake fails (an HTTP answer instead of the upgrade: its status).
  Client(const std::string& host, int port, const std::string& api_key = "", double timeout_s = 60);
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const Field& metadata() const;

  // One frame to the server.
  void send(const std::string& bytes, bool binary = true);
  // Bytes written to the connection as they are, outside the websocket framing (tests: a frame
  // cut short, a frame header announcing more than the server takes).
  void send_raw(const std::string& bytes);

  struct Frame {
    bool binary = true;
    std::string data;
  };
  // The next frame, or nothing once the connection is closed (close_code() says how). Throws
  // Error kIO when nothing arrives within the timeout.
  std::optional<Frame> receive();
  // The server's close status (1000 normal, 1001 going away, 1008 a bad request, 1009 too big,
  // 1011 an internal error); 0 when the connection ended without one.
  int close_code() const;

  // openpi's infer(): the observation out, its decoded reply back. Throws Error kIO with the
  // server's message when it answers with a text frame or closes.
  Field infer(const Field& observation);

  // Closes the connection (the close handshake, then the socket).
  void close();
  // Closes the socket at once, without the close handshake (tests: a client that vanishes).
  void drop();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// A plain HTTP GET (e.g. /healthz): the status and the body. Throws Error kIO on failure.
std::pair<int, std::string> http_get(const std::string& host, int port, const std::string& target, double timeout_s = 30);

}  // namespace ember::serve
