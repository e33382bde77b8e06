// openpi's websocket policy server (openpi/serving/websocket_policy_server.py) on Boost.Beast:
//   GET /healthz            200 "OK\n" over plain HTTP on the same port
//   websocket upgrade       no compression; with an API key, the handshake must carry
//                           "Authorization: Api-Key KEY" (openpi-client sends it so), else 401
//   on connect              one binary frame: the metadata (msgpack map)
//   each binary frame       a msgpack observation (codec.h, observation.h), answered by the
//                           map {"actions": ndarray float32 [H, action_dim], "server_timing":
//                           {"infer_ms", "prev_total_ms", "batch_ms", "batch_size"}}
//   {"__ctrl__": NAME}      answered {"__ack__": NAME} (openpi's episode_start / episode_end)
//   anything else           one text frame saying what is wrong (naming the key), then the
//                           connection closes (status 1008; 1011 when inference failed)
// A message larger than max_message_bytes is refused from its frame header, before its payload
// is read (close status 1009). Each connection has at most one request in flight (the next
// frame is read after the reply is written), so a connection holds at most one message;
// max_connections bounds the connections.
//
// Connections run on a few threads of their own; requests go to the Engine, whose one thread
// batches them. Beast lives in server.cc only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "ember/serve/engine.h"
#include "ember/serve/observation.h"

namespace ember::serve {

struct ServerOptions {
  std::string host = "127.0.0.1";
  int port = 8000;                          // 0: a free port (port() says which)
  std::string api_key;                      // non-empty: required in the handshake
  size_t max_message_bytes = size_t(64) << 20;
  int max_connections = 64;
  int threads = 2;                          // connection threads
  std::string metadata;                     // msgpack bytes sent on connect
  uint64_t seed = 0;                        // a connection's k-th request draws its noise from seed + k
};

class Server {
 public:
  // Binds, listens and starts serving. The engine and the map must outlive the server. Throws
  // Error kInvalidArgument naming --host or --port when the address cannot be listened on (in
  // use, not this machine's).
  Server(Engine& engine, const ObservationMap& map, ServerOptions options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // The port listened on.
  int port() const;
  // Stops accepting, closes idle connections (status 1001, going away), answers the requests in
  // flight (engine.stop() drains the engine), closes those connections after their reply, and
  // returns once every connection has ended (those that do not end within drain_s are cut).
  // Idempotent.
  void stop(double drain_s = 10);

  int64_t connections() const;  // accepted so far
  int64_t answered() const;     // requests answered with actions
  int64_t refused() const;      // requests answered with an error

  struct Impl;  // server.cc's (its connections reach it)

 private:
  std::unique_ptr<Impl> impl_;
};

// Throws Error kInvalidArgument naming --host or --port when nothing could listen there now (a
// check before a slow policy load; the Server's own bind still decides).
void check_listen_address(const std::string& host, int port);

}  // namespace ember::serve
