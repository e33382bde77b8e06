// Boost.Beast's client side (tests and the socket benchmark only; the server is server.cc).
#include "ember/serve/client.h"

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <chrono>

#include "ember/core/error.h"

namespace ember::serve {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;

namespace {

[[noreturn]] void io_error(const std::string& what) { throw Error(ErrorKind::kIO, what); }

// Runs one asynchronous operation to its end within timeout_s; on timeout, cancels it (through
// `cancel`) and throws naming `what`. Returns the operation's error code.
template <typename Start, typename Cancel>
beast::error_code run_one(net::io_context& ioc, double timeout_s, const std::string& what, Start start, Cancel cancel) {
  beast::error_code result;
  bool done = false;
  start([&](beast::error_code ec, auto&&...) { result = ec, done = true; });
  ioc.restart();
  ioc.run_for(std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::duration<double>(timeout_s)));
  if (!done) {
    cancel();
    ioc.restart();
    ioc.run();
    io_error(what + ": no answer within " + std::to_string(int(timeout_s)) + " s");
  }
  return result;
}

}  // namespace

struct Client::Impl {
  net::io_context ioc;
  websocket::stream<beast::tcp_stream> ws{ioc};
  beast::flat_buffer buffer;
  Field metadata;
  double timeout_s = 60;
  std::string where;  // "ws://host:port"
  int close_code = 0;
  bool open = false;

  template <typename Start>
  beast::error_code run(const std::string& what, Start start) {
    return run_one(ioc, timeout_s, where + ": " + what, start, [&] { beast::get_lowest_layer(ws).cancel(); });
  }
};

Client::Client(const std::string& host, int port, const std::string& api_key, double timeout_s) : impl_(std::make_unique<Impl>()) {
  Impl& c = *impl_;
  c.timeout_s = timeout_s;
  c.where = "ws://" + host + ":" + std::to_string(port);
  tcp::resolver resolver(c.ioc);
  beast::error_code ec;
  auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec) io_error(c.where + ": " + ec.message());
  ec = c.run("connect", [&](auto handler) { beast::get_lowest_layer(c.ws).async_connect(endpoints, handler); });
  if (ec) io_error(c.where + ": " + ec.message());
  beast::error_code ignored;
  beast::get_lowest_layer(c.ws).socket().set_option(tcp::no_delay(true), ignored);  // as openpi's client (asyncio sets it)
  c.ws.set_option(websocket::stream_base::decorator([api_key](websocket::request_type& req) {
    if (!api_key.empty()) req.set(http::field::authorization, "Api-Key " + api_key);
  }));
  c.ws.read_message_max(size_t(1) << 30);
  websocket::response_type response;
  ec = c.run("handshake", [&](auto handler) { c.ws.async_handshake(response, host + ":" + std::to_string(port), "/", handler); });
  if (ec == websocket::error::upgrade_declined)
    io_error(c.where + ": the server answered HTTP " + std::to_string(response.result_int()) + " " + std::string(response.reason()));
  if (ec) io_error(c.where + ": handshake: " + ec.message());
  c.open = true;
  auto first = receive();
  if (!first || !first->binary) io_error(c.where + ": no metadata frame after the handshake");
  c.metadata = decode(first->data);
}

Client::~Client() {
  try {
    close();
  } catch (const std::exception&) {  // a destructor does not throw
  }
}

const Field& Client::metadata() const { return impl_->metadata; }
int Client::close_code() const { return impl_->close_code; }

void Client::send(const std::string& bytes, bool binary) {
  Impl& c = *impl_;
  c.ws.binary(binary);
  auto ec = c.run("send", [&](auto handler) { c.ws.async_write(net::buffer(bytes), handler); });
  if (ec) io_error(c.where + ": send: " + ec.message());
}

void Client::send_raw(const std::string& bytes) {
  Impl& c = *impl_;
  auto ec = c.run("send", [&](auto handler) { net::async_write(beast::get_lowest_layer(c.ws).socket(), net::buffer(bytes), handler); });
  if (ec) io_error(c.where + ": send: " + ec.message());
}

std::optional<Client::Frame> Client::receive() {
  Impl& c = *impl_;
  if (!c.open) return std::nullopt;
  c.buffer.consume(c.buffer.size());
  auto ec = c.run("receive", [&](auto handler) { c.ws.async_read(c.buffer, handler); });
  if (ec) {
    c.open = false;
    if (ec == websocket::error::closed) c.close_code = int(c.ws.reason().code);
    return std::nullopt;
  }
  return Frame{c.ws.got_binary(), beast::buffers_to_string(c.buffer.data())};
}

Field Client::infer(const Field& observation) {
  send(encode(observation));
  auto reply = receive();
  if (!reply) io_error(impl_->where + ": the server closed the connection (status " + std::to_string(close_code()) + ")");
  if (!reply->binary) io_error(impl_->where + ": " + reply->data);
  return decode(reply->data);
}

void Client::close() {
  Impl& c = *impl_;
  if (!c.open) return;
  c.open = false;
  c.run("close", [&](auto handler) { c.ws.async_close(websocket::close_code::normal, handler); });
}

void Client::drop() {
  Impl& c = *impl_;
  c.open = false;
  beast::error_code ignored;
  beast::get_lowest_layer(c.ws).socket().shutdown(tcp::socket::shutdown_both, ignored);
  beast::get_lowest_layer(c.ws).socket().close(ignored);
}

std::pair<int, std::string> http_get(const std::string& host, int port, const std::string& target, double timeout_s) {
  const std::string where = "http://" + host + ":" + std::to_string(port) + target;
  net::io_context ioc;
  beast::tcp_stream stream(ioc);
  tcp::resolver resolver(ioc);
  beast::error_code ec;
  auto endpoints = resolver.resolve(host, std::to_string(port), ec);
  if (ec) io_error(where + ": " + ec.message());
  auto cancel = [&] { stream.cancel(); };
  ec = run_one(ioc, timeout_s, where, [&](auto handler) { stream.async_connect(endpoints, handler); }, cancel);
  if (ec) io_error(where + ": " + ec.message());
  http::request<http::empty_body> req(http::verb::get, target, 11);
  req.set(http::field::host, host);
  ec = run_one(ioc, timeout_s, where, [&](auto handler) { http::async_write(stream, req, handler); }, cancel);
  if (ec) io_error(where + ": " + ec.message());
  beast::flat_buffer buffer;
  http::response<http::string_body> res;
  ec = run_one(ioc, timeout_s, where, [&](auto handler) { http::async_read(stream, buffer, res, handler); }, cancel);
  if (ec) io_error(where + ": " + ec.message());
  return {res.result_int(), res.body()};
}

}  // namespace ember::serve
