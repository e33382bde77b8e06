// The one translation unit that includes Boost.Beast's server side (it compiles slowly).
#include "ember/serve/server.h"

#include <boost/asio/dispatch.hpp>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <atomic>
#include <bit>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "ember/core/error.h"
#include "ember/serve/codec.h"

namespace ember::serve {

namespace beast = boost::beast;
namespace http = beast::http;
namespace websocket = beast::websocket;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using Clock = std::chrono::steady_clock;

static_assert(std::endian::native == std::endian::little, "actions go out as little-endian float32 (<f4)");

namespace {

[[noreturn]] void bad(const std::string& what) { throw Error(ErrorKind::kInvalidArgument, what); }

// Opens, binds and listens `acceptor` on host:port; a user error naming the flag otherwise.
void listen_on(tcp::acceptor& acceptor, net::io_context& ioc, const std::string& host, int port) {
  beast::error_code ec;
  tcp::resolver resolver(ioc);
  auto found = resolver.resolve(host, std::to_string(port), tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || found.empty()) bad("--host " + host + ": not an address to listen on (" + ec.message() + ")");
  const tcp::endpoint endpoint = found.begin()->endpoint();
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (ec == net::error::address_in_use) bad("--port " + std::to_string(port) + ": address already in use on " + host);
  if (ec == boost::system::errc::address_not_available) bad("--host " + host + ": not an address of this machine");
  if (ec == net::error::access_denied) bad("--port " + std::to_string(port) + ": permission denied (ports below 1024 need privileges)");
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) bad("--host " + host + " --port " + std::to_string(port) + ": cannot listen there (" + ec.message() + ")");
}

// the same answer whatever the first differing byte: the key's bytes do not leak through timing
bool same_secret(std::string_view a, std::string_view b) {
  unsigned diff = a.size() != b.size();
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) diff |= unsigned(a[i] ^ b[i]);
  return diff == 0;
}

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

class Session;

}  // namespace

struct Server::Impl {
  Impl(Engine& e, const ObservationMap& m, ServerOptions options) : engine(e), map(m), o(std::move(options)) {}
  void accept();

  Engine& engine;
  const ObservationMap& map;
  const ServerOptions o;
  // before the io_context: sessions that its destructor frees still count themselves out
  std::atomic<int> live{0};
  std::atomic<int64_t> connections{0}, answered{0}, refused{0};
  std::atomic<bool> stopping{false};
  std::mutex mu;
  std::condition_variable cv;
  int running = 0;                                // connection threads still running (under mu)
  bool stopped = false;                           // under mu
  std::vector<std::weak_ptr<Session>> sessions;  // under mu
  int port = 0;
  net::io_context ioc;
  net::strand<net::io_context::executor_type> accept_strand{net::make_strand(ioc)};
  tcp::acceptor acceptor{accept_strand};
  net::steady_timer retry{accept_strand};
  std::optional<net::executor_work_guard<net::io_context::executor_type>> guard;
  std::vector<std::thread> threads;
};

namespace {

// One client: an HTTP request (/healthz, or the websocket upgrade), then, upgraded, the
// metadata frame and one request at a time. Every handler runs on the connection's strand.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(Server::Impl& server, tcp::socket socket) : s_(server), stream_(std::move(socket)), executor_(stream_.get_executor()) {
    ++s_.live;
  }
  ~Session() { --s_.live; }

  void start() {
    net::dispatch(executor_, [self = shared_from_this()] { self->read_request(); });
  }
  // Server::stop: an idle connection closes now, a busy one after its reply (read_message)
  void stop() {
    net::post(executor_, [self = shared_from_this()] {
      beast::error_code ignored;
      if (self->state_ == State::kHttp) self->stream_.socket().close(ignored);
      else if (self->state_ == State::kIdle) self->close(websocket::close_code::going_away, "the server is stopping");
    });
  }

 private:
  enum class State { kHttp, kIdle, kBusy, kClosing };

  void read_request() {
    parser_.emplace();
    parser_->header_limit(16 * 1024);
    parser_->body_limit(16 * 1024);
    stream_.expires_after(std::chrono::seconds(30));
    http::async_read(stream_, buffer_, *parser_, [self = shared_from_this()](beast::error_code ec, size_t) { self->on_request(ec); });
  }

  void on_request(beast::error_code ec) {
    if (ec) return;  // closed, timed out or not HTTP: the connection ends
    request_ = parser_->release();
    if (websocket::is_upgrade(request_)) {
      if (s_.stopping) return respond(http::status::service_unavailable, "the server is stopping\n");
      const auto auth = request_[http::field::authorization];
      if (!s_.o.api_key.empty() && !same_secret(std::string_view(auth.data(), auth.size()), "Api-Key " + s_.o.api_key))
        return respond(http::status::unauthorized, "missing or wrong API key (send the header Authorization: Api-Key KEY)\n");
      if (s_.live > s_.o.max_connections)
        return respond(http::status::service_unavailable,
                       "too many connections (--max_connections " + std::to_string(s_.o.max_connections) + ")\n");
      return upgrade();
    }
    if (request_.target() == "/healthz" && (request_.method() == http::verb::get || request_.method() == http::verb::head))
      return respond(http::status::ok, "OK\n");
    respond(http::status::not_found, "ember serve answers websocket connections (openpi's protocol) and GET /healthz\n");
  }

  void respond(http::status status, const std::string& body) {
    response_ = http::response<http::string_body>(status, request_.version());
    response_.set(http::field::server, "ember serve");
    response_.set(http::field::content_type, "text/plain");
    response_.keep_alive(false);
    if (request_.method() != http::verb::head) response_.body() = body;
    response_.prepare_payload();
    http::async_write(stream_, response_, [self = shared_from_this()](beast::error_code, size_t) {
      beast::error_code ignored;
      self->stream_.socket().shutdown(tcp::socket::shutdown_send, ignored);
    });
  }

  void upgrade() {
    state_ = State::kBusy;
    stream_.expires_never();
    ws_.emplace(std::move(stream_));
    // the handshake within 30 s; a peer silent for 60 s (it answers pings) is cut
    ws_->set_option(websocket::stream_base::timeout{std::chrono::seconds(30), std::chrono::seconds(60), true});
    websocket::permessage_deflate no_compression;
    no_compression.server_enable = no_compression.client_enable = false;
    ws_->set_option(no_compression);
    ws_->set_option(websocket::stream_base::decorator([](websocket::response_type& res) { res.set(http::field::server, "ember serve"); }));
    ws_->read_message_max(s_.o.max_message_bytes);  // refused from the frame header, before the payload
    ws_->auto_fragment(false);
    ws_->async_accept(request_, [self = shared_from_this()](beast::error_code ec) {
      if (ec) return;
      ++self->s_.connections;
      self->write(true, self->s_.o.metadata, [self] { self->read_message(); });
    });
  }

  template <typename Next>
  void write(bool binary, std::string bytes, Next next) {
    out_ = std::move(bytes);
    ws_->binary(binary);
    ws_->async_write(net::buffer(out_), [self = shared_from_this(), next](beast::error_code ec, size_t) {
      if (!ec) next();
    });
  }

  void read_message() {
    if (s_.stopping) return close(websocket::close_code::going_away, "the server is stopping");
    state_ = State::kIdle;
    buffer_.consume(buffer_.size());
    if (buffer_.capacity() > (size_t(1) << 20)) buffer_.shrink_to_fit();  // an idle connection keeps little
    ws_->async_read(buffer_, [self = shared_from_this()](beast::error_code ec, size_t) { self->on_message(ec); });
  }

  void on_message(beast::error_code ec) {
    if (ec) return;  // closed by the client or by stop(), too large (closed 1009 by Beast), or broken
    state_ = State::kBusy;
    started_ = Clock::now();
    if (!ws_->got_binary())
      return fail("expected a binary frame holding a msgpack observation (openpi's protocol), got a text frame", true);
    const auto data = buffer_.data();
    try {
      Field message = decode(std::string_view(static_cast<const char*>(data.data()), data.size()));
      if (const Field* ctrl = message.kind == Field::Kind::kMap ? message.find("__ctrl__") : nullptr) return acknowledge(*ctrl);
      auto request = s_.map.request(message);
      const uint64_t seed = s_.o.seed + requests_++;
      s_.engine.submit(std::move(request), seed, [self = shared_from_this()](Reply r) {
        net::post(self->executor_, [self, r = std::move(r)]() mutable { self->on_reply(std::move(r)); });
      });
    } catch (const Error& e) {
      fail(e.what(), e.is_user_error());
    } catch (const std::exception& e) {
      fail(std::string("internal error: ") + e.what(), false);
    }
  }

  // openpi's control messages (episode_start, episode_end): acknowledged, nothing else
  void acknowledge(const Field& ctrl) {
    const bool known = ctrl.kind == Field::Kind::kString && (ctrl.bytes == "episode_start" || ctrl.bytes == "episode_end");
    Field ack = Field::map();
    ack.set("__ack__", Field::text(known ? ctrl.bytes : "ignored"));
    write(true, encode(ack), [self = shared_from_this()] { self->read_message(); });
  }

  void on_reply(Reply r) {
    if (!r.error.empty()) return fail(r.error, false);
    ++s_.answered;
    Field reply = Field::map();
    std::string bytes(reinterpret_cast<const char*>(r.actions.data()), r.actions.size() * sizeof(float));
    reply.set("actions", Field::ndarray("<f4", {r.rows, r.cols}, std::move(bytes)));
    Field timing = Field::map();
    timing.set("infer_ms", Field::real(ms_since(started_)));  // message read -> chunk ready
    if (prev_total_ms_ >= 0) timing.set("prev_total_ms", Field::real(prev_total_ms_));
    timing.set("batch_ms", Field::real(r.batch_ms));
    timing.set("batch_size", Field::whole(r.batch_size));
    reply.set("server_timing", std::move(timing));
    write(true, encode(reply), [self = shared_from_this()] {
      self->prev_total_ms_ = ms_since(self->started_);
      self->read_message();
    });
  }

  // the message in a text frame, then the close handshake (1008: the client's fault; 1011: ours)
  void fail(const std::string& message, bool clients_fault) {
    ++s_.refused;
    state_ = State::kClosing;
    const auto code = clients_fault ? websocket::close_code::policy_error : websocket::close_code::internal_error;
    write(false, message, [self = shared_from_this(), code] { self->close(code, "see the previous frame"); });
  }

  void close(websocket::close_code code, const char* reason) {
    state_ = State::kClosing;
    ws_->async_close(websocket::close_reason(code, reason), [self = shared_from_this()](beast::error_code) {});
  }

  Server::Impl& s_;
  beast::tcp_stream stream_;  // until the upgrade moves it into ws_
  beast::tcp_stream::executor_type executor_;
  std::optional<websocket::stream<beast::tcp_stream>> ws_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  http::request<http::string_body> request_;
  http::response<http::string_body> response_;
  std::string out_;  // the frame being written
  State state_ = State::kHttp;
  uint64_t requests_ = 0;
  double prev_total_ms_ = -1;  // openpi's: the previous request's time from its message to its reply written
  Clock::time_point started_;
};

}  // namespace

void Server::Impl::accept() {
  acceptor.async_accept(net::make_strand(ioc), [this](beast::error_code ec, tcp::socket socket) {
    if (!acceptor.is_open()) return;  // stop()
    if (ec) {  // e.g. out of file descriptors: try again shortly rather than spin
      retry.expires_after(std::chrono::milliseconds(100));
      retry.async_wait([this](beast::error_code e) {
        if (!e) accept();
      });
      return;
    }
    // no Nagle: a reply's frames go out at once, not after the client's delayed ACK (40 ms on
    // Linux: a reply written in two pieces waited for it, 72 ms a request instead of 30)
    beast::error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);
    auto session = std::make_shared<Session>(*this, std::move(socket));
    {
      std::lock_guard<std::mutex> lock(mu);
      std::erase_if(sessions, [](const std::weak_ptr<Session>& w) { return w.expired(); });
      sessions.push_back(session);
    }
    session->start();
    accept();
  });
}

Server::Server(Engine& engine, const ObservationMap& map, ServerOptions options)
    : impl_(std::make_unique<Impl>(engine, map, std::move(options))) {
  Impl& s = *impl_;
  if (s.o.threads < 1) throw Error(ErrorKind::kInternal, "serve::Server: threads < 1");
  listen_on(s.acceptor, s.ioc, s.o.host, s.o.port);
  s.port = s.acceptor.local_endpoint().port();
  s.accept();
  s.guard.emplace(net::make_work_guard(s.ioc));
  s.running = s.o.threads;
  for (int i = 0; i < s.o.threads; ++i)
    s.threads.emplace_back([&s] {
      s.ioc.run();
      std::lock_guard<std::mutex> lock(s.mu);
      --s.running;
      s.cv.notify_all();
    });
}

Server::~Server() { stop(); }

int Server::port() const { return impl_->port; }
int64_t Server::connections() const { return impl_->connections.load(); }
int64_t Server::answered() const { return impl_->answered.load(); }
int64_t Server::refused() const { return impl_->refused.load(); }

void Server::stop(double drain_s) {
  Impl& s = *impl_;
  std::vector<std::shared_ptr<Session>> sessions;
  {
    std::lock_guard<std::mutex> lock(s.mu);
    if (s.stopped) return;
    s.stopped = true;
    s.stopping = true;
    for (const auto& w : s.sessions)
      if (auto session = w.lock()) sessions.push_back(std::move(session));
  }
  net::post(s.accept_strand, [&s] {
    beast::error_code ignored;
    s.acceptor.close(ignored);
    s.retry.cancel();
  });
  for (auto& session : sessions) session->stop();
  sessions.clear();
  s.engine.stop();  // answers what is queued: those replies go out, then their connections close
  s.guard.reset();
  {
    std::unique_lock<std::mutex> lock(s.mu);
    if (!s.cv.wait_for(lock, std::chrono::duration<double>(drain_s), [&] { return s.running == 0; })) s.ioc.stop();
  }
  for (auto& t : s.threads) t.join();
  s.threads.clear();
}

void check_listen_address(const std::string& host, int port) {
  net::io_context ioc;
  tcp::acceptor acceptor(ioc);
  listen_on(acceptor, ioc, host, port);
}

}  // namespace ember::serve
